"""Tool-call turns that agent SDKs accept: one call under parallel_tool_calls false, an extra call
cut by the budget dropped (never closed with placeholders, never streamed), response_format
beside tools, Ollama's tool_choice extension; driven through the official clients and the
agent SDKs (openai-agents, langchain-openai, pydantic-ai) against a live server.

The model is scripted: a list of pieces (one piece = one token) fed through the grammar the
server hands it, exactly as Model.generate would: each piece must be accepted; a piece the
grammar refuses where the document is complete ends the turn (the real loop could only
sample the end there), as does a complete document after which nothing may follow; at the
budget the matcher's completion is appended as the closer. What is tested is the server: the
grammars it builds and what it makes of the events."""
from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from server.api.settings import Settings  # noqa: E402
from server.runtime.types import FinishEvent, TokenEvent  # noqa: E402
from server.tools import hermes  # noqa: E402
from server.tools.common import ToolSpec  # noqa: E402
from server_harness import LiveServer  # noqa: E402

import cengine  # noqa: E402

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}
OA_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in SCHEMAS.items()]
# strict tools: the openai SDK's stream helper parses them, and raises on finish_reason length
STRICT_TOOLS = [{"type": "function", "function": {"name": n, "strict": True, "parameters": {
    **s, "additionalProperties": False}}} for n, s in SCHEMAS.items()]
RESP_TOOLS = [{"type": "function", "name": n, "parameters": s} for n, s in SCHEMAS.items()]
AN_TOOLS = [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()]
MSGS = [{"role": "user", "content": "Weather and time in Oslo?"}]
ANSWER = {"type": "object", "properties": {"city": {"type": "string"}, "sky": {"type": "string"}},
          "required": ["city", "sky"]}

CALL_1 = ["<tool_call>", '{"name": "get_weather", ', '"arguments": {"city": ', '"Oslo"}}',
          "</tool_call>"]
CALL_2 = ["\n<tool_call>", '{"name": "get_time", ', '"arguments": {"zone": ', '"UTC"}}',
          "</tool_call>"]
TWO_CALLS = CALL_1 + CALL_2
DOC = ['{"city": ', '"Oslo", ', '"sky": ', '"sunny"}']
FIRST = ("get_weather", {"city": "Oslo"})


class ScriptedModel:
    """Plays `script` (a list of pieces, or a function of the prompt giving one) under the
    grammar of each request; records which grammar kind each turn got."""
    name = "scripted"
    path = __file__
    metadata = {"general.architecture": "scripted"}
    chat_template = None

    def __init__(self):
        self.script = TWO_CALLS
        self.turns = []          # per generation: "grammar" | "lazy" | "free", how it ended

    def render_chat(self, messages, tools=None, tool_format=None, add_generation_prompt=True):
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)

    def tokenize(self, text, add_bos=True, special=True):
        return list(range(len(text.split())))

    def generate(self, prompt, *, grammar=None, params, lazy_grammar=None, cancel=None):
        pieces = self.script(prompt) if callable(self.script) else self.script
        kind = "grammar" if grammar is not None else "lazy" if lazy_grammar is not None else "free"
        record = {"kind": kind, "ended": "script"}
        self.turns.append(record)
        matcher = grammar.matcher() if grammar is not None else None
        trigger = lazy_grammar[0].encode() if lazy_grammar is not None else None
        out, n = b"", 0
        for piece in pieces:
            if params.max_tokens is not None and n >= params.max_tokens:
                closer = matcher.completion() if matcher is not None else b""
                if closer:
                    yield TokenEvent(-1, closer, None, None, True, closer=True)
                record["ended"] = "budget"
                yield FinishEvent("length", None, closer, 5, n)
                return
            data = piece.encode()
            if matcher is not None:
                complete = matcher.is_accepting()
                if not matcher.accept_bytes(data):
                    assert complete, f"the grammar refuses {data!r} after {out!r}"
                    record["ended"] = "grammar"       # only the end may follow here
                    break
            out += data
            if matcher is None and trigger is not None and trigger in out:
                matcher = lazy_grammar[1].matcher()
                assert matcher.accept_bytes(out.split(trigger, 1)[1])
            n += 1
            yield TokenEvent(n, data, -0.5, [], False)
            if matcher is not None and matcher.is_accepting() and not matcher.allowed_bytes():
                record["ended"] = "grammar"
                break
        assert matcher is None or matcher.is_accepting(), out
        yield FinishEvent("stop", None, b"", 5, n)


@pytest.fixture(scope="module")
def model():
    return ScriptedModel()


@pytest.fixture(scope="module")
def live(model):
    s = LiveServer(Settings(model=model))
    yield s
    s.stop()


@pytest.fixture()
def oa(live, model):
    model.script = TWO_CALLS
    model.turns.clear()
    return live.openai()


def _calls(message):
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


# --- the budget ends a call that follows a complete one ------------------------------------

# (budget, calls, finish_reason, dropped): required, pieces of two calls (5 tokens each)
BUDGETS = [
    (3, [("get_weather", {"city": ""})], "length", False),   # nothing complete before: closed
    (5, [FIRST], "length", False),        # budget ends right after the first call, none dropped
    (6, [FIRST], "tool_calls", True),     # the second call's opening tag: dropped
    (8, [FIRST], "tool_calls", True),     # inside the second call's arguments: dropped
    (9, [FIRST], "tool_calls", True),     # before its closing tag: dropped
    (10, [FIRST, ("get_time", {"zone": "UTC"})], "tool_calls", False),
]


@pytest.mark.parametrize("budget, calls, finish, dropped", BUDGETS)
def test_openai_chat_drops_the_cut_call(oa, live, budget, calls, finish, dropped):
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                   tool_choice="required", max_tokens=budget)
    choice = r.choices[0]
    assert _calls(choice.message) == calls
    for name, args in _calls(choice.message):
        jsonschema.validate(args, SCHEMAS[name])
    assert choice.finish_reason == finish
    assert (choice.model_extra or {}).get("llamay_dropped_call", False) is dropped
    assert not choice.message.content


@pytest.mark.parametrize("budget, calls, finish, dropped", BUDGETS)
def test_openai_chat_stream_never_sends_the_dropped_call(oa, live, budget, calls, finish, dropped):
    got, finishes, flags = [], [], []
    for c in oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                        tool_choice="required", max_tokens=budget, stream=True):
        ch = c.choices[0]
        for tc in ch.delta.tool_calls or []:
            got.append((tc.index, tc.function.name, json.loads(tc.function.arguments)))
        if ch.finish_reason:
            finishes.append(ch.finish_reason)
            flags.append((ch.model_extra or {}).get("llamay_dropped_call", False))
    assert got == [(i, *call) for i, call in enumerate(calls)]
    assert finishes == [finish] and flags == [dropped]


def test_cut_after_a_separator_drops_the_call_it_began(oa, live, model):
    # the newline between calls is released as text, but what follows it must be a call:
    # the closer would invent one, so it is dropped too
    model.script = CALL_1 + ["\n", "<tool_call>"] + CALL_2[1:]
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                   tool_choice="required", max_tokens=6)
    assert _calls(r.choices[0].message) == [FIRST]
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.choices[0].model_extra["llamay_dropped_call"] is True


def test_openai_stream_helper_accepts_one_call(oa, live):
    # chat.completions.stream raises LengthFinishReasonError on finish_reason length: the
    # dropped extra call must not cost the complete one
    with oa.chat.completions.stream(model="scripted", messages=MSGS, tools=STRICT_TOOLS,
                                    tool_choice="required", max_tokens=8) as s:
        for _ in s:
            pass
        done = s.get_final_completion()
    assert _calls(done.choices[0].message) == [FIRST]
    assert done.choices[0].message.tool_calls[0].function.parsed_arguments == FIRST[1]
    assert done.choices[0].finish_reason == "tool_calls"


def test_openai_stream_helper_still_raises_when_the_only_call_was_cut(oa, live):
    with pytest.raises(openai.LengthFinishReasonError):
        with oa.chat.completions.stream(model="scripted", messages=MSGS, tools=STRICT_TOOLS,
                                        tool_choice="required", max_tokens=3) as s:
            for _ in s:
                pass


def test_auto_drops_the_cut_call_after_text(oa, live, model):
    model.script = ["Let", " me", " check.", " "] + TWO_CALLS
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS, max_tokens=11)
    assert model.turns[-1]["kind"] == "lazy"
    assert r.choices[0].message.content == "Let me check."
    assert _calls(r.choices[0].message) == [FIRST]
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.choices[0].model_extra["llamay_dropped_call"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_responses_complete_after_a_dropped_call(oa, live, stream):
    kw = dict(model="scripted", input="weather?", tools=RESP_TOOLS, tool_choice="required",
              max_output_tokens=8)
    if stream:
        events = list(oa.responses.create(**kw, stream=True))
        assert events[-1].type == "response.completed"
        r = events[-1].response
        added = [e.item.name for e in events if e.type == "response.output_item.added"]
        assert added == ["get_weather"]
    else:
        r = oa.responses.create(**kw)
    assert r.status == "completed"
    assert [(o.name, json.loads(o.arguments)) for o in r.output] == [FIRST]
    assert r.model_extra["llamay_dropped_call"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_use_after_a_dropped_call(live, model, stream):
    model.script = TWO_CALLS
    a = live.anthropic()
    kw = dict(model="scripted", max_tokens=8, messages=MSGS, tools=AN_TOOLS,
              tool_choice={"type": "any"})
    if stream:
        with a.messages.stream(**kw) as s:
            events = list(s)
            m = s.get_final_message()
        starts = [e.content_block.name for e in events if e.type == "content_block_start"]
        assert starts == ["get_weather"]
        delta = [e for e in events if e.type == "message_delta"][0]
        assert delta.model_extra["llamay_dropped_call"] is True
    else:
        m = a.messages.create(**kw)
        assert m.model_extra["llamay_dropped_call"] is True
    assert m.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in m.content] == [FIRST]


# --- parallel_tool_calls false: one call, then the turn ends ------------------------------

@pytest.mark.parametrize("choice", ["required", "auto"])
def test_parallel_false_one_call_then_end(oa, live, model, choice):
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                   tool_choice=choice, parallel_tool_calls=False, max_tokens=60)
    assert _calls(r.choices[0].message) == [FIRST]
    assert r.choices[0].finish_reason == "tool_calls"
    assert model.turns[-1]["ended"] == "grammar"      # nothing could follow the first call
    assert "llamay_dropped_call" not in r.choices[0].model_extra


def test_anthropic_disable_parallel_tool_use(live, model):
    model.script = TWO_CALLS
    m = live.anthropic().messages.create(
        model="scripted", max_tokens=60, messages=MSGS, tools=AN_TOOLS,
        tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert [(b.name, b.input) for b in m.content] == [FIRST]
    assert m.stop_reason == "tool_use"


# --- response_format together with tools ---------------------------------------------------

RF = {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER}}


@pytest.mark.parametrize("script, choice, want_calls, want_doc", [
    (CALL_1, "auto", [FIRST], None),            # auto: the model may call ...
    (DOC, "auto", [], {"city": "Oslo", "sky": "sunny"}),   # ... or answer in the schema
    (CALL_1, "required", [FIRST], None),
    (DOC, "none", [], {"city": "Oslo", "sky": "sunny"}),
])
def test_chat_response_format_with_tools(oa, live, model, script, choice, want_calls, want_doc):
    model.script = script
    r = oa.chat.completions.create(model="scripted", messages=MSGS, tools=OA_TOOLS,
                                   tool_choice=choice, response_format=RF, max_tokens=60)
    m = r.choices[0].message
    assert _calls(m) == want_calls
    if want_doc is not None:
        assert json.loads(m.content) == want_doc
        assert r.choices[0].finish_reason == "stop"
    else:
        assert r.choices[0].finish_reason == "tool_calls"
    assert model.turns[-1]["kind"] == "grammar"     # one grammar from the first token


def test_answer_or_call_grammar_refuses_free_text():
    tools = [ToolSpec(n, "", s) for n, s in SCHEMAS.items()]
    g = hermes.HERMES.answer_or_call_grammar(cengine.JsonSchema(ANSWER), tools)
    for text, ok in [("".join(DOC), True), ("".join(CALL_1), True), ("".join(TWO_CALLS), True),
                     ("".join(DOC) + " ", False), ("Sure: " + "".join(DOC), False),
                     ("".join(DOC) + "".join(CALL_1), False)]:
        m = g.matcher()
        assert (m.accept_bytes(text.encode()) and m.is_accepting()) is ok, text
    one = hermes.HERMES.answer_or_call_grammar(cengine.JsonSchema(ANSWER), tools, parallel=False)
    m = one.matcher()
    assert not m.accept_bytes("".join(TWO_CALLS).encode())


@pytest.mark.parametrize("script, want_calls, want_doc", [
    (CALL_1, [FIRST], None), (DOC, [], {"city": "Oslo", "sky": "sunny"})])
def test_responses_text_format_with_tools(oa, live, model, script, want_calls, want_doc):
    model.script = script
    r = oa.responses.create(model="scripted", input="weather?", tools=RESP_TOOLS,
                            text={"format": {"type": "json_schema", "name": "answer",
                                             "schema": ANSWER}}, max_output_tokens=60)
    assert r.status == "completed"
    assert [(o.name, json.loads(o.arguments)) for o in r.output
            if o.type == "function_call"] == want_calls
    if want_doc is not None:
        assert json.loads(r.output_text) == want_doc


@pytest.mark.parametrize("script, want_calls, want_doc", [
    (CALL_1, [FIRST], None), (DOC, [], {"city": "Oslo", "sky": "sunny"})])
def test_ollama_format_with_tools(live, model, script, want_calls, want_doc):
    model.script = script
    r = live.ollama().chat(model="scripted", messages=MSGS, tools=OA_TOOLS, format=ANSWER,
                           options={"num_predict": 60})
    assert [(c.function.name, dict(c.function.arguments))
            for c in r.message.tool_calls or []] == want_calls
    if want_doc is not None:
        assert json.loads(r.message.content) == want_doc
    assert r.done_reason == "stop"


def test_anthropic_output_config_with_tools(live, model):
    model.script = DOC
    m = live.anthropic().messages.create(
        model="scripted", max_tokens=60, messages=MSGS, tools=AN_TOOLS,
        output_config={"format": {"type": "json_schema", "schema": ANSWER}})
    assert json.loads(m.content[0].text) == {"city": "Oslo", "sky": "sunny"}
    assert m.stop_reason == "end_turn"


# --- Ollama tool_choice (llamay extension on /api/chat) ------------------------------------

@pytest.mark.parametrize("tool_choice, script, want", [
    ("required", TWO_CALLS, [FIRST, ("get_time", {"zone": "UTC"})]),
    ({"type": "function", "function": {"name": "get_weather"}}, CALL_1, [FIRST]),
    ("none", ["Just", " text"], []),
    ("auto", ["Hi", " "] + CALL_1, [FIRST]),
])
def test_ollama_tool_choice(live, model, tool_choice, script, want):
    model.script = script
    # the official ollama client has no tool_choice parameter (and passes no extra fields)
    r = httpx.post(live.base + "/api/chat", json={
        "model": "scripted", "messages": MSGS, "tools": OA_TOOLS, "tool_choice": tool_choice,
        "stream": False, "options": {"num_predict": 60}}, timeout=60)
    assert r.status_code == 200, r.text
    msg = r.json()["message"]
    assert [(c["function"]["name"], c["function"]["arguments"])
            for c in msg.get("tool_calls", [])] == want
    kinds = {"required": "grammar", "auto": "lazy", "none": "free"}
    assert model.turns[-1]["kind"] == kinds.get(str(tool_choice), "grammar")


def test_ollama_tool_choice_drops_the_cut_call(live, model):
    model.script = TWO_CALLS
    r = httpx.post(live.base + "/api/chat", json={
        "model": "scripted", "messages": MSGS, "tools": OA_TOOLS, "tool_choice": "required",
        "stream": True, "options": {"num_predict": 8}}, timeout=60)
    lines = [json.loads(x) for x in r.text.splitlines() if x.strip()]
    calls = [c for x in lines for c in x["message"].get("tool_calls", [])]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == [FIRST]
    assert lines[-1]["done_reason"] == "stop" and lines[-1]["llamay_dropped_call"] is True


@pytest.mark.parametrize("tool_choice", ["sometimes", {"type": "function",
                                                       "function": {"name": "nope"}}])
def test_ollama_bad_tool_choice(live, tool_choice):
    r = httpx.post(live.base + "/api/chat", json={
        "model": "scripted", "messages": MSGS, "tools": OA_TOOLS, "tool_choice": tool_choice,
        "stream": False}, timeout=60)
    assert r.status_code == 400 and "tool_choice" in r.json()["error"]


# --- agent SDKs ---------------------------------------------------------------------------

def _agent_script(prompt: str):
    """Call the weather tool, then answer once its result is in the conversation."""
    if "tool: " in prompt:
        return ["It", " is", " sunny", "."]
    return TWO_CALLS


def test_openai_agents_runner_required(live, model):
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)
    seen = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return "sunny"

    @agents.function_tool
    def get_time(zone: str) -> str:
        """The time in a zone."""
        return "noon"

    model.script = _agent_script
    client = openai.AsyncOpenAI(base_url=live.base + "/v1", api_key="unused", max_retries=0)
    for m in (agents.OpenAIResponsesModel("scripted", client),
              agents.OpenAIChatCompletionsModel("scripted", client)):
        seen.clear()
        agent = agents.Agent(name="w", instructions="Use tools.", tools=[get_weather, get_time],
                             model=m, model_settings=agents.ModelSettings(
                                 tool_choice="required", max_tokens=8))
        result = agents.Runner.run_sync(agent, "Weather in Oslo?")
        assert seen == ["Oslo"]              # the dropped second call was never run
        assert result.final_output == "It is sunny."


def test_openai_agents_run_streamed(live, model):
    agents = pytest.importorskip("agents")
    import asyncio
    agents.set_tracing_disabled(True)

    seen = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return "sunny"

    twice = CALL_1 + ["\n<tool_call>", '{"name": "get_weather", ', '"arguments": {"city": ',
                      '"Bergen"}}', "</tool_call>"]
    model.script = lambda p: ["It", " is", " sunny", "."] if "tool: " in p else twice
    client = openai.AsyncOpenAI(base_url=live.base + "/v1", api_key="unused", max_retries=0)
    agent = agents.Agent(name="w", instructions="Use tools.", tools=[get_weather],
                         model=agents.OpenAIResponsesModel("scripted", client),
                         model_settings=agents.ModelSettings(tool_choice="required",
                                                             max_tokens=8))

    async def go():
        r = agents.Runner.run_streamed(agent, "Weather in Oslo?")
        async for _ in r.stream_events():
            pass
        return r.final_output
    assert asyncio.run(go()) == "It is sunny."
    assert seen == ["Oslo"]


def test_langchain_openai_required(live, model):
    lc = pytest.importorskip("langchain_openai")
    model.script = TWO_CALLS
    llm = lc.ChatOpenAI(model="scripted", base_url=live.base + "/v1", api_key="unused",
                        max_tokens=8, max_retries=0)
    msg = llm.bind_tools(OA_TOOLS, tool_choice="required").invoke("Weather in Oslo?")
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [FIRST]
    assert not msg.invalid_tool_calls
    assert msg.response_metadata["finish_reason"] == "tool_calls"


def test_pydantic_ai_native_output_with_tools(live, model):
    pytest.importorskip("pydantic_ai")
    from pydantic import BaseModel
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    class Answer(BaseModel):
        city: str
        sky: str

    model.script = lambda p: DOC if "tool: " in p else CALL_1
    agent = Agent(OpenAIChatModel("scripted", provider=OpenAIProvider(
        base_url=live.base + "/v1", api_key="unused")), output_type=NativeOutput(Answer))
    seen = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return "sunny"

    result = agent.run_sync("Weather in Oslo?")
    assert seen == ["Oslo"]
    assert result.output == Answer(city="Oslo", sky="sunny")
