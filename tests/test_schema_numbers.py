"""Numeric keywords (minimum, maximum, exclusive*, multipleOf): case tables, and hypothesis
checks that the automaton accepts a spelling exactly when it is valid.

"Valid" is both readings the compiler promises (cengine/schema/numbers.py): jsonschema on the
parsed value (a spelling with '.' is a double) and the specification's exact decimal value.
multipleOf with a non-integer divisor is checked exactly (jsonschema divides doubles, see
docs/json-schema.md). Documented spellings: no exponent; with '.', an integer stays within
+-2**53; under an integral multipleOf (any multipleOf on an integer) no '.' at all.
"""
from __future__ import annotations

import json
import random
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators

import cengine
from cengine import CompileError, LimitError
from cengine.schema.numbers import MAX_MODULUS
from cengine.schema import schema_to_ir
from walks import walk_allowed


def _spec(v) -> Fraction:
    return Fraction(v) if isinstance(v, int) else Fraction(Decimal(repr(v)))


def _exact_multiple_of(validator, d, instance, schema):
    if validator.is_type(instance, "number") and isinstance(d, float):
        return      # checked exactly on the spelling (below)
    yield from Draft202012Validator.VALIDATORS["multipleOf"](validator, d, instance, schema)


ExactMultipleOf = validators.extend(Draft202012Validator, {"multipleOf": _exact_multiple_of})


def valid(schema: dict, doc: str) -> bool:
    """Both readings: jsonschema on json.loads(doc), the spec on the exact decimal."""
    if not ExactMultipleOf(schema).is_valid(json.loads(doc)):
        return False
    x = Fraction(Decimal(doc))
    t = schema.get("type")
    if t == "integer" and x.denominator != 1:
        return False
    checks = {"minimum": lambda b: x >= b, "maximum": lambda b: x <= b,
              "exclusiveMinimum": lambda b: x > b, "exclusiveMaximum": lambda b: x < b,
              "multipleOf": lambda b: (x / b).denominator == 1}
    return all(f(_spec(schema[k])) for k, f in checks.items() if k in schema)


def documented(schema: dict, doc: str) -> bool:
    if "e" in doc.lower():
        return False
    if "." in doc and "multipleOf" in schema and \
            (schema.get("type") == "integer" or _spec(schema["multipleOf"]).denominator == 1):
        return False
    if "." in doc and schema.get("type") == "integer":
        return False        # integers are written as integers (docs/json-schema.md)
    return True


def accepts(grammar, doc: str) -> bool:
    m = grammar.matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


# --- case tables ----------------------------------------------------------------------------
CASES = [
    ({"type": "integer", "minimum": 0, "maximum": 120},
     ["0", "-0", "7", "120", "99", "10"], ["-1", "121", "1000", "007", "1e2", "0.5", "-", "120.0"]),
    ({"type": "integer", "minimum": -15, "maximum": -3},
     ["-3", "-15", "-9", "-10"], ["-2", "-16", "0", "-0", "3", "-100", "-3.00"]),
    ({"type": "integer", "minimum": 0.5, "exclusiveMaximum": 10.5},
     ["1", "10", "5"], ["0", "11", "-0"]),
    ({"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 1}, ["0", "-0"],
     ["1", "-1", "0.5", "0.0"]),
    ({"type": "integer", "minimum": 100}, ["100", "1000", "123456789012345678901234567890"],
     ["99", "-100", "0"]),
    ({"type": "integer", "maximum": -100}, ["-100", "-1000"], ["-99", "0", "100"]),
    ({"type": "integer", "minimum": 18446744073709551615},
     ["18446744073709551615", "18446744073709551616"],
     ["18446744073709551614", "1", "18446744073709551615.0"]),
    ({"type": "number", "minimum": 1.1}, ["1.1", "1.10", "2", "1.2", "100.5"],
     ["1.09", "1", "-1.1", "1.0999999999999999999", "0.5"]),
    ({"type": "number", "exclusiveMinimum": 0, "maximum": 1},
     ["0.0001", "1", "1.0", "0.5", "1.000"],
     ["0", "-0", "0.0", "-0.5", "1.0000000000000001", "1.01"]),
    ({"type": "number", "exclusiveMaximum": 0.1},
     ["0.09", "0", "-5", "0.0999999"], ["0.1", "0.10", "0.09999999999999999999", "0.2"]),
    ({"type": "number", "minimum": -2, "maximum": -2}, ["-2", "-2.0", "-2.000"],
     ["-2.0001", "-1.9999", "2"]),
    ({"type": "number", "minimum": 5, "maximum": 4}, [], []),
    ({"minimum": 3}, ["3", "4.5", '"x"', "null", "[]"], ["2", "2.9"]),
    ({"type": ["integer", "string"], "maximum": 2}, ["2", '"9"'], ["3", "2.5"]),
    # multipleOf
    ({"type": "integer", "multipleOf": 3}, ["0", "3", "-3", "999"], ["1", "-4", "1000", "3.5"]),
    ({"type": "integer", "multipleOf": 2.5}, ["0", "5", "-10"], ["2", "2.5", "7"]),
    ({"type": "integer", "multipleOf": 1e-8}, ["1", "12391239123"], ["1.5"]),
    ({"type": "number", "multipleOf": 0.01}, ["1", "19.99", "0.07", "-3.1", "2.500"],
     ["0.001", "1.005", "1e-2"]),
    ({"type": "number", "multipleOf": 1.5}, ["4.5", "0", "-3", "1.50"], ["35", "1", "4.6"]),
    ({"type": "number", "multipleOf": 1}, ["7", "-2"], ["7.5", "0.1"]),
    ({"type": "number", "multipleOf": 0.0001}, ["0.0075", "12"], ["0.00751"]),
    ({"type": "integer", "multipleOf": 7, "minimum": 10, "maximum": 40},
     ["14", "21", "35"], ["7", "42", "15", "0"]),
    ({"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0, "maximum": 2},
     ["0.5", "1", "1.5", "2", "2.0"], ["0", "0.25", "2.5", "-0.5", "1.7"]),
    # bounds with enum still filter (both keywords enforced)
    ({"enum": [1, 5, 9, "a"], "minimum": 4}, ["5", "9", '"a"'], ["1", "4"]),
]


# two divisors merged (allOf, a branch beside its siblings): the multiples of both are those
# of their least common multiple. (Not in CASES: its oracle reads only a top-level float
# multipleOf exactly.)
MERGED_DIVISORS = [
    ({"allOf": [{"type": "integer", "multipleOf": 2}, {"multipleOf": 3}]}, ["0", "6", "-12"],
     ["2", "3", "4", "9"]),
    ({"type": "number", "allOf": [{"multipleOf": 0.3}, {"multipleOf": 0.7}]},
     ["0", "2.1", "4.2", "-6.3"], ["0.3", "0.7", "1.4", "2.2"]),
    ({"type": "number", "multipleOf": 0.5, "anyOf": [{"multipleOf": 0.75}, {"multipleOf": 0.4}]},
     ["1.5", "2", "3", "4"], ["0.5", "0.75", "1", "2.5"]),
]


@pytest.mark.parametrize("schema,good,bad", MERGED_DIVISORS,
                         ids=[json.dumps(c[0]) for c in MERGED_DIVISORS])
def test_merged_divisors_are_their_common_multiple(schema, good, bad):
    g = cengine.compile_json_schema(schema)
    assert [d for d in good if not accepts(g, d)] == []
    assert [d for d in bad if accepts(g, d)] == []


@pytest.mark.parametrize("schema,good,bad", CASES, ids=[json.dumps(c[0]) for c in CASES])
def test_numeric_keywords(schema, good, bad):
    if not good:
        with pytest.raises(CompileError):
            schema_to_ir(schema)
        return
    g = cengine.compile_json_schema(schema)
    for d in good:
        assert accepts(g, d), d
    for d in bad:
        assert not accepts(g, d), d
    # every listed number is judged the same way by the oracle (documented spellings)
    for d in good + bad:
        if d.startswith(("-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")) and \
                documented(schema, d) and not d.startswith(("-.", "00", "007")):
            try:
                json.loads(d)
            except ValueError:
                continue
            if set(schema) & {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                              "multipleOf"} and "enum" not in schema:
                assert accepts(g, d) == valid(schema, d), d


REFUSED = [
    ({"type": "integer", "minimum": True}, "minimum", "/minimum"),
    ({"type": "number", "maximum": "3"}, "maximum", "/maximum"),
    ({"type": "number", "multipleOf": 0}, "multipleOf", "/multipleOf"),
    ({"type": "number", "multipleOf": -2}, "multipleOf", "/multipleOf"),
    ({"properties": {"n": {"type": "integer", "multipleOf": MAX_MODULUS + 1}}}, "multipleOf",
     "/properties/n/multipleOf"),
]


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED, ids=[r[1] for r in REFUSED])
def test_refusals_name_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        schema_to_ir(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)


def test_large_modulus_is_a_limit_error():
    with pytest.raises(LimitError):
        schema_to_ir({"type": "integer", "multipleOf": MAX_MODULUS + 1})
    schema_to_ir({"type": "integer", "multipleOf": MAX_MODULUS})


def test_bounds_merge_through_anyof_and_ref():
    schema = {"type": "integer", "minimum": 0,
              "anyOf": [{"maximum": 9}, {"minimum": 100, "maximum": 200}]}
    g = cengine.compile_json_schema(schema)
    for d, ok in (("0", True), ("9", True), ("10", False), ("150", True), ("201", False),
                  ("-1", False)):
        assert accepts(g, d) == ok, d
    schema = {"$defs": {"pct": {"type": "number", "minimum": 0, "maximum": 100}},
              "$ref": "#/$defs/pct", "minimum": 50}
    g = cengine.compile_json_schema(schema)
    assert accepts(g, "75.5") and not accepts(g, "49.9") and not accepts(g, "100.1")


def test_huge_bounds_compile():
    # doubles near the ends of the range have long exact midpoints: still exact
    for schema in ({"type": "number", "maximum": 1e308},
                   {"type": "number", "exclusiveMinimum": 5e-324},
                   {"type": "integer", "maximum": 1e300}):
        g = cengine.compile_json_schema(schema)
        assert accepts(g, "1" if "maximum" in schema else "1.5")


def test_the_bench_tool_schemas_with_bounds_compile():
    import glob
    for path in glob.glob("testdata/bench_schemas/tools/*.json"):
        doc = json.load(open(path))
        text = json.dumps(doc["parameters"])
        if '"minimum"' in text or '"maximum"' in text or '"exclusiveMinimum"' in text:
            g = cengine.compile_json_schema(doc["parameters"])
            for inst in doc.get("instances", []):
                assert accepts(g, json.dumps(_in_schema_order(inst, doc["parameters"]))), \
                    (path, inst)


def _in_schema_order(v, schema):
    """v with object keys in the documented order (declared properties first)."""
    if not isinstance(schema, dict):
        return v
    if isinstance(v, dict):
        props = schema.get("properties", {})
        keys = [k for k in props if k in v] + [k for k in v if k not in props]
        return {k: _in_schema_order(v[k], props.get(k, schema.get("additionalProperties")))
                for k in keys}
    if isinstance(v, list):
        return [_in_schema_order(x, schema.get("items")) for x in v]
    return v


# --- hypothesis: acceptance == validity ---------------------------------------------------------
BOUND_SCHEMAS = [
    {"type": "integer", "minimum": 0, "maximum": 120},
    {"type": "integer", "minimum": -1000, "exclusiveMaximum": 37},
    {"type": "integer", "exclusiveMinimum": 2.5},
    {"type": "number", "minimum": 1.1, "maximum": 3.0},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.3},
    {"type": "number", "minimum": -0.1},
    {"type": "number", "exclusiveMaximum": -7.25},
    {"type": "number", "maximum": 9007199254740993},
    {"type": "number", "exclusiveMinimum": 0.30000000000000004, "maximum": 12345.678},
    {"type": "integer", "multipleOf": 7, "minimum": -50, "maximum": 90},
    {"type": "number", "multipleOf": 0.25, "minimum": -3, "exclusiveMaximum": 3},
    {"type": "number", "multipleOf": 3},
    {"type": "integer", "maximum": 9007199254740995},
]


def _near(v) -> st.SearchStrategy:
    """Decimal spellings near a bound: the bound plus/minus a small delta, many digits."""
    base = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    delta = st.builds(lambda digits, scale, sign: Decimal(digits) * Decimal(10) ** -scale * sign,
                      st.integers(0, 10 ** 6), st.integers(0, 25), st.sampled_from([1, -1]))
    return delta.map(lambda d: base + d)


def _spellings(schema, reach: int = 10 ** 6) -> st.SearchStrategy:
    """Spellings of numbers anywhere within +-reach (three decimals) or near a bound."""
    bounds = [schema[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
              if k in schema]
    free = st.builds(lambda i, f: Decimal(i) + Decimal(f) / 1000, st.integers(-reach, reach),
                     st.integers(0, 999))
    values = st.one_of([free] + [_near(b) for b in bounds])
    return st.tuples(values, st.integers(0, 3), st.booleans()).map(_spell)


def _spell(args) -> str:
    d, zeros, int_form = args
    s = format(d, "f")
    if int_form and d == d.to_integral_value():
        return str(int(d)) if not (s.startswith("-") and int(d) == 0) else "-0"
    if "." not in s:
        s += "."
        zeros = max(zeros, 1)
    return s + "0" * zeros


@pytest.mark.parametrize("schema", BOUND_SCHEMAS, ids=[json.dumps(s) for s in BOUND_SCHEMAS])
def test_acceptance_equals_validity(schema):
    g = cengine.compile_json_schema(schema)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_spellings(schema))
    def run(doc):
        if not documented(schema, doc):
            return
        assert accepts(g, doc) == valid(schema, doc), doc
    run()


@pytest.mark.parametrize("schema", BOUND_SCHEMAS, ids=[json.dumps(s) for s in BOUND_SCHEMAS])
def test_random_walks_close_to_valid_numbers(schema):
    g = cengine.compile_json_schema({"type": "array", "items": schema})
    rng = random.Random(json.dumps(schema))
    for _ in range(60):
        m = g.matcher()
        prefix = walk_allowed(m, [rng.randrange(1 << 30) for _ in range(rng.randrange(1, 30))])
        doc = prefix + m.completion()
        done = m.copy()
        assert done.accept_bytes(doc[len(prefix):]) and done.is_accepting()
        for x in json.loads(doc, parse_float=str, parse_int=str):
            assert valid(schema, x), (doc, x)
