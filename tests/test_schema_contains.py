"""`contains`, with 2019-09's `minContains` / `maxContains` (cengine/schema/compiler.py,
_array_with_contains), and NOT `contains` (cengine/schema/negation.py).

Every case that compiles is checked against jsonschema on a table of documents; the
JSON-Schema-Test-Suite's contains, minContains and maxContains files are enforced files in
tests/test_schema_suite.py.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
from cengine import CompileError

D7 = "http://json-schema.org/draft-07/schema#"

_QUALIFIERS = {"enum": ["const", "inline", "static", "type"]}

EXACT = [
    # clang-format's QualifierOrder: it must name `type`
    {"type": "array", "contains": {"const": "type"}, "items": _QUALIFIERS},
    {"contains": {"type": "string", "minLength": 2}},
    {"contains": {"const": "a"}, "minContains": 2},
    {"contains": {"const": "a"}, "minContains": 3, "items": {"type": "string"}},
    {"contains": {"const": "a"}, "maxContains": 1},
    {"contains": {"enum": ["a", "b"]}, "minContains": 2, "maxContains": 3},
    {"contains": {"const": "a"}, "minContains": 0, "maxContains": 1},
    {"contains": {"const": "a"}, "minContains": 0},                # imposes nothing
    {"contains": {"const": "a"}, "minContains": 2, "minItems": 2},  # implied
    {"contains": {"const": "a"}, "minContains": 2, "maxContains": 1},   # nothing: an array
    {"contains": True},
    {"contains": False},
    {"contains": {"type": "string"}, "items": {"type": "integer"}},     # no witness
    {"not": {"contains": {"const": "a"}}},
    {"not": {"contains": True}},
    {"type": "array", "items": {"type": "string"}, "not": {"contains": {"const": "a"}}},
    {"properties": {"tags": {"type": "array", "contains": {"const": "a"}}}},
    # one witness among minItems / maxItems elements
    {"contains": {"const": "a"}, "minItems": 3},
    {"contains": {"const": "a"}, "maxItems": 2},
    {"contains": {"const": "a"}, "minItems": 2, "maxItems": 3},
    {"contains": {"const": "a"}, "maxItems": 0},
    {"type": "array", "not": {"items": {"type": "string"}}, "minItems": 2, "maxItems": 3},
    # merged: each side's counts, an absent minContains meaning 1
    {"allOf": [{"contains": {"const": "a"}, "minContains": 0}, {"contains": {"const": "a"}}]},
    {"allOf": [{"contains": {"const": "a"}, "minContains": 0, "maxContains": 2},
               {"contains": {"const": "a"}, "maxContains": 1}]},
    {"allOf": [{"contains": {"const": "a"}, "minContains": 2},
               {"contains": {"const": "a"}, "minContains": 3}]},
    {"allOf": [{"contains": {"const": "a"}}, {"minContains": 3}]},     # idle beside no contains
    # draft-07 has no minContains: an annotation there
    {"$schema": D7, "contains": {"const": "a"}, "minContains": 2},
]

DOCS = ['[]', '["a"]', '["b"]', '["a", "a"]', '["a", "b", "a"]', '["b", "a", "b"]',
        '["a", "a", "a"]', '["a", "a", "a", "b"]', '["b", "b"]', '["a", "b", "b", "a", "b"]',
        '[1, "a"]', '[1, 2]', '["type"]', '["const", "type", "inline"]', '["static"]',
        '["x", "type"]', '["type", "type"]', '[[]]', '"a"', '{}', '1', 'null',
        '{"tags": []}', '{"tags": ["b", "a"]}', '{"tags": "a"}']


def _valid(schema, doc: str) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema).is_valid(json.loads(doc))


@pytest.mark.parametrize("schema", EXACT, ids=[json.dumps(s)[:60] for s in EXACT])
def test_contains_is_exact(schema):
    g = cengine.compile_json_schema(schema, closed_objects=False)
    wrong = []
    for doc in DOCS:
        m = g.matcher()
        ours = m.accept_bytes(doc.encode()) and m.is_accepting()
        if ours != _valid(schema, doc):
            wrong.append((doc, ours))
    assert wrong == []


REFUSED = [
    ({"prefixItems": [{}], "contains": {"const": "a"}}, "contains", "/contains",
     "prefixItems"),
    ({"contains": {"const": "a"}, "minContains": 2, "maxItems": 3}, "contains", "/contains",
     "maxItems"),
    ({"contains": {"const": "a"}, "maxContains": 2, "minItems": 3}, "contains", "/contains",
     "minItems"),
    ({"contains": {"const": "a"}, "minItems": 17}, "contains", "", "MAX_WITNESS_BOUND"),
    ({"contains": {"const": "a"}, "uniqueItems": True}, "uniqueItems", "/uniqueItems",
     "'contains'"),
    # the elements that fail contains would be numbers other than 1 (every spelling of it)
    ({"contains": {"const": 1}, "maxContains": 2}, "maxContains", "/maxContains", "'not'"),
    # a witness for contains and another for the NOT of items
    ({"not": {"items": {"const": "a"}}, "contains": {"const": "b"}}, "contains", "/contains",
     "'not' of 'items'"),
    ({"allOf": [{"contains": {"const": "a"}}, {"contains": {"const": "b"}}]}, "allOf",
     "/allOf", "two different 'contains'"),
]


@pytest.mark.parametrize("schema,keyword,pointer,words", REFUSED,
                         ids=[r[3] for r in REFUSED])
def test_contains_refusals_name_keyword_and_pointer(schema, keyword, pointer, words):
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)
    assert words in str(ei.value)
