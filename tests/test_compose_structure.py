"""Grammar composition (cengine.compile_structural): what each part and each combination
accepts, byte for byte, and the cache keyed by the structured source."""
from __future__ import annotations

import pytest

import cengine
from cengine import (Concat, Gbnf, JsonSchema, OneOf, Regex, Repeat, Tagged, Text,
                     TriggeredRegion)

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}},
        "required": ["city"]}
YES_NO = 'root ::= "yes" | "no" ("!")?'


def accepts(g: cengine.Grammar, text: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(text.encode("utf-8")) and m.is_accepting()


@pytest.mark.parametrize("part, good, bad", [
    (Text("<a>"), ["<a>"], ["", "<a", "<a> "]),
    (Text(""), [""], ["x"]),
    (JsonSchema(CITY), ['{"city": "Oslo"}', '{"city":"x"}'],
     ['{"city": "Longname"}', '{}', ' {"city": "x"}', '{"city": 1}']),
    (JsonSchema('{"type": "integer", "minimum": 3}'), ["3", "40"], ["2", "3.5", '"3"']),
    (Gbnf(YES_NO), ["yes", "no", "no!"], ["yes!", "maybe", ""]),
    (Gbnf('start ::= "s" digit+\ndigit ::= [0-9]', root="start"), ["s1", "s42"], ["s", "1"]),
    (Regex("[a-c]{2,3}"), ["ab", "abc"], ["a", "abcd", "d"]),
    (Concat("f(", Regex("[0-9]+"), ")"), ["f(1)", "f(123)"], ["f()", "f(1", "(1)"]),
    (OneOf("a", JsonSchema({"const": 1}), Gbnf(YES_NO)), ["a", "1", "yes"], ["b", "2", "a1"]),
    (OneOf("only"), ["only"], ["", "onl"]),
    (Repeat("x", 2, 3), ["xx", "xxx"], ["x", "xxxx", ""]),
    (Repeat("x", 0, None, separator=","), ["", "x", "x,x,x"], [",", "x,", "xx"]),
    (Repeat(Regex("[0-9]"), 1, 2, separator=Text(" + ")), ["1", "1 + 2"], ["", "1 + 2 + 3"]),
    (Repeat("x", 0, 0), [""], ["x"]),
    (Tagged("<n>", JsonSchema({"type": "integer"}), "</n>"), ["<n>7</n>", "<n>-1</n>"],
     ["<n></n>", "7", "<n>7"]),
    (OneOf(Tagged("<a>", JsonSchema({"const": "x"}), "</a>"),
           Tagged("<b>", JsonSchema({"type": "boolean"}), "</b>")),
     ['<a>"x"</a>', "<b>true</b>"], ['<a>true</a>', '<b>"x"</b>', '<a>"x"</b>']),
    # a TriggeredRegion compiled whole: regions from the first byte, no free text
    (TriggeredRegion("<c>", JsonSchema({"type": "integer"}), "</c>"),
     ["<c>1</c>"], ["text <c>1</c>", "<c>1</c><c>2</c>", "<c>1"]),
    (TriggeredRegion("<c>", JsonSchema({"type": "integer"}), "</c>", repeat=True, separator="\n"),
     ["<c>1</c>", "<c>1</c>\n<c>2</c>\n<c>3</c>"],
     ["<c>1</c><c>2</c>", "<c>1</c>\n", "<c>1</c> x"]),
])
def test_compose_structure_language(part, good, bad):
    g = cengine.compile_structural(part)
    for text in good:
        assert accepts(g, text), text
    for text in bad:
        assert not accepts(g, text), text


def test_compose_structure_plain_string_is_text():
    assert accepts(cengine.compile_structural("hello"), "hello")
    assert Concat("a", "b") == Concat(Text("a"), Text("b"))


def test_compose_structure_cached_by_source():
    a = cengine.compile_structural(Concat("x=", JsonSchema(CITY)))
    b = cengine.compile_structural(Concat("x=", JsonSchema(dict(CITY))))
    assert a is b
    assert cengine.compile_structural(Concat("y=", JsonSchema(CITY))) is not a
    # the limits are part of the key
    assert cengine.compile_structural(Concat("x=", JsonSchema(CITY)), whitespace_budget=0) is not a


def test_compose_structure_keeps_declared_property_order():
    ab = {"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2}},
          "required": ["a", "b"]}
    ba = {"type": "object", "properties": {"b": {"const": 2}, "a": {"const": 1}},
          "required": ["a", "b"]}
    assert JsonSchema(ab) != JsonSchema(ba)       # the key is the JSON text, never sorted
    for schema, first in ((ab, b'"a"'), (ba, b'"b"')):
        done = cengine.compile_structural(JsonSchema(schema)).matcher().completion()
        assert done.index(first) == 1, done     # `{` then the first declared property


def test_compose_structure_parts_are_immutable_snapshots():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    part = JsonSchema(schema)
    schema["properties"]["n"] = {"type": "string"}        # the caller changes its dict later
    assert accepts(cengine.compile_structural(part), '{"n": 1}')
    with pytest.raises(AttributeError):
        part.schema = {}
    with pytest.raises(AttributeError):
        Text("a").text = "b"
    assert hash(Tagged("<", "x", ">")) == hash(Tagged("<", Text("x"), ">"))


def test_compose_structure_grammar_rules_do_not_collide():
    # two GBNF parts with the same rule names, beside a schema: each keeps its own rules
    g = cengine.compile_structural(Concat(Gbnf('root ::= "a" x\nx ::= "1"'), "|",
                                          Gbnf('root ::= "b" x\nx ::= "2"'), "|",
                                          JsonSchema({"type": "string", "maxLength": 1})))
    assert accepts(g, 'a1|b2|"z"')
    assert not accepts(g, 'a2|b1|"z"')
