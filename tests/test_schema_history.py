"""A schema compiles to the same grammar IR and the same ignored keywords whatever the process
compiled before it and whatever its string hash seed.

The compiler keeps caches across compiles (number automata, key DFAs, free-key parts, pattern
grammars, value rules) and reads some facts in set order (oneOf branches proven apart by a
discriminator). Checked here:
* case table: the ignored keywords of nodes that a rewrite (oneOf as anyOf, not, if/then/else)
  or an analysis (oneOf branches and their discriminators) reads under a pointer of its own
  are reported at their place in the document;
* each schema of a table that shares cached parts (patterns, names, number bounds, formats)
  is compiled first in a fresh process, then after all the others, under several hash seeds:
  rules (names, expressions, flags) and ignored keywords are the same every time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cengine.schema import schema_to_ir

# oneOf branches told apart by `kind`; `a` and `b` carry unknown keywords. Which required name
# _disjoint read first used to follow the set's order (the hash seed), and with it whether
# `a` was read (its keyword then reported at a wrong pointer) before `kind` proved the
# branches apart
DISCRIMINATED = {"type": "object", "oneOf": [
    {"properties": {"a": {"type": "string", "_format": "x"}, "b": {"type": "integer"},
                    "kind": {"const": "one"}, "c": {"type": "string"}},
     "required": ["a", "b", "c", "kind"]},
    {"properties": {"a": {"type": "string"}, "b": {"type": "integer", "units": "m"},
                    "kind": {"const": "two"}, "c": {"type": "string"}},
     "required": ["c", "kind", "b", "a"]}]}

IGNORED_CASES = [
    ({"oneOf": [{"type": "string", "foo": 1}, {"type": "integer"}]}, {("foo", "/oneOf/0/foo")}),
    ({"not": {"type": "string", "baz": 1}}, {("baz", "/not/baz")}),
    ({"if": {"type": "string", "q": 1}, "then": {"w": 1}, "else": {"e": 1}},
     {("q", "/if/q"), ("w", "/then/w"), ("e", "/else/e")}),
    ({"allOf": [{"type": "string", "q": 1}]}, {("q", "/allOf/0/q")}),
    ({"anyOf": [{"type": "string", "q": 1}, {"type": "null"}]}, {("q", "/anyOf/0/q")}),
    ({"$defs": {"d": {"type": "string", "z": 1}}, "oneOf": [{"$ref": "#/$defs/d"},
                                                            {"type": "integer"}]},
     {("z", "/$defs/d/z")}),
    (DISCRIMINATED, {("_format", "/oneOf/0/properties/a/_format"),
                     ("units", "/oneOf/1/properties/b/units")}),
]


@pytest.mark.parametrize("schema,expected", IGNORED_CASES)
def test_schema_history_ignored_keywords_at_their_place(schema, expected):
    g = schema_to_ir(schema, closed_objects=False)
    got = [(k.keyword, k.pointer) for k in g.ignored_keywords]
    assert set(got) == expected
    assert len(got) == len(set(got))


# schemas that share what the caches hold: the same pattern, names, bounds and formats
SHARED = [
    DISCRIMINATED,
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"},
                                      "n": {"type": "number", "exclusiveMinimum": 0}},
     "patternProperties": {"^x-[a-z]+$": {"type": "integer", "minimum": 1}},
     "additionalProperties": {"type": "string", "format": "date"}},
    {"type": "object", "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 64,
                                             "pattern": "^[a-z0-9_-]+$"},
                                      "when": {"type": "string", "format": "date-time"},
                                      "n": {"type": "integer", "minimum": 1, "maximum": 100}},
     "required": ["id"], "additionalProperties": {"type": "integer", "minimum": 1}},
    {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "number",
                                                                      "exclusiveMinimum": 0}},
     "patternProperties": {"^x-[a-z]+$": {"type": "integer", "minimum": 1}},
     "additionalProperties": False, "dependentRequired": {"n": ["id"]}},
    {"type": "array", "items": {"enum": ["one", "two", 3, {"k": [1, 2]}], "units": "m"},
     "maxItems": 3},
]

# a child process compiles the plan's (schema index, property order) pairs in turn and prints
# each IR: rules (name, expression, flags), then the ignored keywords
_CHILD = r"""
import json, sys
from cengine.schema import schema_to_ir
schemas, plan = json.loads(sys.stdin.read())
out = []
for i, order in plan:
    g = schema_to_ir(schemas[i], closed_objects=False, whitespace_budget=None,
                     property_order=order)
    out.append([[n, repr(r.expr), r.container, r.whitespace] for n, r in g.rules.items()] +
               [repr(g.ignored_keywords)])
print(json.dumps(out))
"""


def _compile_in_child(plan, seed: int) -> list:
    root = Path(__import__("cengine").__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONHASHSEED=str(seed),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([SHARED, plan]),
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_schema_history_alone_and_after_others_agree():
    # alone: each schema first in a fresh process (declared order, then any), hash seeds
    # differing; then every schema in both orders after all the others, forwards and back
    pairs = [(i, order) for i in range(len(SHARED)) for order in ("declared", "any")]
    alone = {}
    for i in range(len(SHARED)):
        plan = [(i, "declared"), (i, "any")]
        alone.update(zip(plan, _compile_in_child(plan, seed=i + 1)))
    for seed, plan in ((11, pairs), (12, pairs[::-1])):
        for pair, ir_text in zip(plan, _compile_in_child(plan, seed)):
            assert ir_text == alone[pair], (seed, pair)
