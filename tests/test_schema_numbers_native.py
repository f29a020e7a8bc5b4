"""The bounded-number automaton made in C (cengine._numdfa, numbers._automaton) against the
Python reference (oracles/number_reference.explore, numbers._minimize and _as_dfa): the same
explored automaton state for state, the same minimal ir.Dfa tables, the same LimitError
(keyword and pointer), over a case table of bound shapes and hypothesis-generated bounds;
and the native tables accept a spelling near a bound exactly when it is valid under both
readings (the oracle of tests/test_schema_numbers.py).
"""
from __future__ import annotations

import json
import math
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cengine import LimitError, ir
from cengine.schema import numbers as N
from cengine.schema import schema_to_ir
from oracles import number_reference
from test_schema_numbers import _spellings, documented, valid
from test_schema_numbers_construction import number_dfa


def _reference_automaton(dfa, keyword: str, pointer: str):
    """What numbers._automaton returns, made by the Python reference (explore, _minimize,
    _as_dfa) that the native exploration is held to."""
    return N._minimal_dfa(*number_reference.explore(dfa, keyword, pointer))

CASES = [
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "number", "exclusiveMaximum": 0},
    {"type": "number", "minimum": 0},
    {"type": "number", "maximum": 0},
    {"type": "number", "minimum": -0.0},
    {"type": "integer", "minimum": 0},
    {"type": "integer", "exclusiveMinimum": 0},
    {"type": "integer", "minimum": -15, "maximum": -3},
    {"type": "integer", "minimum": 0, "maximum": 120},
    {"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 1e3},
    {"type": "integer", "maximum": 1e300},
    {"type": "integer", "minimum": 18446744073709551615},
    {"type": "number", "minimum": 1.1},
    {"type": "number", "exclusiveMaximum": 0.1},
    {"type": "number", "minimum": 0.5, "maximum": 99.95},
    {"type": "number", "minimum": -90, "maximum": 90},
    {"type": "number", "minimum": -180.0, "exclusiveMaximum": 180.0},
    {"type": "number", "exclusiveMinimum": -7.25, "exclusiveMaximum": -0.001},
    {"type": "number", "exclusiveMinimum": 0.30000000000000004, "maximum": 12345.678},
    {"type": "number", "maximum": 9007199254740993},
    {"type": "number", "minimum": -2, "maximum": -2},
    {"type": "number", "minimum": 5, "maximum": 4},                 # empty
    {"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1},  # empty
    {"type": "number", "maximum": 1e308},
    {"type": "number", "minimum": -1.7976931348623157e308},
    {"type": "number", "exclusiveMinimum": 5e-324},
    {"type": "number", "maximum": -5e-324},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 5e-324},  # empty: no double
    {"type": "number", "minimum": 2.2250738585072014e-308, "maximum": 1e-300},
    # multipleOf, with and without bounds (remainder cycles: the Moore fallback)
    {"type": "number", "multipleOf": 0.01},
    {"type": "number", "multipleOf": 3},
    {"type": "number", "multipleOf": 1.5},
    {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
    {"type": "number", "multipleOf": 0.25, "minimum": -3, "exclusiveMaximum": 3},
    {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0, "maximum": 2},
    {"type": "number", "multipleOf": 1e-8, "maximum": 1e-7},
    {"type": "integer", "multipleOf": 7},
    {"type": "integer", "multipleOf": 7, "minimum": -50, "maximum": 90},
    {"type": "integer", "multipleOf": 2.5, "minimum": 0},
    {"type": "integer", "multipleOf": 1e-8, "exclusiveMaximum": 10},
]
IDS = [json.dumps(s) for s in CASES]
EMPTY = {IDS[i] for i, s in enumerate(CASES)
         if s.get("minimum") == 5 or s.get("exclusiveMinimum") == 1
         or s.get("exclusiveMaximum") == 5e-324}


def _same(schema):
    """Native and reference agree, raw and minimal; returns the native ir.Dfa (None: empty)."""
    dfa, keyword, pointer = number_dfa(schema)
    raw = N._automaton(dfa, keyword, pointer, raw=True)
    assert raw == number_reference.explore(dfa, keyword, pointer)
    native = N._automaton(dfa, keyword, pointer)
    reference = _reference_automaton(dfa, keyword, pointer)
    assert native == reference
    if native is not None:
        assert isinstance(native, ir.Dfa)
        assert native.edges == reference.edges and native.accepting == reference.accepting
        assert all(type(a) is bool for a in native.accepting)
    return native


@pytest.mark.parametrize("schema", CASES, ids=IDS)
def test_native_number_automaton_equals_reference(schema):
    native = _same(schema)
    assert (native is None) == (json.dumps(schema) in EMPTY)


def _accepts(dfa, doc: str) -> bool:
    if dfa is None:
        return False
    q = 0
    for byte in doc.encode():
        for lo, hi, to in dfa.edges[q]:
            if lo <= byte <= hi:
                q = to
                break
        else:
            return False
    return dfa.accepting[q]


def _near_spellings(schema) -> st.SearchStrategy:
    return _spellings(schema, reach=10 ** 4)


def _check_membership(schema, dfa, doc):
    if documented(schema, doc):
        assert _accepts(dfa, doc) == valid(schema, doc), (schema, doc)


@pytest.mark.parametrize("schema", CASES, ids=IDS)
def test_native_tables_accept_exactly_the_valid_spellings(schema):
    dfa = _same(schema)
    fixed = ["0", "-0", "0.0", "1", "-1", "0.5", "1.0", "100", "-100.25", "5e-324"]
    for doc in fixed:
        if "e" not in doc:
            _check_membership(schema, dfa, doc)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_near_spellings(schema))
    def run(doc):
        _check_membership(schema, dfa, doc)
    run()


def _float_bound(x: float) -> float:
    return 0.0 if x == 0 else x


# bounds: integers, floats of every magnitude (subnormals to near max), their neighbours
INT_BOUNDS = st.integers(-10 ** 20, 10 ** 20)
FLOAT_BOUNDS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.builds(lambda m, e: m * 10.0 ** e, st.integers(-999, 999), st.integers(-320, 300)),
    st.integers(0, 2 ** 12).map(lambda n: struct.unpack("<d", struct.pack("<q", n))[0]),
).map(_float_bound).filter(math.isfinite)
BOUNDS = st.one_of(INT_BOUNDS, FLOAT_BOUNDS)
KEYWORDS = st.sampled_from([("minimum",), ("exclusiveMinimum",), ("maximum",),
                            ("exclusiveMaximum",), ("minimum", "maximum"),
                            ("exclusiveMinimum", "exclusiveMaximum"),
                            ("minimum", "exclusiveMaximum"), ("exclusiveMinimum", "maximum")])
DIVISORS = st.sampled_from([None, None, 0.5, 0.25, 0.01, 3, 7, 1.5, 2.5])


@st.composite
def _schemas(draw):
    schema = {"type": draw(st.sampled_from(["number", "integer"]))}
    for key in draw(KEYWORDS):
        schema[key] = draw(BOUNDS)
    d = draw(DIVISORS)
    if d is not None:
        schema["multipleOf"] = d
    return schema


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(_schemas())
def test_native_number_automaton_equals_reference_on_generated_bounds(schema):
    try:
        _same(schema)
    except LimitError:
        # a limit: the explored one is reached by both with the same keyword, pointer and
        # message; past it (the minimal automaton's size) both give the same tables
        dfa, keyword, pointer = number_dfa(schema, refused=True)
        try:
            native = N._automaton(dfa, keyword, pointer)
        except LimitError as e:
            with pytest.raises(LimitError) as ref:
                _reference_automaton(dfa, keyword, pointer)
            assert (e.keyword, e.pointer, str(e)) == \
                (ref.value.keyword, ref.value.pointer, str(ref.value))
        else:
            assert native == _reference_automaton(dfa, keyword, pointer)
            assert len(native.accepting) > N.MAX_NUMBER_STATES


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(_schemas().filter(lambda s: "multipleOf" not in s), st.data())
def test_native_tables_accept_exactly_the_valid_spellings_on_generated_bounds(schema, data):
    dfa = _same(schema)
    for _ in range(10):
        _check_membership(schema, dfa, data.draw(_near_spellings(schema)))


LIMITED = {"properties": {"x": {"type": "number", "multipleOf": 0.999,
                                "exclusiveMinimum": 0.1234567891234, "maximum": 1234567.891}}}


def test_limit_error_keeps_keyword_and_pointer():
    """Past MAX_NUMBER_STATES * 8 explored states: a LimitError naming the first numeric
    keyword and its pointer, from the native explorer as from the reference."""
    N._AUTOMATA.clear()
    with pytest.raises(LimitError) as native:
        schema_to_ir(LIMITED)
    assert (native.value.keyword, native.value.pointer) == ("maximum", "/properties/x/maximum")
    dfa, keyword, pointer = number_dfa(LIMITED["properties"]["x"], refused=True)
    with pytest.raises(LimitError) as ref:
        _reference_automaton(dfa, "maximum", "/properties/x/maximum")
    assert str(ref.value) == str(native.value)


def test_native_raw_limit_is_the_reference_limit():
    """max_raw counts explored states as the reference's explore does: a limit of the explored
    size passes, one less is refused."""
    dfa, keyword, pointer = number_dfa({"type": "number", "exclusiveMinimum": 0})
    n = len(number_reference.explore(dfa, keyword, pointer)[0])
    spec = ([N._comparator_spec(c) for c in dfa.ib], [N._comparator_spec(c) for c in dfa.fb])
    from cengine._numdfa import number_automaton
    assert number_automaton(dfa.integer, *spec, dfa.p, -1, n)[0] == 3
    assert number_automaton(dfa.integer, *spec, dfa.p, -1, n - 1)[0] == 1
