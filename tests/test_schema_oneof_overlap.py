"""oneOf whose branches may share documents (issue 30, item 4): proven disjoint through the
types of nested anyOf / oneOf and the value schemas of required names, or narrowed exactly
(each branch minus the others, the negations written within the branch's own documents), or
refused. jsonschema is the oracle: each case table is checked against it first, then the
grammar (JSON Schema semantics: open objects) accepts exactly the table's valid documents,
rejects the overlap documents (valid under two branches), and hypothesis draws documents near
each schema: every one accepted must be valid."""
from __future__ import annotations

import json

import pytest

from test_schema_combinators import (_compile, _validator, check_accepts_only_valid,
                                      check_exact, check_refused)

# (name, schema, valid documents, invalid documents: the overlap documents among them)
CASES = [
    # branches without `type`, closed by additionalProperties: false, told apart by an enum:
    # a non-object satisfies all of them, so no non-object is valid (fossa-deps)
    ("untyped-closed-discriminator", {"oneOf": [
        {"properties": {"name": {"type": "string"}, "type": {"enum": ["npm", "gem"]}},
         "required": ["name", "type"], "additionalProperties": False},
        {"properties": {"name": {"type": "string"}, "type": {"enum": ["apk", "deb"]},
                        "arch": {"type": "string"}},
         "required": ["name", "type", "arch"], "additionalProperties": False}]},
     ['{"name": "a", "type": "npm"}', '{"name": "a", "type": "deb", "arch": "x"}'],
     ['"x"', "1", "null", "[]", "{}", '{"name": "a", "type": "deb"}',
      '{"name": "a", "type": "npm", "arch": "x"}', '{"name": "a", "type": "rpm"}']),
    # the same required names, values of different types (a port as a number or a range)
    ("required-value-types", {"oneOf": [
        {"type": "string"},
        {"type": "object", "additionalProperties": False, "required": ["local"],
         "properties": {"local": {"type": "integer"}, "protocol": {"type": "string"}}},
        {"type": "object", "additionalProperties": False, "required": ["local"],
         "properties": {"local": {"type": "string"}, "protocol": {"type": "string"}}}]},
     ['"80:80"', '{"local": 80}', '{"local": "80-81", "protocol": "tcp"}'],
     ['{"local": null}', '{"local": 1, "x": 2}', "{}", "1"]),
    # a required name the other branches' patternProperties make null
    ("pattern-properties-null", {"oneOf": [
        {"type": "object", "properties": {"mbox": {"type": "string"}},
         "patternProperties": {"^(sha|openid)$": {"type": "null"}}, "required": ["mbox"]},
        {"type": "object", "properties": {"sha": {"type": "string"}},
         "patternProperties": {"^(mbox|openid)$": {"type": "null"}}, "required": ["sha"]}]},
     ['{"mbox": "m"}', '{"sha": "s"}', '{"mbox": "m", "sha": null}', '{"mbox": "m", "x": 1}'],
     ['{"mbox": "m", "sha": "s"}', '{"mbox": null, "sha": null}', "{}", '{"openid": null}']),
    # two closed objects: {} is in both (the overlap), a name of each in neither
    ("closed-objects-overlap", {"type": "object", "oneOf": [
        {"additionalProperties": False, "properties": {"key": {"type": "string"}}},
        {"additionalProperties": False,
         "properties": {"keys": {"type": "array", "items": {"type": "string"}}}}]},
     ['{"key": "a"}', '{"keys": []}', '{"keys": ["a", "b"]}'],
     ["{}", '{"key": "a", "keys": []}', '{"key": 1}', '{"other": 1}']),
    # arrays: [] has every element of both (the overlap)
    ("items-overlap", {"oneOf": [{"type": "array", "items": {"type": "number"}},
                                 {"type": "array", "items": {"type": "array",
                                                             "items": {"type": "number"}}}]},
     ["[1]", "[1, 2.5]", "[[1]]", "[[]]", "[[1], [2, 3]]"],
     ["[]", "[1, [2]]", '["a"]', "{}"]),
    # open objects with different required names; an integer property's negation is a
    # number with a fraction (or another type)
    ("open-required-integer", {"type": "object", "oneOf": [
        {"properties": {"a": {"type": "string"}, "b": {"type": "string"}},
         "required": ["a", "b"]},
        {"properties": {"c": {"type": "integer", "minimum": 900}}, "required": ["c"]},
        {"properties": {"n": {"type": "string"}}, "required": ["n"]}]},
     ['{"a": "x", "b": "y"}', '{"c": 900}', '{"a": "x", "b": "y", "c": 1.5}',
      '{"a": "x", "b": "y", "c": "s"}', '{"a": "x", "b": "y", "c": 5}', '{"n": "s", "c": 1}',
      '{"c": 901, "a": "x"}', '{"a": "x", "b": "y", "n": 1}'],
     ['{"a": "x", "b": "y", "c": 900}', '{"c": 900, "n": "s"}', "{}", '{"a": "x"}',
      '{"c": 899}', '{"a": "x", "b": "y", "n": "s"}']),
    # a branch referring to a oneOf of other types (colorResource: a definition or a
    # selector object)
    ("nested-oneof-types", {
        "$defs": {"definition": {"oneOf": [{"type": "array", "items": {"type": "number"}},
                                           {"type": "string", "maxLength": 3}]},
                  "selector": {"oneOf": [{"type": "object", "required": ["ref"]},
                                         {"type": "object", "required": ["inherit"]}]}},
        "oneOf": [{"$ref": "#/$defs/definition"}, {"$ref": "#/$defs/selector"}]},
     ['"red"', "[1, 2]", '{"ref": 1}', '{"inherit": true}'],
     ['"long"', '{"ref": 1, "inherit": true}', "{}", "null"]),
    # the negation of a property whose schema is a oneOf of disjoint branches
    ("negated-disjoint-oneof", {"type": "object", "oneOf": [
        {"required": ["k"], "properties": {"k": {"oneOf": [{"type": "string"},
                                                           {"type": "integer"}]}}},
        {"required": ["j"]}]},
     ['{"k": "s"}', '{"k": 1}', '{"j": 1}', '{"k": null, "j": 1}', '{"k": [], "j": 1}'],
     ['{"k": "s", "j": 1}', '{"k": 2, "j": null}', "{}", '{"k": null}']),
    # additionalProperties: true and `{}` values need no negation
    ("open-true-additional", {"type": "object", "oneOf": [
        {"required": ["terms"], "additionalProperties": True},
        {"required": ["include"], "properties": {"include": {"type": "string"}},
         "additionalProperties": False}]},
     ['{"terms": 1}', '{"terms": 1, "x": 2}', '{"include": "f"}', '{"terms": 1, "include": 2}'],
     ['{"include": 1}', '{"include": "f", "x": 1}', "{}"]),
    # the other branch's schema of a member is the branch's own (GeoJSON's bbox): every
    # document of the branch satisfies it, its negation there is empty (items beside
    # minItems would be refused)
    ("implied-member-schema", {"type": "object", "oneOf": [
        {"required": ["a"], "properties": {"bb": {"type": "array", "minItems": 2,
                                                  "items": {"type": "number"}}}},
        {"required": ["g"], "properties": {"bb": {"type": "array", "minItems": 2,
                                                  "items": {"type": "number"}}}}]},
     ['{"a": 1}', '{"g": 1}', '{"bb": [1, 2], "a": 1}', '{"bb": [1, 2, 3], "g": []}'],
     ['{"a": 1, "g": 1}', '{"bb": [1, 2], "a": 1, "g": 1}', '{"bb": [1], "a": 1}', "{}",
      '{"bb": [1, 2], "g": 1, "a": 1}']),
]

REFUSED = [
    # NOT multipleOf is no schema the compiler writes (NOT pattern and NOT format are:
    # test_schema_not_languages)
    ({"oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 3}]},
     "oneOf", "/oneOf"),
    ({"type": "integer", "oneOf": [{"multipleOf": 2}, {"minimum": 3}]}, "oneOf", "/oneOf"),
    # "a name outside {a}" in an open object is no schema either
    ({"type": "object", "oneOf": [{"properties": {"a": {}}, "additionalProperties": False},
                                  {"properties": {"b": {"type": "integer"}}}]},
     "oneOf", "/oneOf"),
    # an array with an element that fails `items`, beside a maxItems past MAX_WITNESS_BOUND
    ({"type": "array", "maxItems": 17, "oneOf": [{"items": {"type": "number"}},
                                                {"items": {"type": "integer"}}]},
     "oneOf", "/oneOf"),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_overlapping_oneof_is_exact(name, schema, good, bad):
    check_exact(_compile(schema), _validator(schema), good, bad)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_overlapping_oneof_accepts_only_valid(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema)


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED,
                         ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_inexact_overlap_is_refused(schema, keyword, pointer):
    check_refused(_compile, schema, keyword, pointer)
