"""Anthropic shape (/v1/messages) against a live server with the official `anthropic` client."""
from __future__ import annotations

import json
import re

import jsonschema
import pytest

anthropic = pytest.importorskip("anthropic")


WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
           "required": ["city"]}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}
TOOLS = [{"name": "get_weather", "description": "Weather", "input_schema": WEATHER},
         {"name": "get_time", "description": "Clock", "input_schema": CLOCK}]
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}
MSGS = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def client(live):
    return live.anthropic()


def _tool_uses(content, offered):
    uses = [b for b in content if b.type == "tool_use"]
    assert uses
    for u in uses:
        assert u.name in offered and u.id.startswith("toolu_")
        jsonschema.validate(u.input, SCHEMAS[u.name])
    return uses


def test_plain_message(client, live):
    m = client.messages.create(model=live.model_name, max_tokens=12, messages=MSGS,
                               system="Be terse.",
                               extra_body={"temperature": 0.7, "top_k": 40})
    assert m.type == "message" and m.role == "assistant"
    assert m.stop_reason in ("end_turn", "max_tokens")
    assert [b.type for b in m.content] == ["text"]
    assert 0 < m.usage.output_tokens <= 12 and m.usage.input_tokens > 0


def test_stream_events_and_text(client, live):
    kw = dict(model=live.model_name, max_tokens=16, messages=MSGS, extra_body={"seed": 4})
    whole = client.messages.create(**kw)
    with client.messages.stream(**kw) as s:
        kinds = [e.type for e in s]
        final = s.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "message_delta" in kinds and "content_block_start" in kinds
    assert "content_block_stop" in kinds
    assert final.content[0].text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason


def test_stop_sequences(client, live):
    kw = dict(model=live.model_name, max_tokens=24, messages=MSGS, extra_body={"seed": 5})
    full = client.messages.create(**kw).content[0].text
    assert len(full) >= 6
    stop = full[3:5]
    m = client.messages.create(**kw, stop_sequences=[stop])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == full[:full.index(stop)]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("choice, offered", [
    ({"type": "any"}, {"get_weather", "get_time"}),
    ({"type": "tool", "name": "get_weather"}, {"get_weather"}),
])
def test_tools_forced(client, live, choice, offered, stream):
    kw = dict(model=live.model_name, max_tokens=96, messages=MSGS, tools=TOOLS, tool_choice=choice)
    if not stream:
        m = client.messages.create(**kw)
    else:
        with client.messages.stream(**kw) as s:
            events = list(s)
            m = s.get_final_message()
        # each tool_use block arrives whole: one input_json_delta that parses on its own
        deltas = [e for e in events if e.type == "content_block_delta"
                  and getattr(e.delta, "type", "") == "input_json_delta"]
        assert deltas and all(json.loads(d.delta.partial_json) is not None for d in deltas)
    _tool_uses(m.content, offered)
    assert m.stop_reason in ("tool_use", "max_tokens")


def test_disable_parallel_and_none(client, live):
    m = client.messages.create(model=live.model_name, max_tokens=128, messages=MSGS, tools=TOOLS,
                               tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert len(_tool_uses(m.content, {"get_weather", "get_time"})) == 1
    m = client.messages.create(model=live.model_name, max_tokens=12, messages=MSGS, tools=TOOLS,
                               tool_choice={"type": "none"})
    assert all(b.type == "text" for b in m.content)


def test_tool_result_round_trip(client, live):
    msgs = [{"role": "user", "content": "time?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_time",
                 "input": {"zone": "UTC"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12:00"}]}]
    m = client.messages.create(model=live.model_name, max_tokens=96, messages=msgs, tools=TOOLS,
                               tool_choice={"type": "any"})
    _tool_uses(m.content, {"get_weather", "get_time"})


PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}},
          "required": ["name"]}


@pytest.mark.parametrize("extra, check", [
    ({"llamay_schema": PERSON}, lambda s: jsonschema.validate(json.loads(s), PERSON) is None),
    ({"llamay_format": "json"}, lambda s: json.loads(s) is not None or True),
    ({"llamay_grammar": 'root ::= "ok" | "no"'}, lambda s: s in ("ok", "no")),
    ({"llamay_regex": "[0-9]{3}"}, lambda s: len(s) == 3 and s.isdigit()),
    ({"llamay_lexicon": ["red", "green"]},
     lambda s: (set(w for w in re.split(r"[\s,;:.!?]+", s) if w) <= {"red", "green"}
                and s[:1].isalpha())),
])
def test_extensions(client, live, extra, check):
    m = client.messages.create(model=live.model_name, max_tokens=48, messages=MSGS,
                               extra_body=extra)
    assert check(m.content[0].text), m.content[0].text


def test_choice_logprobs(client, live):
    m = client.messages.create(model=live.model_name, max_tokens=8, messages=MSGS,
                               extra_body={"llamay_lexicon": ["yes", "no"],
                                           "llamay_choice_logprobs": True})
    [out] = m.model_extra["llamay_choice_logprobs"]
    assert out["pointer"] == "" and out["alternatives"] == ["yes", "no"]
    assert abs(sum(out["posterior"]) - 1) < 1e-9
