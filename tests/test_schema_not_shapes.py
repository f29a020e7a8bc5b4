"""`not` over the shapes real schemas use it for (issue 30, item 4): types (integer among
them: a number with a fraction), items (an array with an element that fails), a oneOf of
disjoint branches, additionalProperties / patternProperties inside an object closed by
`additionalProperties: false`, and keywords of types the context excludes. jsonschema is
the oracle, as in test_schema_oneof_overlap."""
from __future__ import annotations

import json

import pytest

from cengine import CompileError
from test_schema_combinators import (_compile, _validator, check_accepts_only_valid,
                                      check_exact, check_refused)

CASES = [
    ("not-integer", {"not": {"type": "integer"}},
     ["1.5", "-0.25", "1.50", "1e-07", "1.5e-07", '"a"', "null", "[]", "{}", "true"],
     ["1", "-3", "0", "1.0", "100.0", "0.0", "10e-1", "1e5", "0e-5"]),
    ("number-not-integer", {"type": "number", "not": {"type": "integer"}},
     ["0.5", "2.000001", "5e-324"], ["2", "2.0", '"a"', "null"]),
    ("not-integer-or-string", {"not": {"type": ["integer", "string"]}},
     ["0.5", "null", "[1]"], ["1", '"s"']),
    ("not-items", {"not": {"type": "array", "items": {"type": "string"}}},
     ["[1]", '["a", 2]', '[2, "a"]', '["a", "b", null]', "5", "{}"],
     ["[]", '["a"]', '["a", "b"]']),
    # the failing element among a bounded number of them
    ("not-items-bounded", {"not": {"type": "array", "items": {"type": "string"}},
                           "maxItems": 2, "minItems": 2},
     ['[1, "a"]', '["a", 2]', "[1, 2]", "5"], ["[1]", '[1, "a", "b"]', '["a", "b"]', "[]"]),
    ("not-disjoint-oneof", {"not": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
     ["null", "1.5", "[]", "{}"], ['"s"', "3"]),
    ("not-closed-members", {"type": "object", "properties": {"a": {}, "b": {}},
                            "additionalProperties": False,
                            "not": {"properties": {"a": {}}, "additionalProperties": False}},
     ['{"b": 1}', '{"a": 1, "b": 2}'], ["{}", '{"a": 1}', '{"c": 1}']),
    ("not-pattern-properties-closed", {
        "type": "object", "properties": {"x1": {}, "y": {}}, "additionalProperties": False,
        "not": {"patternProperties": {"^x": {"type": "integer"}}}},
     ['{"x1": "s"}', '{"x1": 1.5, "y": 1}'], ["{}", '{"x1": 1}', '{"y": "s"}']),
    ("not-of-other-type-keywords", {"type": "string",
                                    "not": {"items": {"type": "string"}, "minimum": 3}},
     [], ['"a"', "[1]", "5"]),
    ("if-items", {"if": {"items": {"type": "string"}}, "then": {"type": "object"}},
     ['{"c": 1}', "{}", "[1]", '[1, "a"]', '["a", null]'], ['["a"]', "[]", "5", '"s"']),
    ("not-additional-true", {"type": "object",
                             "not": {"additionalProperties": True, "required": ["a"]}},
     ["{}", '{"b": 1}'], ['{"a": 1}', "1"]),
    # a oneOf whose branches overlap: NOT is none of them, or two at once
    ("not-overlapping-oneof", {"not": {"oneOf": [{"type": "object", "required": ["a"]},
                                                 {"type": "object", "required": ["b"]}]}},
     ["{}", '{"a": 1, "b": 2}', "1", '"s"', "[]"], ['{"a": 1}', '{"b": 1}', '{"b": 1, "c": 2}']),
    ("not-overlapping-oneof-3", {"type": "object", "not": {"oneOf": [
        {"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]}},
     ["{}", '{"a": 1, "b": 1}', '{"a": 1, "b": 1, "c": 1}', '{"d": 1}', '{"b": 1, "c": 1}'],
     ['{"a": 1}', '{"c": 1, "d": 1}', "1"]),
    # a branch every document satisfies (a typo, "#ref" for "$ref": Github_easy---o2231):
    # exactly one holds where the other fails
    ("not-oneof-with-empty", {"not": {"oneOf": [{"required": ["a"]}, {}]}},
     ['{"a": 1}', "1", '"s"'], ["{}", '{"b": 1}']),
    ("oneof-with-empty", {"oneOf": [{"properties": {"t": {"type": "array",
                                                          "items": {"type": "string"}}}}, {}]},
     ['{"t": [1]}', '{"t": 5}', '{"t": ["a", 2]}', '{"t": 5, "u": 1}'],
     ["{}", "1", '{"t": []}', '{"t": ["a"]}', '"s"', '{"u": 1}']),
    # nested below the negation depth of before (o2231: containers of containers)
    ("oneof-with-empty-nested", {
        "$defs": {"item": {"properties": {"n": {"type": "string"}}},
                  "three": {"properties": {"items": {"type": "array",
                                                     "items": {"$ref": "#/$defs/item"}}}},
                  "two": {"oneOf": [{"properties": {"threes": {
                      "type": "array", "items": {"$ref": "#/$defs/three"}}}}, {}]}},
        "oneOf": [{"properties": {"twos": {"type": "array",
                                           "items": {"$ref": "#/$defs/two"}}}}, {}]},
     ['{"twos": [{"threes": [{}]}]}', '{"twos": [{"threes": [{"items": [{"n": "x"}]}]}]}',
      '{"twos": [{}]}', '{"twos": [{"threes": []}]}', '{"twos": [1]}', '{"twos": 1}'],
     ["{}", '{"twos": []}', '{"twos": [{"threes": 1}]}',
      '{"twos": [{"threes": [{"items": [{"n": 1}]}]}]}']),
]

REFUSED = [
    ({"type": "number", "not": {"multipleOf": 3}}, "not", "/not"),
    ({"type": "number", "minimum": 0, "not": {"type": "integer"}}, "not", ""),
    # an open object: "a name outside {a}" is no schema
    ({"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": False}},
     "not", "/not"),
    # an element failing items, counted among more elements than MAX_WITNESS_BOUND places
    ({"not": {"type": "array", "items": {"type": "string"}}, "maxItems": 17}, "not", ""),
    # a oneOf of more overlapping branches than its negation names pairs of
    ({"not": {"oneOf": [{"required": [c]} for c in "abcde"]}}, "not", "/not"),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_not_shapes_are_exact(name, schema, good, bad):
    v = _validator(schema)
    if not good:
        with pytest.raises(CompileError):
            _compile(schema)
        assert not any(v.is_valid(json.loads(d)) for d in bad)
        return
    check_exact(_compile(schema), v, good, bad)


@pytest.mark.parametrize("name,schema,good,bad", [c for c in CASES if c[2]],
                         ids=[c[0] for c in CASES if c[2]])
def test_not_shapes_accept_only_valid(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema)


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED,
                         ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_inexact_not_is_refused(schema, keyword, pointer):
    check_refused(_compile, schema, keyword, pointer)
