"""oneOf whose branches are finitely many values (an enum written as a oneOf of consts, each
with its own description): two such branches share a document only through a value in
common, so only those pairs, and the pairs with a branch of no value set, are asked whether
they overlap (negation._one_of); a pair with no value in common is disjoint without a
validation (negation._disjoint). Before, every pair cost a jsonschema validation each way:
500 consts took seconds to compile.

jsonschema is the oracle on each case table; the count of validations is the check that the
pairs are no longer all asked (a count, not a time)."""
from __future__ import annotations

import json

import pytest

import cengine
from cengine.schema import compiler
from test_schema_combinators import _compile, _validator, check_accepts_only_valid, check_exact

# (name, schema, valid documents, invalid documents)
CASES = [
    ("consts", {"oneOf": [{"const": "a", "description": "first"}, {"const": "b"},
                          {"const": 3}]},
     ['"a"', '"b"', "3", "3.0"], ['"c"', "4", "null", "true"]),
    # 1 and 1.0 are one value: valid under both branches, so under neither (oneOf)
    ("equal-numbers", {"oneOf": [{"const": 1}, {"const": 1.0}, {"const": 2}]},
     ["2"], ["1", "1.0", "3"]),
    # true and 1 are two values
    ("true-is-not-one", {"oneOf": [{"const": True}, {"const": 1}]},
     ["true", "1"], ["false", "2"]),
    # a value in two enums is in neither branch
    ("enums-overlap", {"oneOf": [{"enum": ["a", "b"]}, {"enum": ["b", "c"]}, {"const": "d"}]},
     ['"a"', '"c"', '"d"'], ['"b"', '"e"']),
    # objects and arrays compare as JSON (member order aside)
    ("composite-values", {"oneOf": [{"const": {"x": 1, "y": [1, 2]}},
                                    {"const": {"y": [1, 2], "x": 1.0}},
                                    {"const": [1, {"a": None}]}]},
     ['[1, {"a": null}]'], ['{"x": 1, "y": [1, 2]}', '{"y": [1, 2], "x": 1}', "[1]"]),
    # a branch of no value set still meets every value branch it overlaps
    ("values-beside-a-type", {"oneOf": [{"const": "a"}, {"const": "b"}, {"type": "string",
                                                                          "maxLength": 1}]},
     ['"c"', '"z"'], ['"a"', '"b"', '"ab"', "1"]),
    ("values-beside-another-type", {"oneOf": [{"const": 1}, {"const": "x"},
                                              {"type": "boolean"}]},
     ['"x"', "1", "true", "false"], ["2", '"y"', "null"]),
    # many consts, a few repeated
    ("many-consts", {"oneOf": [{"const": f"v{i % 190}"} for i in range(200)]},
     ['"v10"', '"v189"'], ['"v0"', '"v9"', '"v190"']),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_schema_oneof_values_are_exact(name, schema, good, bad):
    check_exact(_compile(schema), _validator(schema), good, bad)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_schema_oneof_values_accept_only_valid(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema, examples=150)


def _validations(schema, monkeypatch) -> int:
    calls = []
    valid = compiler._Compiler._valid_parts

    def counted(self, value, sub):
        calls.append(value)
        return valid(self, value, sub)
    monkeypatch.setattr(compiler._Compiler, "_valid_parts", counted)
    cengine.CACHE.clear()
    cengine.compile_json_schema(schema)
    return len(calls)


@pytest.mark.parametrize("n", [50, 400])
def test_schema_oneof_of_distinct_consts_needs_no_validation(n, monkeypatch):
    schema = {"oneOf": [{"const": f"value {i}", "description": f"the {i}th"} for i in range(n)]}
    assert _validations(schema, monkeypatch) == 0
    g = cengine.compile_json_schema(schema)
    for i in (0, n - 1):
        m = g.matcher()
        assert m.accept_bytes(json.dumps(f"value {i}").encode()) and m.is_accepting()
    assert not g.matcher().accept_bytes(b'"value x"')


def test_schema_oneof_values_beside_an_open_branch_ask_only_it(monkeypatch):
    # each const is asked against the one branch of no value set (both ways), not against
    # the other consts
    n = 100
    schema = {"oneOf": [{"const": i} for i in range(n)] + [{"type": "string"}]}
    assert _validations(schema, monkeypatch) <= 2 * n
