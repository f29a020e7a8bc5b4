"""OpenAI shape against a live server with the official `openai` client: chat completions,
completions, responses, models; streaming and not; tools under every tool_choice; every
structured-output field."""
from __future__ import annotations

import json
import re

import httpx
import jsonschema
import pytest

openai = pytest.importorskip("openai")


WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer"}},
           "required": ["city", "days"]}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET", "PST"]}},
         "required": ["zone"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather forecast",
                                            "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "description": "Clock",
                                            "parameters": CLOCK}}]
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"]}
MSGS = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]


@pytest.fixture(scope="module")
def client(live):
    return live.openai()


def _check_calls(calls, offered):
    assert calls, "expected at least one tool call"
    for c in calls:
        assert c.type == "function"
        assert c.function.name in offered
        jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])


# --- models, health ---------------------------------------------------------------------

def test_models_and_health(client, live):
    ids = [m.id for m in client.models.list()]
    assert ids == [live.model_name]
    assert client.models.retrieve(live.model_name).id == live.model_name
    h = httpx.get(live.base + "/health").json()
    assert h["status"] == "ok" and h["model"] == live.model_name


# --- chat completions -----------------------------------------------------------------------

def test_chat_plain(client, live):
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=12, seed=3)
    ch = r.choices[0]
    assert r.object == "chat.completion" and ch.message.role == "assistant"
    assert ch.finish_reason in ("stop", "length")
    assert isinstance(ch.message.content, str)
    assert 0 < r.usage.completion_tokens <= 12 and r.usage.prompt_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_seed_reproducible_and_stream_equal(client, live):
    kw = dict(model=live.model_name, messages=MSGS, max_completion_tokens=16, seed=11,
              temperature=1.0)
    a = client.chat.completions.create(**kw).choices[0].message.content
    b = client.chat.completions.create(**kw).choices[0].message.content
    assert a == b
    chunks = list(client.chat.completions.create(**kw, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == a
    finishes = [c.choices[0].finish_reason for c in chunks
                if c.choices and c.choices[0].finish_reason]
    assert len(finishes) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_chat_stop_sequence(client, live):
    kw = dict(model=live.model_name, messages=MSGS, max_tokens=24, seed=5, temperature=1.0)
    full = client.chat.completions.create(**kw).choices[0].message.content
    assert len(full) >= 6
    stop = full[3:5]
    cut = full[:full.index(stop)]
    r = client.chat.completions.create(**kw, stop=[stop])
    assert r.choices[0].message.content == cut
    assert r.choices[0].finish_reason == "stop"


def test_chat_logprobs(client, live):
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=6, seed=1,
                                       logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for t in content:
        assert t.logprob <= 0.0
        assert len(t.top_logprobs) == 3
        assert t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob
    assert "".join(t.token for t in content) == r.choices[0].message.content


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt, check", [
    ({"type": "text"}, lambda s: isinstance(s, str)),
    ({"type": "json_object"}, lambda s: json.loads(s) is not None or True),
    ({"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
     lambda s: jsonschema.validate(json.loads(s), PERSON) is None),
])
def test_chat_response_format(client, live, fmt, check, stream):
    kw = dict(model=live.model_name, messages=MSGS, max_tokens=64, seed=2, response_format=fmt)
    if stream:
        content = "".join(c.choices[0].delta.content or "" for c in
                          client.chat.completions.create(**kw, stream=True) if c.choices)
    else:
        content = client.chat.completions.create(**kw).choices[0].message.content
    assert check(content)


@pytest.mark.parametrize("extra, check", [
    ({"llamay_schema": PERSON}, lambda s: jsonschema.validate(json.loads(s), PERSON) is None),
    ({"llamay_format": "json"}, lambda s: json.loads(s) is not None or True),
    ({"llamay_grammar": 'root ::= "yes" | "no" | "n/a"'}, lambda s: s in ("yes", "no", "n/a")),
    ({"llamay_regex": "[a-c]{2,4}-[0-9]{3}"}, lambda s: re.fullmatch("[a-c]{2,4}-[0-9]{3}", s)),
    ({"llamay_lexicon": ["alpha", "beta", "gamma"]},
     lambda s: set(w for w in re.split(r"[\s,;:.!?]+", s) if w) <= {"alpha", "beta", "gamma"}
     and s[:1].isalpha()),
])
def test_chat_llamay_extensions(client, live, extra, check):
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=48, seed=4,
                                       extra_body=extra)
    assert check(r.choices[0].message.content), r.choices[0].message.content


def test_choice_logprobs(client, live):
    # a whole-output enum is one decision at pointer ""; alternatives are JSON values
    schema = {"enum": ["refund", "cancel", "track"]}
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=8, seed=9,
                                       extra_body={"llamay_schema": schema,
                                                   "llamay_choice_logprobs": True})
    [out] = r.model_extra["llamay_choice_logprobs"]
    assert out["pointer"] == ""
    assert sorted(out["alternatives"]) == ["cancel", "refund", "track"]
    assert abs(sum(out["posterior"]) - 1.0) < 1e-9
    assert all(lp < 0 for lp in out["logprobs"])
    # the posterior is the softmax of the sequence log-probabilities
    import math
    z = sum(math.exp(lp) for lp in out["logprobs"])
    assert out["posterior"] == pytest.approx([math.exp(lp) / z for lp in out["logprobs"]])
    assert out["probed_mass"] == pytest.approx(z)
    assert out["chosen"] == json.loads(r.choices[0].message.content)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("choice, offered", [
    ("required", {"get_weather", "get_time"}),
    ({"type": "function", "function": {"name": "get_time"}}, {"get_time"}),
])
def test_chat_tools_forced(client, live, choice, offered, stream):
    kw = dict(model=live.model_name, messages=MSGS, max_tokens=96, seed=6, tools=TOOLS,
              tool_choice=choice)
    if not stream:
        r = client.chat.completions.create(**kw)
        ch = r.choices[0]
        _check_calls(ch.message.tool_calls, offered)
        assert ch.finish_reason in ("tool_calls", "length")
        return
    calls, content = [], ""
    for c in client.chat.completions.create(**kw, stream=True):
        if not c.choices:
            continue
        d = c.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            # a call arrives whole, in one delta, with arguments that parse
            json.loads(tc.function.arguments)
            assert tc.id and tc.function.name
            calls.append(tc)
    assert "<tool_call>" not in content
    _check_calls(calls, offered)


def test_chat_parallel_tool_calls_false_gives_one_call(client, live):
    for seed in range(3):
        r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=128,
                                           seed=seed, tools=TOOLS, tool_choice="required",
                                           parallel_tool_calls=False)
        assert len(r.choices[0].message.tool_calls) == 1


def test_chat_tool_choice_none_and_auto(client, live):
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=16, seed=6,
                                       tools=TOOLS, tool_choice="none")
    assert not r.choices[0].message.tool_calls and r.choices[0].finish_reason in ("stop", "length")
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=16, seed=6,
                                       tools=TOOLS, tool_choice="auto")
    if r.choices[0].message.tool_calls:
        _check_calls(r.choices[0].message.tool_calls, {"get_weather", "get_time"})
    else:
        assert "</tool_call>" not in (r.choices[0].message.content or "")


def test_chat_tool_history_round_trip(client, live):
    """Assistant tool_calls and tool results in the history render and generate."""
    msgs = MSGS + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_time", "arguments": '{"zone": "UTC"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
    ]
    r = client.chat.completions.create(model=live.model_name, messages=msgs, max_tokens=64, seed=1,
                                       tools=TOOLS, tool_choice="required")
    _check_calls(r.choices[0].message.tool_calls, {"get_weather", "get_time"})


# --- completions ----------------------------------------------------------------------------

def test_completions(client, live):
    kw = dict(model=live.model_name, prompt="Once upon a time", max_tokens=10, seed=8,
              temperature=1.0)
    r = client.completions.create(**kw)
    assert r.object == "text_completion" and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 10
    streamed = "".join(c.choices[0].text
                       for c in client.completions.create(**kw, stream=True) if c.choices)
    assert streamed == r.choices[0].text
    e = client.completions.create(**kw, echo=True)
    assert e.choices[0].text == "Once upon a time" + r.choices[0].text
    lp = client.completions.create(**kw, logprobs=2)
    assert len(lp.choices[0].logprobs.tokens) == lp.usage.completion_tokens
    assert all(len(t) <= 2 for t in lp.choices[0].logprobs.top_logprobs)


def test_completions_structured(client, live):
    r = client.completions.create(model=live.model_name, prompt="Person:", max_tokens=64, seed=8,
                                  extra_body={"llamay_schema": PERSON})
    jsonschema.validate(json.loads(r.choices[0].text), PERSON)


# --- responses ------------------------------------------------------------------------------

def test_responses_text(client, live):
    r = client.responses.create(model=live.model_name, input="Say hi", instructions="Be brief",
                                max_output_tokens=10)
    assert r.status in ("completed", "incomplete")
    assert isinstance(r.output_text, str)
    assert r.usage.output_tokens <= 10 and r.usage.input_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_responses_json_schema(client, live, stream):
    kw = dict(model=live.model_name, input=[{"role": "user", "content": "Person please"}],
              max_output_tokens=64, text={"format": {"type": "json_schema", "name": "person",
                                                     "schema": PERSON, "strict": True}})
    if not stream:
        text = client.responses.create(**kw).output_text
    else:
        events = list(client.responses.create(**kw, stream=True))
        kinds = [e.type for e in events]
        assert kinds[0] == "response.created"
        assert kinds[-1] in ("response.completed", "response.incomplete")
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        done = [e.text for e in events if e.type == "response.output_text.done"]
        assert done == [text]
        assert events[-1].response.output_text == text
    jsonschema.validate(json.loads(text), PERSON)


RESP_TOOLS = [{"type": "function", "name": t["function"]["name"],
               "parameters": t["function"]["parameters"]}
              for t in TOOLS]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tools(client, live, stream):
    items = [{"role": "user", "content": "What time is it?"},
             {"type": "function_call", "call_id": "call_a", "name": "get_time",
              "arguments": '{"zone":"UTC"}'},
             {"type": "function_call_output", "call_id": "call_a", "output": "12:00"}]
    kw = dict(model=live.model_name, input=items, tools=RESP_TOOLS, tool_choice="required",
              max_output_tokens=96)
    if stream:
        events = list(client.responses.create(**kw, stream=True))
        calls = [e.item for e in events if e.type == "response.output_item.done"
                 and e.item.type == "function_call"]
        final = events[-1].response
        assert [c.call_id for c in calls] == \
            [o.call_id for o in final.output if o.type == "function_call"]
    else:
        final = client.responses.create(**kw)
        calls = [o for o in final.output if o.type == "function_call"]
    assert calls
    for c in calls:
        jsonschema.validate(json.loads(c.arguments), SCHEMAS[c.name])
    named = client.responses.create(**{**kw, "tool_choice": {"type": "function",
                                                             "name": "get_weather"}})
    assert {o.name for o in named.output if o.type == "function_call"} == {"get_weather"}
