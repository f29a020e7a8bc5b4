"""Positions kept across builds: a rule whose expression the compiler fixes (an enforced
format's JSON string) takes its determinized positions from an earlier build. The tables must
be the ones a fresh build makes, the kept positions must really be the ones used, and a build
must refuse under a work limit exactly when a fresh one does."""

import hashlib

import numpy as np
import pytest

import cengine
from cengine import automaton, ir
from cengine.errors import LimitError
from cengine.schema import schema_to_ir
from cengine.schema.strings import format_string


def _schema(fmt):
    return {"type": "object", "properties": {"a": {"type": "string", "format": fmt},
                                             "b": {"type": "array",
                                                   "items": {"type": "string", "format": fmt}}}}


def _tables(fmt, budget=None):
    return _digest(_schema(fmt), budget=budget, property_order="any")


def _kept_for(fmt):
    expr = format_string(fmt, 0, None, "")
    return {k: v for k, v in automaton._KEPT_POSITIONS.items() if k[0] == id(expr)}


# formats whose string rule is too long to inline (the ones that keep positions)
FORMATS = ["hostname", "email", "uri", "ipv6", "date-time", "uri-template"]


@pytest.fixture
def fresh():
    automaton._KEPT_POSITIONS.clear()
    automaton._KEPT_MERGED.clear()
    yield
    automaton._KEPT_POSITIONS.clear()
    automaton._KEPT_MERGED.clear()


@pytest.mark.parametrize("fmt", FORMATS)
def test_automaton_kept_positions_same_tables(fresh, fmt):
    first = _tables(fmt)
    assert _kept_for(fmt), "the format's string rule was not kept"
    assert _tables(fmt) == first
    # under another DFA-growth limit the rule is built afresh (and kept apart), same tables
    assert _tables(fmt, cengine.CompileBudget(max_dfa_growth=0)) == first
    assert len(_kept_for(fmt)) == 2


@pytest.mark.parametrize("fmt", ["uri", "email"])
def test_automaton_kept_positions_are_used(fresh, fmt):
    first = _tables(fmt)
    (key, (packed, units)), = _kept_for(fmt).items()
    # the same positions with the first one's final flag flipped: a build that used them
    # shows it in its tables
    changed = packed.copy()
    changed[3] ^= 1
    automaton._KEPT_POSITIONS[key] = (changed, units)
    assert _tables(fmt) != first


def _merged_for(key):
    return [(k, v) for k, v in automaton._KEPT_MERGED.items() if k[0] == key]


@pytest.mark.parametrize("fmt", ["uri", "email", "hostname"])
def test_automaton_kept_positions_merged_once(fresh, fmt):
    # the kept rule's merged positions (Builder.minimize) are stored beside the array they
    # were made from, and a later build takes them instead of merging again
    first = _tables(fmt)
    (key, (packed, _)), = _kept_for(fmt).items()
    (mkey, (raw, merged)), = _merged_for(key)
    assert mkey == (key, automaton.MINIMIZE_MAX_ROUNDS) and raw is packed
    assert merged[0] < packed[0] and merged[2] == 0 and not merged.flags.writeable
    changed = merged.copy()
    changed[3] ^= 1
    automaton._KEPT_MERGED[mkey] = (raw, changed)
    assert _tables(fmt) != first
    automaton._KEPT_MERGED[mkey] = (raw, merged)
    assert _tables(fmt) == first
    # merged positions stored for another array (kept positions replaced) are not taken
    automaton._KEPT_MERGED[mkey] = (raw.copy(), changed)
    assert _tables(fmt) == first


def test_automaton_kept_positions_merged_per_rounds(fresh, monkeypatch):
    first = _tables("uri")
    monkeypatch.setattr(automaton, "MINIMIZE_MAX_ROUNDS", 1)
    one_round = _tables("uri")
    (key, _), = _kept_for("uri").items()
    assert sorted(k[1] for k, _ in _merged_for(key)) == [1, 64]
    monkeypatch.undo()
    assert _tables("uri") == first
    automaton._KEPT_MERGED.clear()
    monkeypatch.setattr(automaton, "MINIMIZE_MAX_ROUNDS", 1)
    assert _tables("uri") == one_round


def _least_work(fmt):
    lo, hi = 1, automaton.MAX_COMPILE_WORK
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            _tables(fmt, cengine.CompileBudget(max_work=mid))
            hi = mid
        except LimitError:
            lo = mid + 1
    return lo


@pytest.mark.parametrize("fmt", ["hostname", "ipv6"])
def test_automaton_kept_positions_spend_the_same_work(fresh, monkeypatch, fmt):
    # a build refuses under a work limit exactly where a fresh one does, kept or not
    monkeypatch.setattr(automaton, "_KEPT_POSITIONS", {})
    monkeypatch.setattr(automaton, "_kept_keys", lambda *a: None)
    fresh_least = _least_work(fmt)
    monkeypatch.undo()
    automaton._KEPT_POSITIONS.clear()
    _tables(fmt)
    assert _kept_for(fmt)
    assert _least_work(fmt) == fresh_least
    with pytest.raises(LimitError):
        _tables(fmt, cengine.CompileBudget(max_work=fresh_least - 1))


@pytest.mark.parametrize("expr, kept", [
    (ir.seq(ir.lit("x"), ir.repeat(ir.charset([(0x61, 0x7A)]), 1, None)), True),
    (ir.seq(ir.lit("x"), ir.Ref("other")), False),
    (ir.alt(ir.lit("a"), ir.repeat(ir.Ref("other"), 0, None)), False),
])
def test_automaton_kept_positions_only_without_calls(expr, kept):
    automaton.keep_positions(expr)
    try:
        assert (id(expr) in automaton._KEPT_EXPRS) is kept
    finally:
        automaton._KEPT_EXPRS.pop(id(expr), None)


def test_automaton_kept_positions_packed_form(fresh):
    _tables("uri")
    (_, (packed, units)), = _kept_for("uri").items()
    assert packed.dtype == np.int32 and not packed.flags.writeable
    assert packed[2] == 0 and units > 0      # no calls; the work its construction spent


# --- the JSON grammar's fixed rules (json_grammar._fixed_rules) ------------------------------
def _digest(schema, budget=None, **opts):
    """A digest of every table the schema's automaton has (built under budget)."""
    g = schema_to_ir(schema, closed_objects=False, whitespace_budget=None, **opts)
    with automaton.budget_scope(budget):
        a = automaton.build(g)
    h = hashlib.sha1()
    for name, _ in automaton.TABLES:
        h.update(name.encode())
        h.update(getattr(a, name).tobytes())
    h.update(repr(a.rule_names).encode())
    return h.hexdigest()


def _fixed_kept():
    from cengine.schema import json_grammar
    ids = {id(e): name for name, e in json_grammar._fixed_rules().items()}
    return {ids[k[0]] for k in automaton._KEPT_POSITIONS if k[0] in ids}


# (schema, options, fixed rules it builds as rules of their own: not inlined into a caller)
FIXED_CASES = [
    ({"type": "object"}, {}, {"json-string-body", "json-number"}),
    ({"type": "string"}, {}, {"json-string-body"}),
    ({"type": "array", "items": {"type": "number"}}, {}, {"json-number"}),
    ({"type": "array", "items": {"type": "integer"}}, {"property_order": "any"},
     {"json-integer"}),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 40}}},
     {"property_order": "any"}, {"json-string-body", "json-number", "json-string-char"}),
    ({"not": {"type": "integer"}, "type": "number"}, {}, {"json-fraction"}),
    (True, {}, {"json-string-body", "json-number"}),
]


@pytest.mark.parametrize("schema, opts, rules", FIXED_CASES)
def test_automaton_kept_positions_fixed_json_rules(fresh, schema, opts, rules):
    # the fixed rules that call nothing are kept: the first build stores their positions,
    # the next takes them, and both make the tables a build without keeping makes
    first = _digest(schema, **opts)
    assert rules <= _fixed_kept(), f"kept: {sorted(_fixed_kept())}"
    assert _digest(schema, **opts) == first
    keys = automaton._kept_keys
    try:
        automaton._kept_keys = lambda *a: None
        assert _digest(schema, **opts) == first
    finally:
        automaton._kept_keys = keys


def test_automaton_kept_positions_fixed_rules_with_calls_not_kept():
    # json-value, json-object, json-array and json-string call rules: what a call matches
    # depends on the grammar, so none of them is marked
    from cengine.schema import json_grammar
    fixed = json_grammar._fixed_rules()
    for name in ("json-value", "json-object", "json-array", "json-string"):
        assert id(fixed[name]) not in automaton._KEPT_EXPRS, name
    assert id(fixed["json-string-body"]) in automaton._KEPT_EXPRS
