"""json_grammar.productive_fixed_rules: the fixed lexical rules a grammar holds unchanged,
which ir.productive_rules takes as proven; the proof's answer must not change by it."""
from __future__ import annotations

import pytest

from cengine import ir
from cengine.schema import json_grammar as jg
from cengine.schema import schema_to_ir

SCHEMAS = [
    ("any value", {}),
    ("typed properties", {"type": "object", "properties": {
        "a": {}, "b": {"type": "integer"}, "c": {"type": "string", "minLength": 3},
        "d": {"type": "boolean"}, "e": {"type": "null"}, "f": {"type": "number"}}}),
    ("recursion", {"$defs": {"t": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}, "$ref": "#/$defs/t"}),
    ("required endless recursion", {"$defs": {"t": {"type": "object", "required": ["x"],
                                                    "properties": {"x": {"$ref": "#/$defs/t"}}}},
                                    "properties": {"y": {"$ref": "#/$defs/t"}}}),
]


@pytest.mark.parametrize("label,schema", SCHEMAS, ids=[s[0] for s in SCHEMAS])
@pytest.mark.parametrize("order", ["declared", "any"])
def test_fixed_rules_proof_unchanged(label, schema, order):
    g = schema_to_ir(schema, property_order=order)
    fixed = jg.productive_fixed_rules(g)
    assert fixed, "every one of these grammars holds some fixed rule"
    found = ir.productive_rules(g)
    assert set(fixed) <= found
    assert ir.productive_rules(g, fixed) == found


@pytest.mark.parametrize("name", [jg.STRING, jg.VALUE, jg.WS, jg.NUMBER])
def test_fixed_rules_replaced_rule_not_named(name):
    g = schema_to_ir({"type": "object", "properties": {"a": {}, "b": {"type": "number"}}})
    assert name in jg.productive_fixed_rules(g)
    g.rules[name].expr = ir.NOTHING         # a front end's own rule under the same name
    assert name not in jg.productive_fixed_rules(g)
    assert name not in ir.productive_rules(g, jg.productive_fixed_rules(g))
