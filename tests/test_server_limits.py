"""Hostile input, bounded work: every limit of server/api/settings.py `Limits` is checked before
work starts and answered with a 4xx in the API's own shape naming the limit; compiles run off
the event loop within a time budget; message shapes are validated as each API does."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

import cengine
from server.api.limits import json_depth
from server.api.settings import Limits
from fuzz_bodies import MSGS, base_body
from server_harness import LiveServer


ENDPOINTS = [("openai", "/v1/chat/completions"), ("openai", "/v1/completions"),
             ("openai", "/v1/responses"), ("anthropic", "/v1/messages"),
             ("ollama", "/api/chat"), ("ollama", "/api/generate")]
CHAT = [("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages"), ("ollama", "/api/chat")]


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=2)
    yield s
    s.stop()


def message_of(api, r):
    """The error message, checking the body is exactly that API's error shape."""
    body = r.json()
    if api == "openai":
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
        return body["error"]["message"]
    if api == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        return body["error"]["message"]
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]


def with_constraint(api, path, model, field, value):
    b = base_body(path, model)
    if api == "ollama":
        b["options"][field] = value
    else:
        b[field] = value
    return b


def deep_schema_text(depth):
    """A schema nesting `depth` arrays as JSON text (json.dumps would recurse)."""
    return '{"type": "array", "items": ' * depth + '{"type": "string"}' + "}" * depth


def nested(depth, leaf):
    v = leaf
    for _ in range(depth):
        v = {"type": "array", "items": v}
    return v


@pytest.mark.parametrize("text, depth", [
    (b"{}", 1), (b"[]", 1), (b"1", 0), (b'"[[[["', 0), (b'{"a": [1, {"b": []}]}', 4),
    (b'["\\"[[", [[]]]', 3), (b'"\\\\" [[ ]]', 2), (b"[" * 5000 + b"]" * 5000, 5000),
    (b'{"a": "\xc3\xa9[{"}', 1), (b'["unterminated [[[', 1),
])
def test_json_depth_scan(text, depth):
    assert json_depth(text) == depth


def test_compile_budget_defaults_are_the_engines():
    # the server restates the engine's defaults (it may use only cengine's public names);
    # this keeps the two from drifting apart
    from cengine import automaton
    limits = Limits()
    assert limits.max_compile_work == automaton.MAX_COMPILE_WORK
    assert limits.max_dfa_growth == automaton.MAX_DFA_GROWTH


def test_json_depth_scan_has_no_recursion_limit():
    assert json_depth(b"[" * 200_000 + b"]" * 200_000) == 200_000


@pytest.mark.parametrize("api, path", ENDPOINTS)
def test_deep_body_is_a_400_naming_max_json_depth(live, api, path):
    b = json.dumps(base_body(path, live.model_name))
    raw = b[:-1] + ', "metadata": ' + deep_schema_text(5000) + "}"
    r = httpx.post(live.base + path, content=raw.encode(), timeout=60,
                   headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert "max_json_depth" in message_of(api, r)


# (field, value, limit named) for each API's constraint fields, all over the defaults
BOMBS = [
    ("llamay_schema", {"enum": [f"v{i}" for i in range(300_000)]}, "max_enum_values"),
    ("llamay_schema", deep_schema_text(5000), "max_json_depth"),
    ("llamay_schema", nested(100, {"type": "string"}), "max_schema_depth"),
    ("llamay_schema", {"type": "object", "properties": {f"p{i}": {"type": "string"}
                                                        for i in range(12_000)}},
     "max_schema_nodes"),
    ("llamay_schema", {"type": "string", "pattern": "a" * 5000}, "max_regex_chars"),
    ("llamay_regex", "a" * 5000, "max_regex_chars"),
    ("llamay_grammar", 'root ::= "' + "a" * 70_000 + '"', "max_grammar_chars"),
    ("llamay_lexicon", [f"w{i}" for i in range(5000)], "max_enum_values"),
]


@pytest.mark.parametrize("field, value, limit", BOMBS, ids=lambda x: str(x)[:20])
@pytest.mark.parametrize("api, path", CHAT)
def test_constraint_bombs_name_their_limit(live, api, path, field, value, limit):
    r = httpx.post(live.base + path, json=with_constraint(api, path, live.model_name, field,
                                                          value), timeout=60)
    assert r.status_code == 400, r.text
    msg = message_of(api, r)
    assert limit in msg
    if api == "openai":
        assert r.json()["error"]["code"] == "limit_exceeded"
        assert r.json()["error"]["param"] == field


@pytest.mark.parametrize("api, path, body_extra, limit, param", [
    ("openai", "/v1/chat/completions",
     {"response_format": {"type": "json_schema", "json_schema": {
         "name": "x", "schema": {"enum": list(range(5000))}}}}, "max_enum_values",
     "response_format"),
    ("openai", "/v1/responses", {"text": {"format": {"type": "json_schema", "name": "x",
                                                     "schema": nested(80, {})}}},
     "max_schema_depth", "text.format"),
    ("ollama", "/api/chat", {"format": {"enum": list(range(5000))}}, "max_enum_values", None),
    ("openai", "/v1/chat/completions",
     {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
         "type": "object", "properties": {"a": {"enum": list(range(5000))}}}}}]},
     "max_enum_values", "tools[0].function.parameters"),
    ("anthropic", "/v1/messages",
     {"tools": [{"name": "f", "input_schema": nested(80, {})}]}, "max_schema_depth", None),
    ("openai", "/v1/chat/completions",
     {"tools": [{"type": "function", "function": {"name": f"f{i}"}} for i in range(200)]},
     "max_tools", "tools"),
    ("openai", "/v1/chat/completions", {"messages": MSGS * 1100}, "max_messages", "messages"),
    ("openai", "/v1/responses", {"input": MSGS * 1100}, "max_messages", "input"),
    ("anthropic", "/v1/messages", {"messages": MSGS * 1100}, "max_messages", None),
    ("ollama", "/api/chat", {"messages": MSGS * 1100}, "max_messages", None),
    ("openai", "/v1/chat/completions", {"max_tokens": 100_000}, "max_tokens_limit", "max_tokens"),
    ("openai", "/v1/chat/completions", {"max_completion_tokens": 10**9}, "max_tokens_limit",
     "max_completion_tokens"),
    ("openai", "/v1/completions", {"max_tokens": 100_000}, "max_tokens_limit", "max_tokens"),
    ("openai", "/v1/responses", {"max_output_tokens": 100_000}, "max_tokens_limit",
     "max_output_tokens"),
    ("anthropic", "/v1/messages", {"max_tokens": 100_000}, "max_tokens_limit", None),
    ("ollama", "/api/generate", {"options": {"num_predict": 100_000}}, "max_tokens_limit", None),
])
def test_request_limits(live, api, path, body_extra, limit, param):
    b = {**base_body(path, live.model_name), **body_extra}
    r = httpx.post(live.base + path, json=b, timeout=60)
    assert r.status_code == 400, r.text
    assert limit in message_of(api, r)
    if param is not None:
        assert r.json()["error"]["param"] == param


def test_defaults_leave_room_for_ordinary_requests(live):
    """Just under each limit is served: the limits refuse bombs, not real requests."""
    b = with_constraint("openai", "/v1/chat/completions", live.model_name, "llamay_schema",
                        {"enum": [f"v{i}" for i in range(1000)]})
    b["messages"] = MSGS * 50
    b["max_tokens"] = Limits().max_tokens_limit   # allowed (the fixture stops far earlier)
    b["llamay_schema"] = {"enum": [f"v{i}" for i in range(1000)]}
    r = httpx.post(live.base + "/v1/chat/completions", json=b, timeout=120)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("api, path", ENDPOINTS)
@pytest.mark.parametrize("chunked", [False, True])
def test_body_over_max_body_bytes_is_413(live, api, path, chunked):
    raw = b'{"prompt": "' + b"a" * (10 * 1024 * 1024) + b'"}'
    content = (raw[i:i + 65536] for i in range(0, len(raw), 65536)) if chunked else raw
    try:
        r = httpx.post(live.base + path, content=content, timeout=60,
                       headers={"content-type": "application/json"})
    except httpx.WriteError:
        pytest.fail("the server closed the connection without answering")
    assert r.status_code == 413, r.text
    assert "max_body_bytes" in message_of(api, r)
    assert httpx.get(live.base + "/health", timeout=10).status_code == 200


def test_limits_are_settings(fixture_model_path):
    """A lowered limit applies (the same request passes on the default server)."""
    s = LiveServer(limits=Limits(max_messages=2, max_enum_values=3))
    try:
        r = httpx.post(s.base + "/v1/chat/completions", timeout=60,
                       json={"messages": MSGS * 3, "max_tokens": 1})
        assert r.status_code == 400 and "max_messages is 2" in message_of("openai", r)
        r = httpx.post(s.base + "/api/chat", timeout=60,
                       json={"model": s.model_name, "messages": MSGS, "stream": False,
                             "format": {"enum": [1, 2, 3, 4]}})
        assert r.status_code == 400 and "max_enum_values is 3" in message_of("ollama", r)
    finally:
        s.stop()


@pytest.mark.parametrize("name, text, expect", [
    ("max_messages", "10", 10), ("compile_timeout_seconds", "0.5", 0.5),
])
def test_limit_from_text(name, text, expect):
    assert getattr(Limits().with_value(name, text), name) == expect


@pytest.mark.parametrize("name, text", [("max_wizards", "1"), ("max_messages", "-1"),
                                        ("max_messages", "many")])
def test_limit_from_text_refused(name, text):
    with pytest.raises(ValueError):
        Limits().with_value(name, text)


# --- message shapes ---------------------------------------------------------------------------

@pytest.mark.parametrize("api, path, messages, status, needle", [
    ("openai", "/v1/chat/completions", [{"role": "user"}], 400, "messages[0].content"),
    ("openai", "/v1/chat/completions", [{"role": "system"}, *MSGS], 400, "messages[0].content"),
    ("openai", "/v1/chat/completions", [*MSGS, {"role": "assistant"}], 400,
     "messages[1].content"),
    ("openai", "/v1/chat/completions", [*MSGS, {"role": "tool", "content": "x"}], 400,
     "tool_call_id"),
    ("openai", "/v1/chat/completions",
     [*MSGS, {"role": "assistant", "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "ok"}], 200, None),
    ("anthropic", "/v1/messages", [{"role": "user"}], 400, "messages[0]"),
    ("anthropic", "/v1/messages", [{"role": "user", "content": None}], 400, "messages[0]"),
    ("anthropic", "/v1/messages", [{"content": "hi"}], 400, "role"),
    ("ollama", "/api/chat", [{"role": "user"}], 200, None),        # as Ollama: content ""
    ("ollama", "/api/chat", [{"role": "user", "content": 5}], 400, "content"),
    ("ollama", "/api/chat", [{"role": "user", "content": False}], 400, "content"),
    ("ollama", "/api/chat", [{"content": "hi"}], 400, "role"),
])
def test_message_shapes(live, api, path, messages, status, needle):
    b = {**base_body(path, live.model_name), "messages": messages}
    r = httpx.post(live.base + path, json=b, timeout=60)
    assert r.status_code == status, r.text
    if needle:
        assert needle in message_of(api, r)


def test_responses_message_item_needs_content(live):
    r = httpx.post(live.base + "/v1/responses", timeout=60,
                   json={"input": [{"type": "message", "role": "user"}]})
    assert r.status_code == 400 and "input[0].content" in message_of("openai", r)


def test_openai_client_user_message_without_content(live):
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        live.openai().chat.completions.create(model=live.model_name, messages=[{"role": "user"}])
    assert e.value.status_code == 400 and e.value.body["param"] == "messages"


# --- compile time budget ------------------------------------------------------------------------

@pytest.fixture
def slow_regex(monkeypatch):
    """compile_regex that takes 3 s (sleeping, so the GIL is free as in a Python compile)."""
    real = cengine.compile_regex
    gate = threading.Event()

    def slow(pattern):
        gate.wait(3)
        return real(pattern)
    monkeypatch.setattr(cengine, "compile_regex", slow)
    yield
    gate.set()


def test_compile_past_its_budget_is_a_4xx_and_the_server_stays_responsive(slow_regex):
    s = LiveServer(limits=Limits(compile_timeout_seconds=0.5, compile_threads=2))
    try:
        results = {}

        def slow_request():
            results["slow"] = httpx.post(s.base + "/v1/chat/completions", timeout=60, json={
                "messages": MSGS, "max_tokens": 1, "llamay_regex": "[ab]+"})
        t = threading.Thread(target=slow_request)
        t.start()
        # while the compile sleeps on its thread, other requests are served
        health = httpx.get(s.base + "/health", timeout=10)
        plain = httpx.post(s.base + "/v1/chat/completions", timeout=60,
                           json={"messages": MSGS, "max_tokens": 1})
        t.join(60)
        assert health.status_code == 200 and plain.status_code == 200
        r = results["slow"]
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["code"] == "compile_timeout" and "compile_timeout_seconds" in err["message"]
    finally:
        s.stop()


def test_no_free_compile_thread_is_a_503_with_retry_after(slow_regex):
    s = LiveServer(limits=Limits(compile_timeout_seconds=0.5, compile_threads=1))
    try:
        body = {"messages": MSGS, "max_tokens": 1, "llamay_regex": "[ab]+"}
        first = httpx.post(s.base + "/v1/chat/completions", json=body, timeout=60)
        # the first compile still holds the one thread (it sleeps 3 s, the budget is 0.5 s)
        second = httpx.post(s.base + "/api/chat", timeout=60, json={
            "model": s.model_name, "messages": MSGS, "stream": False,
            "options": {"llamay_regex": "[ab]+", "num_predict": 1}})
        assert first.status_code == 400 and first.json()["error"]["code"] == "compile_timeout"
        assert second.status_code == 503, second.text
        assert second.headers["retry-after"] == "1"
        assert "compile_timeout_seconds" in message_of("ollama", second)
    finally:
        s.stop()


def test_engine_compile_on_a_thread_lets_other_threads_run():
    """The subset construction (Cython, holding the GIL) hands the GIL over every 50,000 work
    units: while a costly compile runs on a thread, this thread keeps waking up. (Without the
    hand-over it cannot run at all until the compile returns.)"""
    done = threading.Event()

    def costly():
        try:
            # without the growth check, runs into the compile-work cap (about a second)
            cengine.compile_regex("(a|b)*a(a|b){20}",
                                  budget=cengine.CompileBudget(max_dfa_growth=0))
        except cengine.CompileError:
            pass
        finally:
            done.set()
    t = threading.Thread(target=costly)
    wakeups = 0
    t.start()
    while not done.is_set():
        threading.Event().wait(0.002)
        wakeups += 1
    t.join()
    # without the hand-over this thread waits out the whole Cython call: at most the wake-up
    # before the compile took the GIL and the one after it returned. Several wake-ups prove the
    # hand-over without betting on how fast this machine compiles (the count under load: 16)
    assert wakeups >= 5
