"""The mask tables' call facts (cengine._mask.call_facts, one C pass over the call edges)
against their definitions read off the automaton in plain Python: which rules are called,
which are counter levels (some call returns where the same rule is called again) and which
positions start pair tables (the start of such a rule when it calls nothing)."""
import numpy as np
import pytest

from cengine import automaton
from cengine._mask import call_facts
from cengine.schema import schema_to_ir

RULE_CALLED, RULE_REPEATED = 1, 4

# (schema, whether some position starts a pair table)
CASES = {
    "flat_object": ({"type": "object", "properties": {"a": {"type": "string"},
                                                      "b": {"type": "integer"}}}, False),
    "long_bounded_string": ({"type": "string", "minLength": 40, "maxLength": 150}, True),
    "long_bounded_array": ({"type": "array", "items": {"type": "boolean"}, "minItems": 40,
                            "maxItems": 90}, False),
    "recursive": ({"$defs": {"n": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"},
        False),
    "strings_in_a_union": ({"anyOf": [{"type": "string", "maxLength": 300},
                                      {"type": "array", "items": {"type": "string",
                                                                  "maxLength": 64}}]}, True),
}


def _reference(a):
    n_pos, n_rules = a.n_positions, len(a.rule_start)
    calls = [(p, int(a.call_rule[k]), int(a.call_to[k]))
             for p in range(n_pos) for k in range(a.call_off[p], a.call_off[p + 1])]
    rules_at = {p: {r for q, r, _ in calls if q == p} for p in range(n_pos)}
    callers = {int(a.pos_rule[p]) for p, _, _ in calls}
    called = {r for _, r, _ in calls}
    repeated = {r for _, r, to in calls if 0 <= to < n_pos and r in rules_at[to]}
    pair = {int(a.rule_start[r]) for r in repeated if r not in callers}
    flags = np.zeros(n_rules, np.uint8)
    for r in called:
        flags[r] |= RULE_CALLED
    for r in repeated:
        flags[r] |= RULE_REPEATED
    starts = np.zeros(n_pos, bool)
    starts[sorted(pair)] = True
    return flags, starts


@pytest.mark.parametrize("name", sorted(CASES))
def test_mask_call_facts_match_definitions(name):
    schema, has_pairs = CASES[name]
    a = automaton.build(schema_to_ir(schema, closed_objects=False, whitespace_budget=None))
    flags, starts = call_facts(a)
    want_flags, want_starts = _reference(a)
    n_rules = len(a.rule_start)
    assert np.array_equal(flags[:n_rules] & (RULE_CALLED | RULE_REPEATED), want_flags)
    assert np.array_equal(starts[:a.n_positions] != 0, want_starts)
    assert want_starts.any() == has_pairs
