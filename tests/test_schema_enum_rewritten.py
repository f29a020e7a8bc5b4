"""enum / const beside keywords a merge or a negation rewrote (cengine/schema/enums.py,
_rewritten_valid): no original schema stands behind such a node, so its values are checked
against the node itself, by the draft's validator reading the compiler's internal keywords
(values excluded, names absent, string languages excluded or required, a witness element, a
fraction). jsonschema on the original schema is the oracle.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
from cengine import CompileError
from cengine.schema import enums

D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"

_WORDS = ["apple", "avocado", "banana", "cherry", "a1", "B2", "", "x y"]

def _object(values, cond, then=True, else_=True, draft=None):
    """An object whose `v` takes one of values, under `if v satisfies cond`: the else branch
    (NOT if, merged with the enum beside it) is a rewritten node."""
    s = {"type": "object", "required": ["v"], "properties": {"v": {"enum": values}},
         "if": {"properties": {"v": cond}}, "then": {"properties": {"v": then}},
         "else": {"properties": {"v": else_}}}
    return s if draft is None else {"$schema": draft, **s}


EXACT = [
    # NOT pattern: a string language excluded
    _object(_WORDS, {"pattern": "^a"}, {"minLength": 5}, {"maxLength": 2}),
    _object(_WORDS, {"pattern": "[0-9]"}, {"maxLength": 1}, draft=D7),
    # NOT format: an enforced format's strings excluded
    _object(["2024-01-02", "tomorrow", "2024-13-01", 5], {"format": "date"},
            {"maxLength": 5}, {"type": "string"}),
    # NOT integer: a number that is no integer
    _object([1, 1.5, 3, -0.25, "x"], {"type": "integer"}, {"minimum": 2}, {"maximum": 0}),
    # NOT required: names absent
    _object([{"a": 1}, {"b": 2}, {"a": 2, "b": 2}, {}], {"required": ["a"]},
            {"properties": {"a": {"const": 1}}}, {"required": ["b"]}),
    # NOT items: an element failing them
    _object([[1, 2], [1, "x"], [], ["y"]], {"items": {"type": "integer"}}, {"minItems": 1},
            {"maxItems": 1}),
]


def _valid(schema, value) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


@pytest.mark.parametrize("schema", EXACT, ids=[json.dumps(s["if"])[:50] for s in EXACT])
def test_enum_beside_rewritten_keywords_is_exact(schema, monkeypatch):
    seen = []
    read = enums.Enums._rewritten_valid

    def spy(self, value, node, ptr, kw):
        seen.append(value)
        return read(self, value, node, ptr, kw)
    monkeypatch.setattr(enums.Enums, "_rewritten_valid", spy)
    g = cengine.compile_json_schema(schema, closed_objects=False)
    assert seen, "the values were not read through a rewritten node"
    wrong = []
    for v in schema["properties"]["v"]["enum"]:
        doc = {"v": v}
        m = g.matcher()
        ours = m.accept_bytes(json.dumps(doc).encode()) and m.is_accepting()
        if ours != _valid(schema, doc):
            wrong.append((v, ours))
    assert wrong == []


def test_rewritten_keywords_outside_the_common_set_are_refused():
    # contains: read alike by draft-07 and 2020-12 only without minContains, so outside the
    # set _rewritten_valid reads
    s = _object(_WORDS, {"pattern": "^a"}, True, {"contains": {"const": 1}}, draft=D7)
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema(s)
    assert ei.value.keyword == "enum"
    assert "a merge rewrote" in str(ei.value)
