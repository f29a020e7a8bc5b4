"""Tool calls under tool_choice auto, with a scripted model standing in for the sampler.

The random fixture model almost never opens `<tool_call>` by itself, so these tests drive the
server with a model whose output is a fixed script, checked byte by byte against the lazy
grammar the server hands it (the script must be a legal call), cut at the budget and closed
with the grammar's completion as Model.generate does. What they test is the server: text
streams before the call, calls arrive whole, several calls in a turn are all parsed, a
first call cut by the budget comes back closed and valid with the budget finish reason, and a
cut call after a complete one is dropped (tests/test_server_toolturns.py has the rest)."""
from __future__ import annotations

import json

import jsonschema
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")

from server.runtime.types import FinishEvent, TokenEvent  # noqa: E402
from server.api.settings import Settings  # noqa: E402
from server_harness import LiveServer  # noqa: E402

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}
OA_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in SCHEMAS.items()]
AN_TOOLS = [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()]
MSGS = [{"role": "user", "content": "Weather and time in Oslo?"}]

SCRIPT = ["Let", " me", " check", ".", " <tool", "_call", ">", '{"name": "get_weather", ',
          '"arguments": {"city": ', '"Oslo"}}', "</tool_call>", "\n<tool_call>",
          '{"name": "get_time", "arguments": {"zone": "UTC"}}', "</tool_call>"]
TEXT = "Let me check."
CALLS = [("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "UTC"})]


class ScriptedModel:
    name = "scripted"
    path = __file__
    metadata = {"general.architecture": "scripted"}
    chat_template = None

    def __init__(self):
        self.seen_lazy = []

    def render_chat(self, messages, tools=None, tool_format=None, add_generation_prompt=True):
        return "\n".join(str(m.get("content")) for m in messages)

    def tokenize(self, text, add_bos=True, special=True):
        return list(range(len(text.split())))

    def generate(self, prompt, *, grammar=None, params, lazy_grammar=None, cancel=None):
        assert grammar is None and lazy_grammar is not None, \
            "tool_choice auto uses the lazy grammar"
        trigger, g = lazy_grammar
        self.seen_lazy.append(trigger)
        out, matcher, n = b"", None, 0
        for piece in SCRIPT:
            if params.max_tokens is not None and n >= params.max_tokens:
                closer = matcher.completion() if matcher is not None else b""
                if closer:
                    yield TokenEvent(-1, closer, None, None, True, closer=True)
                yield FinishEvent("length", None, closer, 5, n)
                return
            data = piece.encode()
            if matcher is not None:
                assert matcher.accept_bytes(data), (out, data)
            out += data
            if matcher is None and trigger.encode() in out:
                matcher = g.matcher()
                assert matcher.accept_bytes(out.split(trigger.encode(), 1)[1])
            n += 1
            yield TokenEvent(n, data, -0.5, [], False)
        assert matcher is not None and matcher.is_accepting()
        yield FinishEvent("stop", None, b"", 5, n)


@pytest.fixture(scope="module")
def live():
    s = LiveServer(Settings(model=ScriptedModel()))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def oa(live):
    return live.openai()


def test_openai_whole(oa, live):
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS)
    m = r.choices[0].message
    assert m.content == TEXT
    assert [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls] == CALLS
    assert r.choices[0].finish_reason == "tool_calls"


def test_openai_stream_holds_calls_back(oa, live):
    texts, calls = [], []
    for c in oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                        stream=True):
        if not c.choices:
            continue
        d = c.choices[0].delta
        if d.content:
            texts.append(d.content)
        for tc in d.tool_calls or []:
            calls.append((tc.index, tc.function.name, json.loads(tc.function.arguments)))
    assert "".join(texts).strip() == TEXT
    assert not any("<" in t for t in texts)       # no fragment of the tag leaks as text
    # text streamed piece by piece, before the calls
    assert len(texts) >= 4
    assert calls == [(0, *CALLS[0]), (1, *CALLS[1])]


@pytest.mark.parametrize("budget, n_calls, known, finish", [
    (6, 0, [], "length"),                         # the tag is not complete: still free text
    (7, 1, [], "length"),                         # cut right after the trigger: closer picks a call
    (9, 1, [("get_weather", {"city": ""})], "length"),       # cut inside the arguments
    (10, 1, [("get_weather", {"city": "Oslo"})], "length"),  # cut before the closing tag
    # cut right after the second opening tag: that call is dropped, the first one stands
    (12, 1, [("get_weather", {"city": "Oslo"})], "tool_calls"),
])
def test_cut_inside_a_call_is_closed(oa, live, budget, n_calls, known, finish):
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                   max_tokens=budget)
    got = [(c.function.name, json.loads(c.function.arguments))
           for c in r.choices[0].message.tool_calls or []]
    assert len(got) == n_calls
    for name, args in got:
        jsonschema.validate(args, SCHEMAS[name])
    assert got[:len(known)] == known
    assert r.choices[0].finish_reason == finish


def test_cut_in_free_text_has_no_call(oa, live):
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS, max_tokens=3)
    assert r.choices[0].message.content == "Let me check"
    assert not r.choices[0].message.tool_calls and r.choices[0].finish_reason == "length"


def test_responses_stream(oa, live):
    events = list(oa.responses.create(model="scripted", input="hi", tools=[
        {"type": "function", "name": n, "parameters": s} for n, s in SCHEMAS.items()], stream=True))
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert final.output_text == TEXT
    assert [(o.name, json.loads(o.arguments))
            for o in final.output if o.type == "function_call"] == CALLS


def test_anthropic_stream(live):
    a = live.anthropic()
    with a.messages.stream(model="scripted", max_tokens=100, messages=MSGS, tools=AN_TOOLS) as s:
        events = list(s)
        m = s.get_final_message()
    assert [b.type for b in m.content] == ["text", "tool_use", "tool_use"]
    assert m.content[0].text.strip() == TEXT
    assert [(b.name, b.input) for b in m.content[1:]] == CALLS
    assert m.stop_reason == "tool_use"
    starts = [e.content_block.type for e in events if e.type == "content_block_start"]
    assert starts == ["text", "tool_use", "tool_use"]


def test_anthropic_cut(live):
    a = live.anthropic()
    m = a.messages.create(model="scripted", max_tokens=9, messages=MSGS, tools=AN_TOOLS)
    assert m.stop_reason == "max_tokens"
    assert [(b.name, b.input) for b in m.content if b.type == "tool_use"] == \
        [("get_weather", {"city": ""})]


@pytest.mark.parametrize("stream", [False, True])
def test_ollama(live, stream):
    o = live.ollama()
    if stream:
        parts = list(o.chat(model="scripted", messages=MSGS, tools=OA_TOOLS, stream=True))
        text = "".join(p.message.content for p in parts)
        calls = [c for p in parts for c in (p.message.tool_calls or [])]
        assert parts[-1].done_reason == "stop"
    else:
        r = o.chat(model="scripted", messages=MSGS, tools=OA_TOOLS)
        text, calls = r.message.content, r.message.tool_calls
    assert text.strip() == TEXT
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == CALLS
