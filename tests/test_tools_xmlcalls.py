"""The XML-parameter tool-call dialects (server/tools/qwen3_xml.py, glm.py, minimax.py and
their shared _xmlargs.py): the reader on whole texts and fed one character at a time, broken
calls and unknown tools staying text, the grammar's accepted and refused texts, the closer
finishing any cut of a call into a call that validates, the raw-string grammar against its
definition, and the schemas each refuses by keyword."""
from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import cengine
from server.tools import ToolFormatError, ToolSpec, get_dialect
from server.tools import _xmlargs as X
from server.tools.base import RegionReader
from tool_text import parse_output

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string"},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city"]}
ORDER = {"type": "object",
         "properties": {"item": {"type": "string", "minLength": 2, "maxLength": 5},
                        "qty": {"type": "number"},
                        "urgent": {"type": "boolean"},
                        "size": {"enum": ["S", "M"]},
                        "note": {"type": ["string", "null"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "color": {"$ref": "#/$defs/color"},
                        "box": {"$ref": "#/$defs/box"}},
         "required": ["item", "qty"],
         "$defs": {"color": {"type": "string", "enum": ["red", "blue"]},
                   "box": {"type": "object", "properties": {"w": {"type": "integer"}},
                           "required": ["w"]}}}
SCHEMAS = {"get_weather": WEATHER, "place_order": ORDER,
           "ping": {"type": "object", "properties": {}}}
SPECS = [ToolSpec(n, "", s) for n, s in SCHEMAS.items()]
DIALECTS = ["qwen3_xml", "glm", "minimax"]

# calls each dialect must write, accept and read back (arguments in declared order)
CALLS = [
    ("get_weather", {"city": "Paris", "days": 2}),
    ("get_weather", {"city": "Saint-Denis\n</par <tool_call> \"q\" </arg_key>"}),
    ("get_weather", {"city": ""}),
    ("place_order", {"item": "ab", "qty": 2.5, "urgent": True, "size": "M", "note": None,
                     "tags": ["x", "</parameter>", "</arg_value>"], "color": "red",
                     "box": {"w": 3}}),
    ("place_order", {"item": "héllo", "qty": -1, "urgent": False, "note": "text"}),
    ("ping", {}),
]


def _d(name):
    return get_dialect(name)


def _valid(name, args):
    jsonschema.validate(args, SCHEMAS[name])


def _text(d, calls):
    """Calls as the model writes them under the grammar: the dialect's call text, the
    mixed-type property as JSON (the one place where the grammar and the template differ)."""
    parts = []
    for name, args in calls:
        args = {k: (json.dumps(v) if k == "note" else v) for k, v in args.items()}
        parts.append(d.call_text(name, args))
    if d.name == "minimax":     # the calls of one turn share one block
        inner = [p[len(d.trigger_text) + 1:-len("</minimax:tool_call>")] for p in parts]
        return d.trigger_text + "\n" + "".join(inner) + "</minimax:tool_call>"
    return "\n".join(parts)


# --- the reader --------------------------------------------------------------------------------

@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("call", CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)])
def test_one_call_reads_back(dialect, call):
    d = _d(dialect)
    text, calls = parse_output(d, _text(d, [call]), SPECS)
    assert [(c.name, c.arguments) for c in calls] == [call], text
    assert text == ""
    _valid(*call)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_calls_fed_one_character_at_a_time(dialect):
    d = _d(dialect)
    out = "Let me check. " + _text(d, CALLS)
    reader = RegionReader(d, SPECS)
    events = []
    for ch in out:
        events += reader.feed(ch)
    events += reader.finish()
    text = "".join(v for k, v in events if k == "text")
    calls = [(v.name, v.arguments) for k, v in events if k == "call"]
    assert calls == CALLS
    assert text.strip() == "Let me check."


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_call_is_released_once_whole(dialect):
    d = _d(dialect)
    out = _text(d, CALLS[:2])
    reader = RegionReader(d, SPECS)
    first = d.call_text(*CALLS[0])
    first_end = len(first) - (len("</minimax:tool_call>") if dialect == "minimax" else 0)
    released_at = None
    for i, ch in enumerate(out):
        if any(k == "call" for k, _ in reader.feed(ch)):
            released_at = i + 1
            break
    assert released_at == first_end


BROKEN = {
    "qwen3_xml": [
        "<tool_call>\n<function=get_weather>\n<parameter=town>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",                                   # undeclared parameter
        "<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n"
        "</function>\n</tool_call>",                                   # required one missing
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n"
        "<parameter=city>\nB\n</parameter>\n</function>\n</tool_call>",  # repeated
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n"
        "<parameter=days>\ntwo\n</parameter>\n</function>\n</tool_call>",  # not JSON
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n"
        "</tool_call>",                                                # no </function>
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "A"}}\n</tool_call>',
    ],
    "glm": [
        "<tool_call>get_weather\n<arg_key>town</arg_key>\n<arg_value>Paris</arg_value>\n"
        "</tool_call>",
        "<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n"
        "</tool_call>",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>A</arg_value>"
        "<arg_key>city</arg_key><arg_value>B</arg_value></tool_call>",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>A</arg_value>"
        "<arg_key>days</arg_key><arg_value>two</arg_value></tool_call>",
        "<tool_call>get_weather<arg_value>A</arg_value></tool_call>",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>',
    ],
    "minimax": [
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="town">Paris'
        '</parameter>\n</invoke>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="days">2'
        '</parameter>\n</invoke>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">A'
        '</parameter>\n<parameter name="city">B</parameter>\n</invoke>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">A'
        '</parameter>\n<parameter name="days">two</parameter>\n</invoke>\n'
        '</minimax:tool_call>',
        '<minimax:tool_call>\n<call name="get_weather">\n</call>\n</minimax:tool_call>',
        '<minimax:tool_call>\n{"name": "get_weather"}\n</minimax:tool_call>',
    ],
}
UNKNOWN = {
    "qwen3_xml": "<tool_call>\n<function=rm_rf>\n<parameter=city>\nA\n</parameter>\n"
                 "</function>\n</tool_call>",
    "glm": "<tool_call>rm_rf\n<arg_key>city</arg_key>\n<arg_value>A</arg_value>\n</tool_call>",
    "minimax": '<minimax:tool_call>\n<invoke name="rm_rf">\n<parameter name="city">A'
               '</parameter>\n</invoke>\n</minimax:tool_call>',
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_broken_calls_and_unknown_tools_stay_text(dialect):
    d = _d(dialect)
    for bad in BROKEN[dialect] + [UNKNOWN[dialect]]:
        for feed_chars in (False, True):
            reader = RegionReader(d, SPECS)
            events = []
            for piece in (bad if feed_chars else [bad]):
                events += reader.feed(piece)
            events += reader.finish()
            assert not [v for k, v in events if k == "call"], bad
            assert "".join(v for k, v in events if k == "text") == bad


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unfinished_call_is_text_at_the_end(dialect):
    d = _d(dialect)
    whole = d.call_text(*CALLS[0])
    for cut in (len(d.trigger_text) + 3, len(whole) // 2):
        text, calls = parse_output(d, "Hi " + whole[:cut], SPECS)
        assert calls == [] and text == "Hi " + whole[:cut]


def test_minimax_a_good_invoke_stands_before_a_broken_one():
    d = _d("minimax")
    good = d.call_text(*CALLS[0])[:-len("</minimax:tool_call>")]
    bad = '<invoke name="rm_rf">\n</invoke>\n</minimax:tool_call>'
    text, calls = parse_output(d, good + bad, SPECS)
    assert [(c.name, c.arguments) for c in calls] == [CALLS[0]]
    assert text == bad


# --- the grammar ---------------------------------------------------------------------------------

def _accepts(grammar, text: str) -> bool:
    m = grammar.matcher()
    return m.accept_bytes(text.encode()) and m.is_accepting()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_grammar_accepts_every_call_and_their_sequence(dialect):
    d = _d(dialect)
    g = d.call_grammar(SPECS)
    for call in CALLS:
        assert _accepts(g, _text(d, [call])), call
    assert _accepts(g, _text(d, CALLS))
    single = d.call_grammar(SPECS, parallel=False)
    assert _accepts(single, _text(d, CALLS[:1]))
    assert not _accepts(single, _text(d, CALLS[:2]))


def _swap(d, call, old, new):
    text = _text(d, [call])
    assert old in text, (old, text)
    return text.replace(old, new, 1)


REFUSED = [
    # (call, text in it, replacement): each result breaks the schema or the form
    (CALLS[0], "Paris", "Par\n</parameter>is"),      # the closing text inside a raw string
    (CALLS[0], "2", "9"),                            # above maximum
    (CALLS[0], "2", "2.0"),                          # not an integer
    (CALLS[0], "2", '"2"'),                          # a string where an integer is asked
    (CALLS[3], "ab", "a"),                           # under minLength (code points)
    (CALLS[3], "ab", "abcdef"),                      # over maxLength
    (CALLS[3], "M", "L"),                            # not in the enum
    (CALLS[3], "red", "green"),                      # not in the $ref'd enum
    (CALLS[3], '{"w": 3}', '{"w": "3"}'),            # the $ref'd object's property type
    (CALLS[3], "null", '"null'),                     # an unfinished JSON string
    (CALLS[4], '"text"', "text"),                    # a string or null is written as JSON
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_grammar_refuses(dialect, case):
    d = _d(dialect)
    call, old, new = REFUSED[case]
    if dialect == "glm" and "</parameter>" in new:
        new = new.replace("\n</parameter>", "</arg_value>")
    if dialect == "minimax" and "</parameter>" in new:
        new = new.replace("\n</parameter>", "</parameter>")
    assert not _accepts(d.call_grammar(SPECS), _swap(d, call, old, new))


def test_grammar_refuses_framing_variants():
    q, g, m = _d("qwen3_xml"), _d("glm"), _d("minimax")
    qg, gg, mg = q.call_grammar(SPECS), g.call_grammar(SPECS), m.call_grammar(SPECS)
    ok_q = q.call_text(*CALLS[0])
    assert not _accepts(qg, ok_q.replace("<parameter=city>\n", "<parameter=city>"))
    assert not _accepts(qg, ok_q.replace("</function>\n", "</function>"))
    assert not _accepts(qg, ok_q.replace("get_weather", "get_time"))
    assert _accepts(qg, ok_q + ok_q)                          # StepFun: no newline between
    assert not _accepts(qg, ok_q + "\n\n" + ok_q)
    ok_g = g.call_text(*CALLS[0])
    assert _accepts(gg, ok_g.replace("\n", ""))               # GLM-4.7's spelling
    assert not _accepts(gg, ok_g.replace("\n", "\n\n"))
    assert not _accepts(gg, ok_g.replace("get_weather", "get_weather "))
    ok_m = m.call_text(*CALLS[0])
    assert not _accepts(mg, ok_m.replace("\n<invoke", "<invoke"))
    assert not _accepts(mg, ok_m.replace('name="city"', "name='city'"))
    two = m.call_text(*CALLS[0]) + m.call_text(*CALLS[0])     # two blocks: one block per turn
    assert not _accepts(mg, two)


def test_qwen_takes_python_spellings_of_booleans_only_where_the_template_writes_them():
    d = _d("qwen3_xml")
    g = d.call_grammar(SPECS)
    text = _text(d, [CALLS[3]])
    assert "\nTrue\n" in text and "<parameter=note>\nnull\n" in text
    assert _accepts(g, text)
    assert _accepts(g, text.replace("\nTrue\n", "\ntrue\n"))
    # note is string-or-null: written as JSON, so None (Python) is not its spelling
    assert not _accepts(g, text.replace("<parameter=note>\nnull", "<parameter=note>\nNone"))
    _, calls = parse_output(d, text.replace("\nTrue\n", "\nFalse\n"), SPECS)
    assert calls[0].arguments["urgent"] is False


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_closer_finishes_every_cut_into_a_valid_call(dialect):
    d = _d(dialect)
    text = _text(d, [CALLS[3], CALLS[1]])
    g = d.call_grammar(SPECS)
    for cut in range(len(text.encode()) + 1):
        m = g.matcher()
        head = text.encode()[:cut]
        assert m.accept_bytes(head)
        whole = head + m.completion()
        rest, calls = parse_output(d, whole.decode("utf-8"), SPECS)
        assert calls and rest == "", (cut, whole)
        for c in calls:
            _valid(c.name, c.arguments)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_lazy_grammar_after_free_text(dialect):
    d = _d(dialect)
    trigger, lazy = d.lazy_call_grammar(SPECS)
    text = _text(d, CALLS[:2])
    assert text.startswith(d.trigger_text)
    assert _accepts(lazy, text[len(d.trigger_text):])


# --- raw strings ---------------------------------------------------------------------------------

@pytest.mark.parametrize("closer", ["\n</p>", "</a>", "aab", "x"])
@pytest.mark.parametrize("bounds", [(0, None), (0, 3), (2, 4), (3, None), (5, 5)])
def test_raw_text_is_every_string_without_the_closer(closer, bounds):
    lo, hi = bounds
    g = cengine.compile_structural(cengine.Gbnf(X.raw_text_gbnf(closer, lo, hi)))
    alphabet = sorted(set(closer) | {"z", "é"})
    for n in range(0, 7):
        for chars in itertools.product(alphabet, repeat=n):
            s = "".join(chars)
            want = closer not in s and lo <= len(s) and (hi is None or len(s) <= hi)
            assert _accepts(g, s) == want, (closer, bounds, s)


# --- what is refused -----------------------------------------------------------------------------

def _tool(params):
    return [ToolSpec("t", "", {"type": "object", "properties": params})]


REFUSALS = [
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "additionalProperties": True}, "additionalProperties"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
    ({"oneOf": [{"type": "object"}, {"type": "object"}]}, "oneOf"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{}]}, "anyOf"),
    ({"type": "object", "minProperties": 1}, "minProperties"),
    ({"type": "array"}, "type"),
    ({"type": "object", "required": ["b"], "properties": {"a": {}}}, "required"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}, "pattern"),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "date"}}}, "format"),
    ({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{}]}}}, "anyOf"),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 4000}}},
     "maxLength"),
    ({"type": "object", "properties": {"a": {"type": "string", "minLength": 4000}}},
     "minLength"),
    ({"type": "object", "properties": {"a": {"type": "object",
                                             "properties": {"b": {"$ref": "#"}}}}}, "$ref"),
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("schema,keyword", REFUSALS, ids=[k for _, k in REFUSALS])
def test_refused_naming_the_keyword(dialect, schema, keyword):
    with pytest.raises(ToolFormatError) as e:
        _d(dialect).call_grammar([ToolSpec("t", "", schema)])
    assert f"'{keyword}'" in e.value.message and e.value.param == "tools"


@pytest.mark.parametrize("dialect,closer", [("qwen3_xml", "\n</parameter>"),
                                            ("glm", "</arg_value>"),
                                            ("minimax", "</parameter>")])
def test_an_enum_value_holding_the_closing_text_is_refused(dialect, closer):
    d = _d(dialect)
    with pytest.raises(ToolFormatError) as e:
        d.call_grammar(_tool({"a": {"enum": ["ok", "x" + closer]}}))
    assert "'enum'" in e.value.message
    # the same text is fine where it is not the closing text
    other = {"qwen3_xml": "</arg_value>", "glm": "</parameter>", "minimax": "</arg_value>"}
    d.call_grammar(_tool({"a": {"enum": ["ok", "x" + other[dialect]]}}))


@pytest.mark.parametrize("dialect,name", [("qwen3_xml", "a>b"), ("glm", "a<b"),
                                          ("minimax", 'a"b')])
def test_names_holding_framing_are_refused(dialect, name):
    with pytest.raises(ToolFormatError):
        _d(dialect).call_grammar(_tool({name: {"type": "string"}}))
    with pytest.raises(ToolFormatError):
        _d(dialect).call_grammar([ToolSpec(name, "", {"type": "object"})])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_what_is_not_refused(dialect):
    d = _d(dialect)
    ok = [{"type": "object", "properties": {"a": {"type": "string", "format": "int32"}},
           "additionalProperties": False, "title": "x", "$schema":
           "https://json-schema.org/draft/2020-12/schema"},
          {"properties": {"a": {}, "b": True, "c": False}},
          {"type": "object"}, True,
          {"type": "object", "properties": {"a": {"type": "string", "maxLength": 300}}},
          {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"},
                                                           {"type": "integer"}]}}}]
    for schema in ok:
        d.call_grammar([ToolSpec("t", "", schema)])
