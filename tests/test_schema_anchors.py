"""Plain-name references (`"$ref": "#name"`), `$dynamicRef`, and references by the root's own
absolute URI (cengine/schema/refs.py).

An anchor is declared per draft: `id: "#name"` in draft-04, `$id: "#name"` in drafts 06 and
07, `$anchor` from 2019-09 on and `$dynamicAnchor` in 2020-12. Only the root resource's
anchors are read: an embedded resource (a non-fragment id below the root) keeps its own, and
instance data (`enum`, `const`, `default`, `examples`) declares none. jsonschema is the oracle
for every case that compiles.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
from cengine import CompileError

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"

_NAT = {"type": "integer", "minimum": 0}

# (schema, documents: each checked against jsonschema)
EXACT = [
    pytest.param({"$schema": D4, "definitions": {"n": {"id": "#nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="draft-04 id"),
    pytest.param({"$schema": D6, "definitions": {"n": {"$id": "#nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="draft-06 $id"),
    pytest.param({"$schema": D7, "definitions": {"n": {"$id": "#nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="draft-07 $id"),
    pytest.param({"$schema": D2019, "$defs": {"n": {"$anchor": "nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="2019-09 $anchor"),
    pytest.param({"$schema": D2020, "$defs": {"n": {"$anchor": "nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="2020-12 $anchor"),
    pytest.param({"$defs": {"n": {"$dynamicAnchor": "nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="$ref to a $dynamicAnchor"),
    pytest.param({"$defs": {"n": {"$dynamicAnchor": "nat", **_NAT}},
                  "properties": {"x": {"$dynamicRef": "#nat"}}}, id="$dynamicRef"),
    pytest.param({"$defs": {"n": {"$anchor": "nat", **_NAT}},
                  "properties": {"x": {"$dynamicRef": "#nat"}}}, id="$dynamicRef to $anchor"),
    pytest.param({"$defs": {"n": _NAT}, "properties": {"x": {"$dynamicRef": "#/$defs/n"}}},
                 id="$dynamicRef by pointer"),
    # recursion through an anchor, the root's own
    pytest.param({"$dynamicAnchor": "node", "type": "object",
                  "properties": {"v": _NAT, "kids": {"type": "array",
                                                     "items": {"$dynamicRef": "#node"}}}},
                 id="recursive $dynamicRef"),
    pytest.param({"$schema": D7, "$id": "#tree", "type": "object",
                  "properties": {"v": _NAT, "kids": {"type": "array",
                                                     "items": {"$ref": "#tree"}}}},
                 id="recursive draft-07 anchor"),
    # an anchor and a JSON pointer to the same schema, inside an allOf
    pytest.param({"$defs": {"n": {"$anchor": "nat", **_NAT}},
                  "properties": {"x": {"$ref": "#nat"}, "y": {"$ref": "#/$defs/n"},
                                 "z": {"allOf": [{"$ref": "#nat"}, {"maximum": 3}]}}},
                 id="anchor beside pointer"),
    # an anchor declared in instance data is no anchor; the schema's is found
    pytest.param({"$defs": {"n": {"$anchor": "nat", **_NAT}},
                  "default": {"$anchor": "nat"}, "examples": [{"$anchor": "nat"}],
                  "properties": {"x": {"$ref": "#nat", "default": {"$anchor": "nat"}}}},
                 id="data is no anchor"),
    # the same name in an embedded resource is that resource's own
    pytest.param({"$defs": {"n": {"$anchor": "nat", **_NAT},
                            "other": {"$id": "http://example.org/other", "$anchor": "nat",
                                      "type": "string"}},
                  "properties": {"x": {"$ref": "#nat"}}}, id="embedded resource's own"),
    # an absolute reference by the root's own $id
    pytest.param({"$id": "https://example.org/s.json", "$defs": {"n": _NAT},
                  "properties": {"x": {"$ref": "https://example.org/s.json#/$defs/n"},
                                 "y": {"$ref": "https://example.org/s.json#nat2"}},
                  "$comment": "", "allOf": [{"$defs": {"m": {"$anchor": "nat2", **_NAT}}}]},
                 id="own absolute URI"),
    pytest.param({"$schema": D4, "id": "urn:example:s", "definitions": {"n": _NAT},
                  "properties": {"x": {"$ref": "urn:example:s#/definitions/n"}}},
                 id="own URN, draft-04"),
]

DOCS = ['{"x": 1}', '{"x": 0}', '{"x": -1}', '{"x": "a"}', '{"x": 1.5}', '{}',
        '{"y": 2}', '{"y": -2}', '{"z": 2}', '{"z": 4}', '{"z": -1}',
        '{"v": 1, "kids": [{"v": 2, "kids": []}]}', '{"v": 1, "kids": [{"v": -2}]}',
        '{"kids": [1]}', '{"kids": [{"kids": [{"v": "a"}]}]}', '[]', '"a"', "1"]


def _validator(schema):
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
        schema)


@pytest.mark.parametrize("schema", EXACT)
def test_anchor_references_are_exact(schema):
    g = cengine.compile_json_schema(schema, closed_objects=False)
    oracle = _validator(schema)
    agreed = 0
    for doc in DOCS:
        m = g.matcher()
        ours = m.accept_bytes(doc.encode()) and m.is_accepting()
        want = oracle.is_valid(json.loads(doc))
        assert ours == want, (doc, ours, want)
        agreed += not want
    assert agreed, "no document tells the reference apart from a free value"


def test_anchor_and_pointer_share_one_rule():
    s = {"$defs": {"n": {"$anchor": "nat", **_NAT}},
         "properties": {"x": {"$ref": "#nat"}, "y": {"$ref": "#/$defs/n"}}}
    from cengine.schema import schema_to_ir
    g = schema_to_ir(s, closed_objects=False)
    # one rule for the schema at /$defs/n (References.rule_for names it "...-schema")
    made = [name for name, (_, at) in g.sources.items()
            if at == "/$defs/n" and name.endswith("-schema")]
    assert len(made) == 1, g.sources


REFUSED = [
    # (schema, keyword, pointer, words in the reason)
    ({"properties": {"x": {"$ref": "#nat"}}}, "$ref", "/properties/x/$ref", "points nowhere"),
    ({"$defs": {"a": {"$anchor": "p"}, "b": {"$anchor": "p"}}, "$ref": "#p"}, "$ref", "/$ref",
     "'/$defs/a/$anchor' and at '/$defs/b/$anchor'"),
    # $anchor is no keyword of draft-07: its anchors are `$id: "#..."`
    ({"$schema": D7, "definitions": {"a": {"$anchor": "p"}}, "$ref": "#p"}, "$ref", "/$ref",
     '$id: "#..."'),
    # an embedded resource's anchor is not the root resource's
    ({"$defs": {"r": {"$id": "http://example.org/r", "$defs": {"a": {"$anchor": "p"}}}},
      "$ref": "#p"}, "$ref", "/$ref", "points nowhere"),
    ({"properties": {"x": {"$dynamicRef": "#p"}}}, "$dynamicRef", "/properties/x/$dynamicRef",
     "points nowhere"),
    ({"$defs": {"a": {"$dynamicAnchor": "p"}}, "$dynamicRef": "#p",
      "properties": {"b": {"$id": "http://example.org/b"}}}, "$dynamicRef", "/$dynamicRef",
     "embedded resources"),
    ({"$defs": {"a": {"$anchor": "p"}}, "$dynamicRef": "#p", "$ref": "#p"}, "$dynamicRef",
     "/$dynamicRef", "without '$ref' beside it"),
    # another resource's absolute URI
    ({"$id": "https://example.org/s.json", "$ref": "https://example.org/t.json#/$defs/n"},
     "$ref", "/$ref", "only local references"),
]


@pytest.mark.parametrize("schema,keyword,pointer,words", REFUSED,
                         ids=[r[3][:30] for r in REFUSED])
def test_unresolvable_anchor_references_are_refused(schema, keyword, pointer, words):
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)
    assert words in str(ei.value)
