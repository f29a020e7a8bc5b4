"""Every compile a request needs, its output constraint and its tool-call grammar alike, runs
on the compile pool under the server's budgets: the engine budget (`max_compile_work`,
`max_dfa_growth`) refuses a determinisation bomb with a 400 naming the limit, a compile past
`compile_timeout_seconds` is a 400 `compile_timeout` (503 `compile_busy` when no compile
thread is free), each in the API's own error shape, and other requests are served meanwhile.
Live server on the fixture model."""
from __future__ import annotations

import threading

import httpx
import pytest

import cengine
from fuzz_bodies import base_body
from server.api.settings import Limits
from server_harness import LiveServer
from test_server_limits import message_of

BOMB = "(a|b)*a(a|b){20}"       # 2**21 DFA states from about a hundred NFA states
BOMB_PARAMS = {"type": "object", "properties": {"code": {"type": "string", "pattern": BOMB}},
               "required": ["code"]}
PLAIN_PARAMS = {"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"]}
TOOL_SHAPES = [("openai", "/v1/chat/completions"), ("openai", "/v1/responses"),
               ("anthropic", "/v1/messages"), ("ollama", "/api/chat")]
CHAT = [("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages"), ("ollama", "/api/chat")]


def tool_body(path: str, model: str, params: dict, name: str = "lookup") -> dict:
    """A request that must call the one tool `name` (each API's way of saying so)."""
    b = base_body(path, model)
    if path == "/v1/chat/completions" or path == "/api/chat":
        b["tools"] = [{"type": "function", "function": {"name": name, "parameters": params}}]
        b["tool_choice"] = "required"       # on /api/chat: the llamay extension
    elif path == "/v1/responses":
        b["tools"] = [{"type": "function", "name": name, "parameters": params}]
        b["tool_choice"] = "required"
    else:
        b["tools"] = [{"name": name, "input_schema": params}]
        b["tool_choice"] = {"type": "any"}
    return b


def constraint_body(api: str, path: str, model: str, field: str, value) -> dict:
    b = base_body(path, model)
    (b["options"] if api == "ollama" else b)[field] = value
    return b


def assert_refused(api: str, r: httpx.Response, status: int, needle: str, code: str):
    assert r.status_code == status, r.text
    assert needle in message_of(api, r)
    if api == "openai":
        assert r.json()["error"]["code"] == code


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=2)
    yield s
    s.stop()


# --- the engine budget ------------------------------------------------------------------------

CONSTRAINT_BOMBS = [("llamay_regex", BOMB),
                    ("llamay_grammar", 'root ::= ("a" | "b")* "a" ("a" | "b"){20}'),
                    ("llamay_schema", {"type": "string", "pattern": BOMB})]


@pytest.mark.parametrize("field, value", CONSTRAINT_BOMBS, ids=[b[0] for b in CONSTRAINT_BOMBS])
@pytest.mark.parametrize("api, path", CHAT)
def test_constraint_bomb_names_max_dfa_growth(live, api, path, field, value):
    r = httpx.post(live.base + path, json=constraint_body(api, path, live.model_name, field,
                                                          value), timeout=60)
    assert_refused(api, r, 400, "the server's limit max_dfa_growth is 8", "limit_exceeded")


@pytest.mark.parametrize("api, path", TOOL_SHAPES)
def test_tool_schema_bomb_names_max_dfa_growth(live, api, path):
    r = httpx.post(live.base + path, json=tool_body(path, live.model_name, BOMB_PARAMS),
                   timeout=60)
    assert_refused(api, r, 400, "the server's limit max_dfa_growth is 8", "limit_exceeded")
    # the server is fine afterwards: the same tool with an ordinary schema is called
    ok = httpx.post(live.base + path, json=tool_body(path, live.model_name, PLAIN_PARAMS),
                    timeout=60)
    assert ok.status_code == 200, ok.text


def test_engine_budget_comes_from_the_server_limits():
    # 2**13 + 1 DFA states from at most 71 NFA states: over the default growth (8 per NFA state plus
    # 4,096), within 64; and a work budget too small for an ordinary grammar
    moderate = "(a|b)*a(a|b){12}"
    s = LiveServer(default_max_tokens=2, limits=Limits(max_dfa_growth=64))
    t = LiveServer(default_max_tokens=2, limits=Limits(max_compile_work=50))
    try:
        cengine.CACHE.clear()
        body = constraint_body("openai", "/v1/chat/completions", s.model_name, "llamay_regex",
                               moderate)
        assert httpx.post(s.base + "/v1/chat/completions", json=body, timeout=60
                          ).status_code == 200
        cengine.CACHE.clear()
        r = httpx.post(t.base + "/v1/chat/completions", json=body, timeout=60)
        assert_refused("openai", r, 400, "the server's limit max_compile_work is 50",
                       "limit_exceeded")
        r = httpx.post(t.base + "/v1/messages", timeout=60,
                       json=tool_body("/v1/messages", t.model_name, PLAIN_PARAMS, name="f50"))
        assert_refused("anthropic", r, 400, "max_compile_work", "limit_exceeded")
    finally:
        s.stop()
        t.stop()
        cengine.CACHE.clear()


# --- the time budget, for tool-call grammars --------------------------------------------------

@pytest.fixture
def slow_tool_grammars(monkeypatch):
    """Tool-call grammars that take 3 s to compile (sleeping, as a compile that hands the GIL
    over), recording the threads they were compiled on."""
    gate, threads = threading.Event(), []

    def slowed(real):
        def compile_(*args, **kwargs):
            threads.append(threading.current_thread().name)
            gate.wait(3)
            return real(*args, **kwargs)
        return compile_
    monkeypatch.setattr(cengine, "compile_structural", slowed(cengine.compile_structural))
    monkeypatch.setattr(cengine, "compile_triggered", slowed(cengine.compile_triggered))
    yield threads
    gate.set()


def test_slow_tool_grammar_is_a_compile_timeout_in_every_shape(slow_tool_grammars):
    s = LiveServer(default_max_tokens=2,
                   limits=Limits(compile_timeout_seconds=0.5, compile_threads=5))
    try:
        results = {}

        def slow(api, path):
            results[path] = httpx.post(s.base + path, timeout=60, json=tool_body(
                path, s.model_name, PLAIN_PARAMS, name="slow_" + api))
        workers = [threading.Thread(target=slow, args=shape) for shape in TOOL_SHAPES]
        for w in workers:
            w.start()
        # while the tool grammars compile, a plain request and a constrained one are served
        plain = httpx.post(s.base + "/v1/chat/completions", timeout=60,
                           json=base_body("/v1/chat/completions", s.model_name))
        constrained = httpx.post(s.base + "/v1/chat/completions", timeout=60, json=constraint_body(
            "openai", "/v1/chat/completions", s.model_name, "llamay_regex", "[ab]+"))
        health = httpx.get(s.base + "/health", timeout=10)
        for w in workers:
            w.join(60)
        assert plain.status_code == 200 and constrained.status_code == 200
        assert health.status_code == 200
        for api, path in TOOL_SHAPES:
            assert_refused(api, results[path], 400, "compile_timeout_seconds", "compile_timeout")
        # compiled on the compile pool, never on the model's worker thread or the event loop
        assert slow_tool_grammars and all(name.startswith("llamay-compile")
                                          for name in slow_tool_grammars)
    finally:
        s.stop()


def test_no_free_compile_thread_for_a_tool_grammar_is_a_503(slow_tool_grammars):
    s = LiveServer(default_max_tokens=2,
                   limits=Limits(compile_timeout_seconds=0.5, compile_threads=1))
    try:
        first = httpx.post(s.base + "/v1/chat/completions", timeout=60, json=tool_body(
            "/v1/chat/completions", s.model_name, PLAIN_PARAMS, name="first"))
        assert_refused("openai", first, 400, "compile_timeout_seconds", "compile_timeout")
        # the one compile thread still sleeps in the first compile
        second = httpx.post(s.base + "/v1/messages", timeout=60, json=tool_body(
            "/v1/messages", s.model_name, PLAIN_PARAMS, name="second"))
        assert_refused("anthropic", second, 503, "compile_timeout_seconds", "compile_busy")
        assert second.headers["retry-after"] == "1"
        # a request with nothing to compile does not wait for the pool
        plain = httpx.post(s.base + "/api/chat", timeout=60,
                           json=base_body("/api/chat", s.model_name))
        assert plain.status_code == 200, plain.text
    finally:
        s.stop()


def test_tool_grammar_compiled_once_before_the_job(live, monkeypatch):
    """The route compiles the tool grammar on the pool; the job on the model's worker finds it
    compiled and does not compile again."""
    calls = []
    real = cengine.compile_structural

    def counting(*args, **kwargs):
        calls.append(threading.current_thread().name)
        return real(*args, **kwargs)
    monkeypatch.setattr(cengine, "compile_structural", counting)
    r = httpx.post(live.base + "/v1/chat/completions", timeout=60, json=tool_body(
        "/v1/chat/completions", live.model_name, PLAIN_PARAMS, name="once"))
    assert r.status_code == 200, r.text
    assert len(calls) == 1 and calls[0].startswith("llamay-compile"), calls
