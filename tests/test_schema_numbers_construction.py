"""The number automaton's construction: the exploration by successors (all symbols of a
state at once) gives exactly the DFA the exploration by single steps gave, the one-pass
minimization of acyclic DFAs (Revuz,
with self-loops) gives exactly the automaton Moore's refinement gives, on a case table of
bound shapes, and the compiled language is unchanged (every spelling up to a length).

Both minimizers end in the same breadth-first renumbering, so equal languages give equal
(transitions, accepting) lists; the test compares those lists, not just sizes.
"""
from __future__ import annotations

import itertools
import json

import pytest

from cengine import LimitError, ir
from cengine.schema import numbers as N
from oracles import number_reference

SHAPES = [
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "number", "exclusiveMaximum": 0},
    {"type": "number", "minimum": 0},
    {"type": "number", "maximum": 100},
    {"type": "integer", "minimum": 1},
    {"type": "integer", "minimum": 0, "maximum": 120},
    {"type": "number", "exclusiveMaximum": 1},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": "number", "minimum": 0.5, "maximum": 99.95},
    {"type": "number", "minimum": -90, "maximum": 90},
    {"type": "number", "minimum": -180.0, "exclusiveMaximum": 180.0},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.3},
    {"type": "number", "minimum": -0.1},
    {"type": "number", "exclusiveMinimum": 0.30000000000000004, "maximum": 12345.678},
    {"type": "number", "maximum": 9007199254740993},
    {"type": "integer", "exclusiveMinimum": 2.5},
    # multipleOf: cycles through the remainders (the Moore fallback) or acyclic after '.'
    {"type": "number", "multipleOf": 0.01},
    {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
    {"type": "number", "multipleOf": 0.25, "minimum": -3, "exclusiveMaximum": 3},
    {"type": "integer", "multipleOf": 7, "minimum": -50, "maximum": 90},
    {"type": "number", "multipleOf": 3},
]
IDS = [json.dumps(s) for s in SHAPES]


def number_dfa(schema, *, refused: bool = False):
    """The _NumberDfa (and its keyword, pointer) number_expr builds for schema; refused:
    number_expr must raise LimitError on it."""
    seen = []
    real = N._automaton

    def spy(dfa, keyword, pointer, **kw):
        seen.append((dfa, keyword, pointer))
        return real(dfa, keyword, pointer, **kw)

    def build():
        N.number_expr(ir.GrammarIR(), schema, "#", integer=schema.get("type") == "integer",
                      name="n")

    N._AUTOMATA.clear()
    N._automaton = spy
    try:
        if refused:
            with pytest.raises(LimitError):
                build()
        else:
            build()
    finally:
        N._automaton = real
        N._AUTOMATA.clear()
    assert len(seen) == 1
    return seen[0]


def _raw(schema, with_dfa=False):
    """The explored (unminimized) DFA of schema by the Python reference
    (oracles/number_reference.explore), from the _NumberDfa number_expr builds (number_expr
    itself uses cengine._numdfa, which tests/test_schema_numbers_native.py compares with this
    reference)."""
    dfa, keyword, pointer = number_dfa(schema)
    raw = number_reference.explore(dfa, keyword, pointer)
    return (raw, dfa) if with_dfa else raw


def _explore_by_step(dfa):
    """The breadth-first exploration as it was: step per symbol."""
    dfa = number_reference.NumberDfa(dfa)
    index = {dfa.start(): 0}
    order = [dfa.start()]
    trans = []
    for st in order:
        out = {}
        for ch in N._SYMBOLS:
            t = dfa.step(st, ch)
            if t is None:
                continue
            if t not in index:
                index[t] = len(order)
                order.append(t)
            out[ch] = index[t]
        trans.append(out)
    return trans, [dfa.accepting(st) for st in order]


@pytest.mark.parametrize("schema", SHAPES, ids=IDS)
def test_numbers_exploration_equals_step_by_step(schema):
    (trans, accepting), dfa = _raw(schema, with_dfa=True)
    ref_trans, ref_accepting = _explore_by_step(dfa)
    assert len(trans) > 1
    assert trans == ref_trans and accepting == ref_accepting


@pytest.mark.parametrize("value", [0, 1, 100, 0.1, 0.5, 99.95, 2.5, 12345.678, -7.25,
                                   5e-324, 2 ** 60 + 1])
def test_numbers_digits_of_bounds(value):
    """_digits (one scaled division) equals the digit-by-digit expansion of the value."""
    from fractions import Fraction
    x = abs(Fraction(value))
    ip = x.numerator // x.denominator
    rest, frac = x - ip, []
    while rest:
        rest *= 10
        frac.append(str(rest.numerator // rest.denominator))
        rest -= int(frac[-1])
    assert N._digits(Fraction(value)) == (str(ip), "".join(frac))


def _live(trans, accepting):
    live = {q for q in range(len(trans)) if accepting[q]}
    changed = True
    while changed:
        changed = False
        for q, out in enumerate(trans):
            if q not in live and any(t in live for t in out.values()):
                live.add(q)
                changed = True
    return live


@pytest.mark.parametrize("schema", SHAPES, ids=IDS)
def test_numbers_minimization_equals_moore(schema):
    trans, accepting = _raw(schema)
    live = _live(trans, accepting)
    states = sorted(live)
    moore = N._renumbered(trans, accepting, live, states,
                          N._blocks_moore(trans, accepting, states))
    assert N._minimize(trans, accepting) == moore
    block = N._blocks_acyclic(trans, accepting, live)
    if "multipleOf" not in schema:
        assert block is not None        # the one-pass path is the one taken
    if block is not None:
        assert N._renumbered(trans, accepting, live, states, block) == moore


def _accepts(trans, accepting, s):
    q = 0
    for ch in s:
        q = trans[q].get(ch)
        if q is None:
            return False
    return accepting[q]


@pytest.mark.parametrize("schema", SHAPES, ids=IDS)
def test_numbers_language_unchanged_up_to_length_5(schema):
    """Every string over the number alphabet up to 5 symbols: the minimal DFA accepts it
    exactly when the explored DFA does."""
    trans, accepting = _raw(schema)
    small = N._minimize(trans, accepting)
    for n in range(1, 6):
        for chars in itertools.product(N._SYMBOLS, repeat=n):
            s = "".join(chars)
            assert _accepts(*small, s) == _accepts(trans, accepting, s), s
