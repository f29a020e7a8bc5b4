"""Tool-call parsing (streamed and whole), tool lists and tool_choice across the three APIs."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from server.tools.common import ToolFormatError, ToolSpec, parse_tools, tool_choice_mode
from server.tools.hermes import HERMES
from tool_text import parse_output

WEATHER = ToolSpec("get_weather", "",
                   {"type": "object", "properties": {"city": {"type": "string"}}})
TIME = ToolSpec("get_time", "", {"type": "object"})
TOOLS = [WEATHER, TIME]


def _call(name, args):
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


@pytest.mark.parametrize("text, want_text, want_calls", [
    ("plain answer", "plain answer", []),
    (_call("get_weather", {"city": "Oslo"}), "", [("get_weather", {"city": "Oslo"})]),
    ("Let me check. " + _call("get_time", {}), "Let me check.", [("get_time", {})]),
    (_call("get_time", {}) + "\n" + _call("get_weather", {"city": "Rome"}), "",
     [("get_time", {}), ("get_weather", {"city": "Rome"})]),
    ("<tool_call>\n" + json.dumps({"name": "get_time", "arguments": {}}) + "\n</tool_call>", "",
     [("get_time", {})]),
    # a function nobody offered is not a call
    (_call("rm_rf", {}), _call("rm_rf", {}), []),
    # broken JSON is not a call
    ("<tool_call>{\"name\": \"get_time\", </tool_call>",
     "<tool_call>{\"name\": \"get_time\", </tool_call>", []),
    # unterminated block stays text
    ("<tool_call>{\"name\"", "<tool_call>{\"name\"", []),
    ("a < b and <tool", "a < b and <tool", []),
])
def test_parse_output(text, want_text, want_calls):
    got_text, calls = parse_output(HERMES, text, TOOLS)
    assert got_text == want_text
    assert [(c.name, c.arguments) for c in calls] == want_calls
    for c in calls:
        assert json.loads(c.arguments_json()) == c.arguments
        assert c.id.startswith("call_")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.text(alphabet="ab <>/_{}\"", max_size=12),
    st.sampled_from([_call("get_time", {}), _call("get_weather", {"city": "x<y"})]),
), max_size=6), st.data())
def test_stream_split_anywhere_matches_whole(pieces, data):
    """However the bytes arrive, the streamed events equal the whole-text parse, and a call
    is only ever released whole."""
    text = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    s = HERMES.call_reader(TOOLS)
    events, prev = [], 0
    for c in cuts + [len(text)]:
        events += s.feed(text[prev:c])
        prev = c
    events += s.finish()
    whole = HERMES.call_reader(TOOLS)
    ref = whole.feed(text) + whole.finish()
    assert "".join(v for k, v in events if k == "text") == "".join(v for k, v in ref if k == "text")
    assert [(v.name, v.arguments) for k, v in events if k == "call"] == \
        [(v.name, v.arguments) for k, v in ref if k == "call"]


def test_stream_holds_back_partial_tag():
    s = HERMES.call_reader(TOOLS)
    assert s.feed("Hello <tool") == [("text", "Hello ")]
    assert s.feed("_call>{\"name\": \"get_time\", ") == []
    ev = s.feed("\"arguments\": {}}</tool_call>")
    assert [k for k, _ in ev] == ["call"] and ev[0][1].name == "get_time"


@pytest.mark.parametrize("api, tools", [
    ("openai", [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
    ("responses", [{"type": "function", "name": "f", "parameters": {"type": "object"}}]),
    ("anthropic", [{"name": "f", "input_schema": {"type": "object"}}]),
    ("ollama", [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
])
def test_parse_tools_shapes(api, tools):
    specs = parse_tools(tools, api)
    assert [(s.name, s.parameters) for s in specs] == [("f", {"type": "object"})]


@pytest.mark.parametrize("tools", [
    "nope", [1], [{"type": "function", "function": {"name": ""}}],
    [{"type": "retrieval"}],
    [{"type": "function", "function": {"name": "f", "parameters": "x"}}],
    [{"type": "function", "function": {"name": "f"}},
     {"type": "function", "function": {"name": "f"}}],
])
def test_parse_tools_refuses(tools):
    with pytest.raises(ToolFormatError):
        parse_tools(tools, "openai")


@pytest.mark.parametrize("api, choice, want", [
    ("openai", None, ("auto", None)),
    ("openai", "none", ("none", None)),
    ("openai", "auto", ("auto", None)),
    ("openai", "required", ("required", None)),
    ("openai", {"type": "function", "function": {"name": "get_time"}}, ("named", "get_time")),
    ("responses", {"type": "function", "name": "get_time"}, ("named", "get_time")),
    ("anthropic", {"type": "auto"}, ("auto", None)),
    ("anthropic", {"type": "any"}, ("required", None)),
    ("anthropic", {"type": "none"}, ("none", None)),
    ("anthropic", {"type": "tool", "name": "get_weather"}, ("named", "get_weather")),
])
def test_tool_choice_modes(api, choice, want):
    assert tool_choice_mode(choice, TOOLS, api) == want


@pytest.mark.parametrize("api, choice, tools", [
    ("openai", "sometimes", TOOLS),
    ("openai", {"type": "function", "function": {"name": "launch"}}, TOOLS),
    ("anthropic", {"type": "tool", "name": "launch"}, TOOLS),
    ("openai", "required", []),
    ("openai", 3, TOOLS),
])
def test_tool_choice_refuses(api, choice, tools):
    with pytest.raises(ToolFormatError):
        tool_choice_mode(choice, tools, api)


def test_no_tools_means_no_calls():
    assert tool_choice_mode("auto", [], "openai") == ("none", None)


WEATHER_CALL = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
TIME_CALL = '{"name": "get_time", "arguments": {}}'


@pytest.mark.parametrize("parallel, lazy, text, ok", [
    (True, False, "<tool_call>" + WEATHER_CALL + "</tool_call>", True),
    (True, False, "<tool_call>\n" + TIME_CALL + "\n</tool_call>\n<tool_call>" + WEATHER_CALL
     + "</tool_call>", True),
    (False, False, "<tool_call>" + TIME_CALL + "</tool_call><tool_call>" + TIME_CALL
     + "</tool_call>", False),
    (True, False, "Sure. <tool_call>" + TIME_CALL + "</tool_call>", False),   # no free text
    (True, False, '<tool_call>{"name": "rm", "arguments": {}}</tool_call>', False),
    (True, False, '<tool_call>{"name": "get_weather", "arguments": {"city": 3}}</tool_call>',
     False),
    (True, True, WEATHER_CALL + "</tool_call>", True),        # after the trigger
    (True, True, "\n" + WEATHER_CALL + "\n</tool_call>\n<tool_call>" + TIME_CALL + "</tool_call>",
     True),
    (False, True, WEATHER_CALL + "</tool_call>\n<tool_call>" + TIME_CALL + "</tool_call>", False),
    (True, True, WEATHER_CALL + "</tool_call> done", False),  # nothing after the last call
])
def test_hermes_call_grammars(parallel, lazy, text, ok):
    if lazy:
        trigger, g = HERMES.lazy_call_grammar(TOOLS, parallel=parallel)
        assert trigger == "<tool_call>"
    else:
        g = HERMES.call_grammar(TOOLS, parallel=parallel)
    m = g.matcher()
    assert (m.accept_bytes(text.encode()) and m.is_accepting()) is ok


def test_hermes_call_grammar_closer_writes_the_closing_tag():
    _, g = HERMES.lazy_call_grammar(TOOLS)
    m = g.matcher()
    assert m.accept_bytes(b'{"name": "get_weather", "arguments": {"ci')
    assert m.completion() == b'ty":""}}</tool_call>'


def test_hermes_call_grammar_needs_tools():
    with pytest.raises(ToolFormatError) as e:
        HERMES.call_grammar([])
    assert e.value.param == "tool_choice"
