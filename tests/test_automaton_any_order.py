"""property_order="any" objects (ir.AnyOrder, whose states cengine._anyorder makes as positions
directly) against the IR form they replaced (tests/oracles/any_order_reference.py: one rule per
state through the ordinary pipeline): for every schema of the case table both grammars must
accept exactly the same small documents, and along shared random walks allow the same next
bytes, agree on acceptance and close with completions of the same length, each one completing
the document (the closer's contract: the shortest completion; which of several of that length
it writes follows the positions' numbering, and may differ between the two forms).

Cases: required and optional members, extra keys (open, typed, patternProperties), min/
maxProperties with and without extra keys, dependentRequired variants, nesting, recursion, no
or one declared property, and every case again past the state budget (MAX_ORDER_STATES
shrunk: declared properties in declared order, the counted form when bounds need it).
"""
from __future__ import annotations

import itertools
import json
import random

import pytest

import cengine
from cengine import ir
from cengine.schema import schema_to_ir
from oracles.any_order_reference import reference_objects
from walks import lockstep

OPTIONS = {"closed_objects": False, "whitespace_budget": None, "property_order": "any"}

# (name, schema, names the documents use, values they use)
CASES = [
    ("required-optional", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {}, "c": {"type": "string"}}, "required": ["a", "c"],
        "additionalProperties": False}, ["a", "b", "c", "x"], [1, "s"]),
    ("all-optional", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                      "additionalProperties": False}, ["a", "b", "c"], [1]),
    ("all-required", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                      "required": ["c", "a", "b"], "additionalProperties": False},
     ["a", "b", "c"], [1]),
    ("open-extras", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
                     "required": ["b"]}, ["a", "b", "x", "y"], [1, "s"]),
    ("extras-schema", {"type": "object", "properties": {"a": {}, "b": {"type": "string"}},
                       "additionalProperties": {"type": "integer"}}, ["a", "b", "x"], [1, "s"]),
    ("pattern", {"type": "object", "properties": {"ab": {"type": "string"}},
                 "patternProperties": {"^a": {"type": "integer"}},
                 "additionalProperties": False}, ["ab", "a", "ac", "b"], [1, "s"]),
    ("max-extras", {"type": "object", "properties": {"a": {}, "b": {}},
                    "maxProperties": 2, "minProperties": 1}, ["a", "b", "x", "y"], [1]),
    ("min-max-closed", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                        "additionalProperties": False, "minProperties": 2, "maxProperties": 3},
     ["a", "b", "c", "x"], [1]),
    ("min-closed", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                    "required": ["b"], "additionalProperties": False, "minProperties": 2},
     ["a", "b", "c"], [1]),
    ("max-required-extras", {"type": "object", "properties": {"a": {}, "b": {}},
                             "required": ["b"], "maxProperties": 2}, ["a", "b", "x"], [1]),
    ("dependent", {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "string"}},
                   "dependentRequired": {"a": ["b"], "c": ["a"]}}, ["a", "b", "c", "x"], [1, "s"]),
    ("dependent-closed", {"type": "object", "properties": {"card": {}, "addr": {}, "n": {}},
                          "dependentRequired": {"card": ["addr"]},
                          "additionalProperties": False}, ["card", "addr", "n"], [1]),
    ("oneof-required", {"type": "object", "properties": {"r": {}, "w": {}, "h": {}},
                        "oneOf": [{"required": ["r"]}, {"required": ["w", "h"]}],
                        "additionalProperties": False}, ["r", "w", "h"], [1]),
    ("one-property", {"type": "object", "properties": {"a": {"type": "integer"}},
                      "additionalProperties": {"type": "string"}}, ["a", "x"], [1, "s"]),
    ("no-property", {"type": "object", "additionalProperties": {"type": "integer"},
                     "maxProperties": 2}, ["x", "y"], [1, "s"]),
    ("empty-closed", {"type": "object", "properties": {}, "additionalProperties": False},
     ["a"], [1]),
    ("nested", {"type": "object", "properties": {
        "o": {"type": "object", "properties": {"p": {}, "q": {}}, "required": ["q"],
              "additionalProperties": False}, "a": {}}, "required": ["o"],
        "additionalProperties": False}, ["o", "a"], [1, {"q": 1, "p": 2}, {"p": 1}]),
    ("recursive", {"type": "object", "properties": {"v": {"type": "integer"},
                                                    "next": {"$ref": "#"}},
                   "required": ["v"], "additionalProperties": False},
     ["v", "next"], [1, {"v": 2}, {"next": {"v": 1}, "v": 0}]),
]


def _doc(pairs) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(x)}" for k, x in pairs) + "}"


def _documents(names, values, most=4):
    members = [(k, x) for k in names for x in values]
    for n in range(most + 1):
        for combo in itertools.product(members, repeat=n):
            yield _doc(combo)


def _grammars(schema):
    """(the grammar as compiled now, the grammar of the reference IR form)."""
    g = cengine.Grammar.from_ir(schema_to_ir(schema, **OPTIONS))
    with reference_objects():
        ref_ir = schema_to_ir(schema, **OPTIONS)
    assert not any(type(r.expr) is ir.AnyOrder for r in ref_ir.rules.values())
    return g, cengine.Grammar.from_ir(ref_ir)


def _accepts(g, doc: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


def _lockstep(new, ref, seed: int, walks: int = 40, steps: int = 60):
    """Walk both matchers on the same random allowed bytes (nine in ten ASCII); the first
    disagreement (prefix, what differs), or None."""
    def pick(allowed, rng):
        ascii_ = [x for x in allowed if x < 0x80]
        return rng.choice(ascii_ if ascii_ and rng.random() < 0.9 else allowed)
    return lockstep(new, ref, random.Random(seed), pick, walks, steps)


def _check(name, schema, names, values):
    new, ref = _grammars(schema)
    wrong = [d for d in _documents(names, values) if _accepts(new, d) != _accepts(ref, d)]
    assert not wrong, wrong[:10]
    assert _lockstep(new, ref, seed=len(name)) is None
    return new, ref


@pytest.mark.parametrize("name,schema,names,values", CASES, ids=[c[0] for c in CASES])
def test_any_order_node_keeps_the_language_and_the_closer(name, schema, names, values):
    new, ref = _check(name, schema, names, values)
    assert any(_accepts(new, d) for d in _documents(names, values))    # the case says something


@pytest.mark.parametrize("name,schema,names,values", CASES, ids=[c[0] for c in CASES])
def test_any_order_node_past_the_state_budget(small_order_budget, name, schema, names, values):
    _check(name, schema, names, values)


def test_the_object_is_one_rule_and_its_members_stay_called():
    schema = CASES[0][1]
    g = schema_to_ir(schema, **OPTIONS)
    nodes = [r for r in g.rules.values() if type(r.expr) is ir.AnyOrder]
    assert len(nodes) == 1 and nodes[0].container
    a = cengine.automaton.build(g)
    for member in nodes[0].expr.members:
        assert member in a.rule_names
    with reference_objects():
        old = schema_to_ir(schema, **OPTIONS)
    assert len(old.rules) > len(g.rules) + 4            # the old form: a rule per state


def test_compose_renames_the_members():
    part = cengine.JsonSchema(CASES[0][1], property_order="any")
    g = cengine.compile_structural(cengine.Concat(cengine.Text("<"), part, cengine.Text(">")))
    m = g.matcher()
    assert m.accept_bytes(b'<{"c": "s", "a": 1}>') and m.is_accepting()
    assert not g.matcher().accept_bytes(b'<{"c": "s", "c": "t"')


@pytest.mark.parametrize("name,schema,productive", [
    ("required-unproductive", {"type": "object", "properties": {"a": {"$ref": "#"}},
                               "required": ["a"]}, False),
    ("optional-unproductive", {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {}}},
     True),
    ("min-needs-it", {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {}},
                      "required": ["a"], "minProperties": 1}, False),
])
def test_productivity_follows_the_members(name, schema, productive):
    """A required member that derives nothing finite makes the object derive nothing, in the
    node as in the rules of the old form."""
    for make in (lambda: schema_to_ir(schema, **OPTIONS), lambda: _reference_ir(schema)):
        if productive:
            make()
        else:
            with pytest.raises(cengine.CompileError):
                make()


def _reference_ir(schema):
    with reference_objects():
        return schema_to_ir(schema, **OPTIONS)


@pytest.mark.parametrize("ws", [((0x2C, 0x2C),), ((0x20, 0x20), (0x09, 0x0A)), ((0x7D, 0x7E),)])
def test_whitespace_that_is_not_apart_from_the_structure_is_refused(ws):
    """Whitespace overlapping `,` or `}` (or unsorted) would make the positions ambiguous."""
    g = ir.GrammarIR()
    g.add("m", ir.lit('"a":1'))
    g.add("root", ir.AnyOrder(("m",), (True,), None, 0, None, False, ws), container=True)
    with pytest.raises(ValueError):
        cengine.automaton.build(g)
    g.rules["root"].expr = ir.AnyOrder(("m",), (True,), None, 0, None, False, ((0x20, 0x20),))
    assert cengine.Grammar.from_ir(g).matcher().accept_bytes(b'{ "a":1 }')


def test_an_object_rule_is_never_inlined_into_its_caller():
    """An any-order rule stands in the inlining pass as an alternative of its members' calls;
    even when it is small and no container (hand-made IR) it keeps its own positions, braces
    and commas included, instead of being substituted as that alternative."""
    g = ir.GrammarIR()
    g.add("m", ir.lit('"a":1'))
    g.add("obj", ir.AnyOrder(("m",), (True,), None, 0, None, False, ((0x20, 0x20),)))
    g.add("root", ir.seq(ir.lit("["), ir.Ref("obj"), ir.lit("]")), container=True)
    m = cengine.Grammar.from_ir(g).matcher
    assert m().accept_bytes(b'[{"a":1}]')
    assert m().accept_bytes(b'[{ "a":1 }]')
    assert not m().accept_bytes(b'["a":1]')
