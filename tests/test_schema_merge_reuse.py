"""allOf merges reuse what they already read: a $ref target's conjuncts are read once per
compile (_flatten_ref), a property's schema object compiled without new rules keeps its
expression for its next places (_property_value), a patternProperties pattern is parsed once
(_pattern_language). Each must give the IR (rules, ignored keywords) or the refusal (keyword,
pointer) of the compile without it, which is checked here by turning each off. A conjunct that
accepts everything (a `type` list of every type) is dropped, so a `$ref` beside it stays one
call: checked against jsonschema and by the rules made.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
from cengine.schema import compiler, schema_to_ir
from cengine.schema import strings as js

EVERY_TYPE = ["array", "boolean", "integer", "null", "number", "object", "string"]


def _chain(n: int, tail: dict) -> dict:
    """$defs L0..L{n-1}, each an allOf of a $ref to the next (the last to tail)."""
    defs = {f"L{i}": {"allOf": [{"$ref": f"#/$defs/L{i + 1}"},
                                {"properties": {f"p{i}": {"type": "integer"}}}]}
            for i in range(n)}
    defs[f"L{n}"] = tail
    return defs


# a protocol: every message extends the one before it (the Debug Adapter Protocol's shape)
PROTOCOL = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "definitions": {
        "Message": {"type": "object", "properties": {
            "seq": {"type": "integer"},
            "type": {"type": "string", "x-note": "an unknown keyword, recorded as ignored"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "meta": {"enum": [{"a": 1}, {"b": 2}]}}, "required": ["seq", "type"]},
        "Request": {"allOf": [{"$ref": "#/definitions/Message"}, {
            "type": "object", "properties": {
                "type": {"enum": ["request"]}, "command": {"type": "string"},
                "arguments": {"type": EVERY_TYPE, "description": "anything"}},
            "required": ["command"]}]},
        "CancelArguments": {"type": "object", "properties": {"id": {"type": "integer"}},
                            "patternProperties": {"^x_[a-z]+$": {"type": "boolean"}}},
        "CancelRequest": {"allOf": [{"$ref": "#/definitions/Request"}, {
            "properties": {"command": {"enum": ["cancel"]},
                           "arguments": {"$ref": "#/definitions/CancelArguments"}}}]},
        "PauseRequest": {"allOf": [{"$ref": "#/definitions/Request"}, {
            "properties": {"command": {"enum": ["pause"]},
                           "arguments": {"type": "object", "patternProperties": {
                               "^x_[a-z]+$": {"type": "boolean"}}}}}]},
    },
    "type": "object",
    "properties": {"cancel": {"$ref": "#/definitions/CancelRequest"},
                   "pause": {"$ref": "#/definitions/PauseRequest"},
                   "other": {"$ref": "#/definitions/CancelArguments"}},
}

# (name, schema): compiled alike with and without each reuse (or refused alike)
CASES = [
    ("protocol", PROTOCOL),
    ("draft4-protocol", {**PROTOCOL, "$schema": "http://json-schema.org/draft-04/schema#"}),
    ("diamond", {"$defs": {"base": {"properties": {"a": {"type": "string", "maxLength": 2}}},
                           "left": {"allOf": [{"$ref": "#/$defs/base"}, {"required": ["a"]}]},
                           "right": {"allOf": [{"$ref": "#/$defs/base"},
                                               {"properties": {"b": {}}}]}},
                 "allOf": [{"$ref": "#/$defs/left"}, {"$ref": "#/$defs/right"}]}),
    ("cycle", {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]},
                         "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
               "properties": {"x": {"$ref": "#/$defs/a"}}}),
    # the tail is first read at a shallow depth (x), then again at the end of a chain that
    # takes the path past the depth bound (y): refused alike
    ("depth-after-reuse", {"$defs": {**_chain(31, {"allOf": [{"$ref": "#/$defs/T1"}]}),
                                     "T1": {"allOf": [{"$ref": "#/$defs/T2"}]},
                                     "T2": {"allOf": [{"$ref": "#/$defs/T3"}]},
                                     "T3": {"type": "object"}},
                           "properties": {"x": {"allOf": [{"$ref": "#/$defs/T1"}]},
                                          "y": {"allOf": [{"$ref": "#/$defs/L0"}]}}}),
    ("depth-within-bound", {"$defs": {**_chain(28, {"allOf": [{"$ref": "#/$defs/T1"}]}),
                                      "T1": {"allOf": [{"$ref": "#/$defs/T2"}]},
                                      "T2": {"type": "object"}},
                            "properties": {"x": {"allOf": [{"$ref": "#/$defs/T1"}]},
                                           "y": {"allOf": [{"$ref": "#/$defs/L0"}]}}}),
    ("merge-refused", {"$defs": {"a": {"properties": {"v": {"oneOf": [{"type": "string"},
                                                                       {"type": "null"}]}}},
                                 "b": {"properties": {"v": {"oneOf": [{"type": "integer"},
                                                                      {"type": "null"}]}}}},
                       "properties": {"p": {"allOf": [{"$ref": "#/$defs/a"},
                                                      {"$ref": "#/$defs/b"}]},
                                      "q": {"allOf": [{"$ref": "#/$defs/b"},
                                                      {"$ref": "#/$defs/a"}]}}}),
]


def _compiled(schema, order: str):
    """The IR as text (rules, root, ignored keywords), or the refusal."""
    try:
        g = schema_to_ir(schema, closed_objects=False, whitespace_budget=None,
                         property_order=order)
    except cengine.CompileError as e:
        return ("refused", type(e).__name__, e.keyword, e.pointer)
    rules = [(n, repr(r.expr), r.container, r.whitespace) for n, r in g.rules.items()]
    return (rules, g.root, g.ignored_keywords, dict(g.sources))


def _without_flatten_reuse(self, target, tptr, seen, origin):
    return self._flatten(target, tptr, seen, origin)


def _without_value_reuse(self, schema, ptr):
    return self.compile(schema, ptr)


def _without_pattern_reuse(self, pattern, pp_ptr):
    return js.pattern_expr(pattern, pp_ptr)


REUSES = [("_flatten_ref", _without_flatten_reuse),
          ("_property_value", _without_value_reuse),
          ("_pattern_language", _without_pattern_reuse)]


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("reuse,plain", REUSES, ids=[r for r, _ in REUSES])
@pytest.mark.parametrize("name,schema", CASES, ids=[c[0] for c in CASES])
def test_schema_merge_reuse_keeps_the_ir(name, schema, reuse, plain, order, monkeypatch):
    with_reuse = _compiled(schema, order)
    monkeypatch.setattr(compiler._Compiler, reuse, plain)
    assert _compiled(schema, order) == with_reuse


def test_schema_merge_reuse_cases_compile_and_refuse_as_meant():
    # the table has both kinds, so the comparison above sees IR and refusals
    got = {name: _compiled(schema, "any")[0] == "refused" for name, schema in CASES}
    assert got == {"protocol": False, "draft4-protocol": False, "diamond": False,
                   "cycle": True, "depth-after-reuse": True, "depth-within-bound": False,
                   "merge-refused": True}


ANY_BESIDE_REF = {
    "$defs": {"X": {"type": "object", "properties": {"a": {"type": "integer"}},
                    "required": ["a"]},
              "Base": {"type": "object",
                       "properties": {"p": {"type": EVERY_TYPE, "description": "anything"}}}},
    "type": "object",
    "properties": {"m": {"allOf": [{"$ref": "#/$defs/Base"},
                                   {"properties": {"p": {"$ref": "#/$defs/X"}}}]},
                   "q": {"$ref": "#/$defs/X"}},
}

# (schema, valid documents, invalid documents)
EVERYTHING_CASES = [
    (ANY_BESIDE_REF, ['{"m": {"p": {"a": 1}}}', '{"m": {"p": {"a": 1, "b": null}}, "q": {"a": 2}}',
                      "{}", '{"m": {}}'],
     ['{"m": {"p": {}}}', '{"m": {"p": 1}}', '{"m": {"p": {"a": "1"}}}', '{"q": []}']),
    ({"allOf": [{"type": EVERY_TYPE}, {"type": "string", "maxLength": 2}]},
     ['"ab"', '""'], ['"abc"', "1", "null"]),
    # not everything: integer and the rest without number, or a keyword beside the list
    ({"allOf": [{"type": ["array", "boolean", "integer", "null", "object", "string"]},
                {"maximum": 3}]}, ["3", "[]", "null"], ["2.5", "4"]),
    ({"allOf": [{"type": EVERY_TYPE, "minLength": 2}, {"maxLength": 3}]},
     ['"ab"', "1", "{}"], ['"a"', '"abcd"']),
]


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("schema,good,bad", EVERYTHING_CASES)
def test_schema_merge_everything_conjunct_is_exact(schema, good, bad, order):
    validator = jsonschema.Draft202012Validator(schema)
    assert all(validator.is_valid(json.loads(d)) for d in good)
    assert not any(validator.is_valid(json.loads(d)) for d in bad)
    g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None,
                                    property_order=order)
    for doc, ok in [(d, True) for d in good] + [(d, False) for d in bad]:
        m = g.matcher()
        assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == ok, doc


def test_schema_merge_ref_beside_everything_stays_a_call():
    # X's object is compiled once (its rule called from m's p and from q), not again as a
    # merge of Base's p and X
    g = schema_to_ir(ANY_BESIDE_REF, closed_objects=False, whitespace_budget=None,
                     property_order="declared")
    objects = [n for n in g.rules if n.startswith("s-") and n.endswith("-object")]
    assert len(objects) == 3, objects       # the root's, m's and X's
