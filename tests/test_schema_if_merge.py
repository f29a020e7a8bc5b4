"""allOf of several if/then/else (issue 30, item 4): one merged node holds one if/then/else,
each further one is written as anyOf[if AND then, NOT if AND else] where the negation of
`if` can be written (see tests/test_schema_not_shapes.py), the product of alternatives
pruned of pairs proven to share no document; refused otherwise. jsonschema is the oracle:
each table is checked against it first, then the grammar (JSON Schema semantics: open
objects) accepts exactly the valid documents, and hypothesis draws documents near each
schema: every one accepted must be valid."""
from __future__ import annotations

import json

import pytest

import cengine
from test_schema_combinators import (_accepts, _validator, check_accepts_only_valid,
                                      check_exact, check_refused)


def _compile(schema):
    # JSON Schema semantics: open objects, members in any order
    return cengine.compile_json_schema(schema, closed_objects=False, property_order="any")


def _kind(c, then):
    return {"if": {"properties": {"kind": {"const": c}}}, "then": then}


# (name, schema, valid documents, invalid documents)
CASES = [
    # a discriminator: without `kind` every `then` applies (saucectl, schema-app)
    ("discriminator-then", {"type": "object", "allOf": [
        _kind("a", {"required": ["x"]}), _kind("b", {"required": ["y"]}),
        _kind("c", {"properties": {"x": {"type": "string"}}})]},
     ['{"x": "s", "y": 1}', '{"kind": "a", "x": 1}', '{"kind": "b", "y": 1}',
      '{"kind": "c", "x": "s"}', '{"kind": "c"}', '{"kind": "d"}', '{"kind": 1, "x": 2}'],
     ['{}', '{"x": "s"}', '{"x": 1, "y": 1}', '{"kind": "a"}', '{"kind": "a", "y": 1}',
      '{"kind": "b", "x": 1}', '{"kind": "c", "x": 1}', '[]']),
    # if with required, then and else (utam-page-object's action)
    ("required-then-else", {"allOf": [
        {"if": {"required": ["apply"]}, "then": {"not": {"required": ["ext"]}}},
        {"if": {"required": ["ext"]}, "then": {"properties": {"ext": {"type": "object"}}},
         "else": {"required": ["apply"]}}]},
     ['{"apply": 1}', '{"ext": {}}', '{"apply": 1, "x": 2}'],
     ['{}', '{"apply": 1, "ext": {}}', '{"ext": 1}', '{"x": 1}', '"s"', "1"]),
    # a condition of two properties (its negation: either differs)
    ("two-property-condition", {"type": "object", "allOf": [
        {"if": {"properties": {"k": {"const": "a"}, "v": {"const": "1"}}},
         "then": {"required": ["one"]}, "else": {"required": ["other"]}},
        _kind("b", {"required": ["bee"]})]},
     ['{"k": "a", "v": "1", "one": 1, "bee": 1}', '{"k": "a", "v": "2", "other": 1, "bee": 1}',
      '{"k": "b", "other": 1, "kind": "z"}', '{"k": "a", "v": "1", "one": 1, "kind": "c"}'],
     ['{"k": "a", "v": "1", "other": 1, "bee": 1}', '{"k": "b", "one": 1}',
      '{"k": "a", "v": "1", "one": 1}', '{"one": 1, "kind": "b"}']),
    # both conditions can never hold at once beside a required name: pruned, still exact
    ("exclusive-conditions", {"type": "object", "required": ["t"], "allOf": [
        {"if": {"properties": {"t": {"const": "s"}}},
         "then": {"properties": {"v": {"type": "string"}}},
         "else": {"properties": {"v": {"type": "integer"}}}},
        {"if": {"properties": {"t": {"const": "n"}}},
         "then": {"properties": {"v": {"type": "integer"}}},
         "else": {"properties": {"v": {"type": "string"}}}}]},
     ['{"t": "s", "v": "x"}', '{"t": "n", "v": 1}', '{"t": "o"}', '{"t": "s"}'],
     ['{"t": "s", "v": 1}', '{"t": "n", "v": "x"}', '{"t": "o", "v": 1}', '{"t": "o", "v": "x"}',
      '{"v": 1}']),
]

REFUSED = [
    # NOT multipleOf is no schema the compiler writes (NOT pattern is: the first case of
    # test_schema_not_languages's merged ifs)
    ({"allOf": [{"if": {"multipleOf": 2}, "then": {"minimum": 2}},
                {"if": {"multipleOf": 3}, "then": {"minimum": 3}}]}, "allOf", "/allOf"),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_merged_ifs_are_exact(name, schema, good, bad):
    check_exact(_compile(schema), _validator(schema), good, bad)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_merged_ifs_accept_only_valid(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema)


def test_many_discriminated_ifs_compile():
    # ten conditions on one discriminator (saucectl): the product is pruned to the
    # alternatives that can hold, far below the 2**10 pairs
    schema = {"type": "object", "allOf": [_kind(f"k{i}", {"required": [f"p{i}"]})
                                          for i in range(10)]}
    v = _validator(schema)
    g = _compile(schema)
    for d in ['{"kind": "k3", "p3": 1}', '{"kind": "z"}',
              json.dumps({f"p{i}": 1 for i in range(10)})]:
        assert v.is_valid(json.loads(d)) and _accepts(g, d.encode()), d
    for d in ['{"kind": "k3", "p4": 1}', '{"p1": 1}', '{}']:
        assert not v.is_valid(json.loads(d)) and not _accepts(g, d.encode()), d


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED,
                         ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_inexpressible_if_is_refused(schema, keyword, pointer):
    check_refused(_compile, schema, keyword, pointer)
