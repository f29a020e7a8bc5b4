"""Errors in each API's own shape, by exception class; never a 500 or a stack trace; the
bounded queue answers 429 / 503 with Retry-After; a client that leaves stops its generation."""
from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")

from server.api.errors import InvalidRequest, to_api_error  # noqa: E402
from server.tools import ToolFormatError  # noqa: E402
from server_harness import LiveServer  # noqa: E402

MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def live():
    # tiny default budget: fuzzed bodies that happen to be valid generate little
    # one request decodes at a time: one held job and one waiting fill the server
    s = LiveServer(max_queue=1, default_max_tokens=4, parallel=1)
    yield s
    s.stop()


def _shape(api, body):
    if api == "openai":
        e = body["error"]
        assert set(e) == {"message", "type", "param", "code"} and isinstance(e["message"], str)
        return e["message"]
    if api == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        return body["error"]["message"]
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]


ENDPOINTS = [("openai", "/v1/chat/completions"), ("openai", "/v1/completions"),
             ("openai", "/v1/responses"), ("anthropic", "/v1/messages"),
             ("ollama", "/api/chat"), ("ollama", "/api/generate")]


@pytest.mark.parametrize("api, path", ENDPOINTS)
@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"", b"\xff\xfe", b'"text"'])
def test_malformed_bodies(live, api, path, raw):
    r = httpx.post(live.base + path, content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400
    msg = _shape(api, r.json())
    assert "Traceback" not in msg


def _body(api, path, model, **extra):
    if path == "/v1/chat/completions":
        b = {"model": model, "messages": MSGS, "max_tokens": 2}
    elif path == "/v1/completions":
        b = {"model": model, "prompt": "hi", "max_tokens": 2}
    elif path == "/v1/responses":
        b = {"model": model, "input": "hi", "max_output_tokens": 2}
    elif path == "/v1/messages":
        b = {"model": model, "messages": MSGS, "max_tokens": 2}
    elif path == "/api/chat":
        b = {"model": model, "messages": MSGS, "stream": False, "options": {"num_predict": 2}}
    else:
        b = {"model": model, "prompt": "hi", "stream": False, "options": {"num_predict": 2}}
    b.update(extra)
    return b


@pytest.mark.parametrize("api, path", ENDPOINTS)
def test_unknown_model_404(live, api, path):
    r = httpx.post(live.base + path, json=_body(api, path, "gpt-17-ultra"))
    assert r.status_code == 404
    assert "gpt-17-ultra" in _shape(api, r.json())


@pytest.mark.parametrize("api, path", ENDPOINTS)
def test_valid_minimal_bodies_work(live, api, path):
    r = httpx.post(live.base + path, json=_body(api, path, live.model_name), timeout=60)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("api, path, extra, needle", [
    ("openai", "/v1/chat/completions", {"max_tokens": "ten"}, "max_tokens"),
    ("openai", "/v1/chat/completions", {"temperature": 7}, "temperature"),
    ("openai", "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, "role"),
    ("openai", "/v1/chat/completions", {"n": 3}, "n=1"),
    ("openai", "/v1/chat/completions", {"stream": "yes"}, "stream"),
    ("openai", "/v1/chat/completions", {"response_format": {"type": "yaml"}}, "response_format"),
    ("openai", "/v1/chat/completions", {"tool_choice": "required"}, "tool"),
    ("openai", "/v1/chat/completions",
     {"tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": {"type": "function", "function": {"name": "g"}}}, "'g'"),
    ("openai", "/v1/chat/completions", {"llamay_schema": {"type": "object"}, "llamay_regex": "a"},
     "at most one"),
    ("openai", "/v1/chat/completions", {"llamay_choice_logprobs": True}, "alternatives"),
    # a constraint beside tools is allowed (answer in it, or call); two constraints are not
    ("openai", "/v1/chat/completions", {"tools": [{"type": "function", "function": {"name": "f"}}],
                                        "response_format": {"type": "json_object"},
                                        "guided_regex": "a+"}, "response_format and guided_regex"),
    ("ollama", "/api/chat", {"tools": [{"type": "function", "function": {"name": "f"}}],
                             "format": "json", "options": {"llamay_regex": "a"}},
     "format and options.llamay_regex"),
    ("openai", "/v1/completions", {"prompt": {"a": 1}}, "prompt"),
    ("openai", "/v1/responses", {"input": [{"type": "computer_call"}]}, "computer_call"),
    ("anthropic", "/v1/messages", {"max_tokens": None}, "max_tokens"),
    ("anthropic", "/v1/messages", {"tool_choice": {"type": "tool", "name": "nope"}}, "nope"),
    ("anthropic", "/v1/messages", {"messages": [{"role": "user", "content": [{"type": "image"}]}]},
     "image"),
    ("ollama", "/api/chat", {"format": 42}, "format"),
    ("ollama", "/api/chat", {"options": {"num_predict": "many"}}, "num_predict"),
    ("ollama", "/api/generate", {"options": {"temperature": "hot"}}, "temperature"),
])
def test_wrong_fields_400(live, api, path, extra, needle):
    r = httpx.post(live.base + path, json=_body(api, path, live.model_name, **extra))
    assert r.status_code == 400, r.text
    assert needle in _shape(api, r.json())


@pytest.mark.parametrize("param", ["tools", "tool_choice"])
def test_tool_format_errors_map_to_400_naming_the_field(param):
    # the tools layer raises its own error; the API layer keeps its field in the 400
    err = to_api_error(ToolFormatError("bad tools", param=param))
    assert isinstance(err, InvalidRequest)
    assert (err.status, err.param, err.message) == (400, param, "bad tools")


REFUSED = [
    ("llamay_schema", {"type": "object", "patternProperties": {
        p: {"type": t} for p, t in (("a", "string"), ("b", "integer"), ("c", "null"),
                                    ("d", "boolean"), ("e", "array"))}},
     "patternProperties"),      # five schemas one name can meet together: refused
    ("llamay_schema", {"type": "array", "uniqueItems": True}, "uniqueItems"),
    ("llamay_grammar", "root ::= item\nitem ::= (", "line 2"),
    ("llamay_grammar", "root ::= missing", "missing"),
    ("llamay_regex", "(a", "column 1"),
]


@pytest.mark.parametrize("field, value, needle", REFUSED)
@pytest.mark.parametrize("api, path", [("openai", "/v1/chat/completions"),
                                       ("anthropic", "/v1/messages"), ("ollama", "/api/chat")])
def test_refused_constraint_400_names_keyword_or_rule(live, api, path, field, value, needle):
    if api == "ollama":
        body = _body(api, path, live.model_name, options={field: value, "num_predict": 2})
    else:
        body = _body(api, path, live.model_name, **{field: value})
    r = httpx.post(live.base + path, json=body)
    assert r.status_code == 400, r.text
    assert needle in _shape(api, r.json())


def test_openai_client_sees_typed_errors(live):
    c = live.openai()
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=2,
                                  response_format={"type": "json_schema", "json_schema": {
                                      "name": "x",
                                      "schema": {"type": "array", "uniqueItems": True}}})
    assert e.value.body["param"] == "uniqueItems"
    with pytest.raises(openai.NotFoundError):
        c.chat.completions.create(model="nope", messages=MSGS)


def test_anthropic_and_ollama_clients_see_typed_errors(live):
    a = live.anthropic()
    with pytest.raises(anthropic.BadRequestError):
        a.messages.create(model=live.model_name, max_tokens=2, messages=MSGS,
                          extra_body={"llamay_regex": "(a"})
    with pytest.raises(anthropic.NotFoundError):
        a.messages.create(model="nope", max_tokens=2, messages=MSGS)
    o = live.ollama()
    with pytest.raises(ollama.ResponseError) as e:
        o.chat(model=live.model_name, messages=MSGS, options={"llamay_grammar": "root ::= ("})
    assert e.value.status_code == 400


@pytest.mark.parametrize("raw", [
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    b'{"messages": [{"role": "user", "content": "hi"}], "top_p": Infinity}'])
def test_non_finite_numbers_400(live, raw):
    r = httpx.post(live.base + "/v1/chat/completions", content=raw)
    assert r.status_code == 400 and "finite" in _shape("openai", r.json())


def test_unknown_route_and_method(live):
    r = httpx.get(live.base + "/v1/nothing")
    assert r.status_code == 404 and _shape("openai", r.json())
    r = httpx.get(live.base + "/api/chat")
    assert r.status_code == 405 and _shape("ollama", r.json())


_json = st.recursive(st.none() | st.booleans() | st.integers(-3, 10**6)
                     | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                     max_leaves=8)
_fields = st.sampled_from(["model", "messages", "prompt", "input", "max_tokens", "stream", "tools",
                           "tool_choice", "response_format", "format", "options", "temperature",
                           "stop", "llamay_schema", "llamay_grammar", "llamay_lexicon", "system",
                           "instructions", "text", "logprobs", "top_logprobs", "n", "seed"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ENDPOINTS), st.dictionaries(_fields, _json, max_size=5), st.booleans())
def test_fuzzed_bodies_never_500(live, endpoint, body, keep_valid_base):
    api, path = endpoint
    if keep_valid_base:
        body = {**_body(api, path, live.model_name), **body}
    r = httpx.post(live.base + path, json=body, timeout=60)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert "Traceback" not in _shape(api, r.json())


def _block_scheduler(live):
    """Occupy the worker with a job that waits on an event, and fill the one queue place."""
    loop = asyncio.new_event_loop()
    gate, started = threading.Event(), threading.Event()

    def hold(model, cancel):
        started.set()
        gate.wait(60)
        return iter(())
    live.state.scheduler.submit(hold, loop=loop)
    assert started.wait(60)
    live.state.scheduler.submit(lambda m, c: iter(()), loop=loop)
    return gate, loop


def test_full_queue_429_and_503(live):
    gate, loop = _block_scheduler(live)
    try:
        for api, path in ENDPOINTS:
            r = httpx.post(live.base + path, json=_body(api, path, live.model_name))
            assert r.status_code == (503 if api == "ollama" else 429), (path, r.text)
            assert r.headers["retry-after"] == "1"
            _shape(api, r.json())
        with pytest.raises(openai.RateLimitError):
            live.openai().chat.completions.create(
                model=live.model_name, messages=MSGS)
    finally:
        gate.set()
    # once the queue drains, requests are served again
    r = httpx.post(live.base + "/v1/chat/completions",
                   json=_body("openai", "/v1/chat/completions", live.model_name), timeout=60)
    assert r.status_code == 200
    loop.close()


class _Recorder:
    """Wraps the model to record how each generation finished.

    After its first few events it waits (up to 30 s) for the job's cancel event, as a slow
    model would: the tiny fixture model can otherwise fill its whole budget before a loaded
    machine's event loop has read the disconnect, and the test would race instead of checking
    that a disconnect reaches the generation."""

    def __init__(self, model, wait_for_cancel_after: int = 3):
        self.model = model
        self.reasons = []
        self.done = threading.Event()
        self.wait_after = wait_for_cancel_after

    def __getattr__(self, name):
        return getattr(self.model, name)

    def generate(self, *a, **kw):
        cancel = kw.get("cancel")
        for n, ev in enumerate(self.model.generate(*a, **kw)):
            if hasattr(ev, "reason"):
                self.reasons.append(ev.reason)
                self.done.set()
            yield ev
            if n == self.wait_after and cancel is not None:
                cancel.wait(30)


def test_disconnect_mid_stream_cancels_generation(live):
    sched = live.state.scheduler
    rec = _Recorder(sched.model)
    sched.model = rec
    try:
        # 4000 letters cannot fit the 2048-token context: only a cancel or the context ends it
        body = {"model": live.model_name, "messages": MSGS, "max_tokens": None, "stream": True,
                "temperature": 1.0, "llamay_regex": "[a-z]{4000}"}
        with httpx.Client(timeout=60) as c:
            with c.stream("POST", live.base + "/v1/chat/completions", json=body) as r:
                it = r.iter_lines()
                assert next(it).startswith("data: ")
        assert rec.done.wait(120)
        assert rec.reasons == ["cancelled"]
    finally:
        sched.model = rec.model


def test_disconnect_while_queued_drops_the_request(live):
    """A non-streamed request whose client leaves before its turn is never generated."""
    sched = live.state.scheduler
    loop = asyncio.new_event_loop()
    gate, started = threading.Event(), threading.Event()

    def hold(model, cancel):
        started.set()
        gate.wait(60)
        return iter(())
    sched.submit(hold, loop=loop)
    assert started.wait(60)
    rec = _Recorder(sched.model)
    sched.model = rec
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(live.base + "/v1/chat/completions", timeout=1.0,
                       json={"model": live.model_name, "messages": MSGS, "max_tokens": 2})
        # the server notices the client left and marks the waiting job cancelled
        for _ in range(600):
            if sched.queued() == 0:
                break
            threading.Event().wait(0.1)
        assert sched.queued() == 0
        gate.set()
        sched.model = rec.model
        r = httpx.post(live.base + "/v1/chat/completions", timeout=60,
                       json={"model": live.model_name, "messages": MSGS, "max_tokens": 2})
        assert r.status_code == 200
        assert rec.reasons == []        # the abandoned request never reached the model
    finally:
        gate.set()
        sched.model = rec.model
        loop.close()
