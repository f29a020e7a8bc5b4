"""The allOf fold (_merged) is linear in what each part adds: a merge keeps the properties of
what was merged so far that the next part does not name (_merge_properties), two enums of
many strings are intersected by a set (vocabulary._json_among), the conjunction keys spell
what the compiler made member by member (_json_text, test_schema_conj_key), a part of
annotations alone is not merged where that gives the same (_inert), and a node the compiler
made is flattened once (_flat_nodes) and merged once per origin, a chain going on from its
first conjunct's merge (_merged_nodes). Each must give the IR (rules, ignored keywords) or the
refusal of the plain formula, which is checked here by putting the plain one back; the
language is checked against jsonschema."""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
from cengine.schema import compiler, conjunction
from cengine.schema.vocabulary import _json_among, _json_in
from test_schema_merge_reuse import _compiled   # the IR as text, or the refusal

KINDS = ["a", "b", "c", "d"]


def _if_then_allof(n: int) -> dict:
    """An allOf of if/then blocks keyed by `kind`, each then an allOf of shared parts (a
    runner configuration's shape): the fold meets many parts naming a few properties each."""
    parts = {f"P{i}": {"type": "object", "properties": {f"p{i}": {"type": "integer"},
                                                        "common": {"description": "doc"}},
                       "additionalProperties": True} for i in range(n)}
    blocks = [{"if": {"properties": {"kind": {"const": k}}},
               "then": {"type": "object", "allOf": [{"$ref": f"#/$defs/P{j}"}
                                                    for j in range(n) if j != i],
                        "properties": {"kind": {"const": k}, "version": {"enum": ["1", "2"]}},
                        "required": ["kind"]}}
              for i, k in enumerate(KINDS[:n])]
    return {"$defs": parts, "type": "object",
            "properties": {"kind": {"enum": KINDS}}, "allOf": blocks}


WORDS = [f"w{i}" for i in range(40)]

CASES = [
    ("if-then-allof", _if_then_allof(4)),
    # a name one side leaves to its additionalProperties, the other names
    ("additional-a", {"allOf": [{"properties": {"x": {"type": "integer"}},
                                 "additionalProperties": {"type": "integer", "minimum": 0}},
                                {"properties": {"y": {"maximum": 5}}},
                                {"properties": {"x": {"maximum": 9}, "z": {}}}]}),
    ("additional-b", {"allOf": [{"properties": {"x": {"type": "integer"}}},
                                {"properties": {"y": {"type": "string"}},
                                 "additionalProperties": {"type": ["integer", "string"]}},
                                {"properties": {"x": {"minimum": 2}}}]}),
    # additionalProperties that allow everything, then one that allows nothing
    ("additional-any", {"allOf": [{"properties": {"x": {"type": "integer"}},
                                   "additionalProperties": True},
                                  {"properties": {"y": {}}, "additionalProperties": {"title": "t"}},
                                  {"properties": {"x": {"minimum": 1}, "y": {"type": "null"}},
                                   "additionalProperties": False},
                                  {"properties": {"x": {"maximum": 5}}}]}),
    # patterns on either side: every name is read against them
    ("patterns", {"allOf": [{"properties": {"ab": {"type": "string"}},
                             "patternProperties": {"^a": {"maxLength": 3}}},
                            {"properties": {"ac": {"minLength": 1}}},
                            {"properties": {"ab": {"minLength": 2}}}]}),
    # parts of annotations alone (titled wrappers, an allOf node's own rest) beside patterns,
    # which meet the properties again at each merge
    ("inert-patterns", {"title": "t", "allOf": [
        {"$comment": "c", "allOf": [{"properties": {"ab": {"type": "string"}},
                                     "patternProperties": {"^a": {"maxLength": 3}}}]},
        {"description": "d", "$id": "#x"}, {"properties": {"ab": {"minLength": 1}}}]}),
    ("inert", {"title": "t", "allOf": [{"$comment": "c", "allOf": [{"enum": [1, 2, "a"]}]},
                                       {"description": "d"}, {"x-note": 1},
                                       {"allOf": [{"properties": {"p": {}}}]},
                                       {"title": "u"}, {"prefixItems": [{}], "items": False}]}),
    ("patterns-b", {"allOf": [{"properties": {"ab": {"type": "string"}}},
                              {"patternProperties": {"^a": {"maxLength": 3}}},
                              {"properties": {"ad": {"minLength": 1}}}]}),
    # members that accept everything, and empty properties
    ("everything", {"allOf": [{"properties": {"x": {}, "y": {"description": "d"}}},
                              {"properties": {}},
                              {"properties": {"x": {"type": "null"}}},
                              {"properties": {"y": True, "z": False}}]}),
    ("enum-strings", {"allOf": [{"enum": WORDS + [1, 2.0, True, None]},
                                {"enum": WORDS[::-3] + [1.0, 2, False, "x"]},
                                {"enum": WORDS[5:] + [1, 2, None, [1], {"k": 1}]}]}),
    ("enum-const", {"allOf": [{"enum": WORDS}, {"const": "w7"}, {"enum": WORDS[:10]}]}),
    ("merge-refused", {"allOf": [{"properties": {"v": {"oneOf": [{"type": "string"},
                                                                 {"type": "null"}]}}},
                                 {"properties": {"w": {}}},
                                 {"properties": {"v": {"oneOf": [{"type": "integer"},
                                                                 {"type": "null"}]}}}]}),
]


def _plain_properties(self, a, b, pa, pb, ptr, kw):
    of_a, of_b = self._key_lookup(a, pa, ptr), self._key_lookup(b, pb, ptr)
    return {n: conjunction._all_of(of_a(n) + of_b(n), kw)
            for n in list(pa) + [n for n in pb if n not in pa]}


def _plain_among(xs, values):
    return [x for x in xs if _json_in(x, values)]


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("name,schema", CASES, ids=[c[0] for c in CASES])
def test_schema_merge_fold_keeps_the_ir(name, schema, order, monkeypatch):
    fast = _compiled(schema, order)
    monkeypatch.setattr(compiler._Compiler, "_merge_properties", _plain_properties)
    monkeypatch.setattr(conjunction, "_json_among", _plain_among)
    monkeypatch.setattr(conjunction, "_inert", lambda part: False)
    assert _compiled(schema, order) == fast


class _Unkept(dict):
    """A memo that keeps nothing."""

    def __setitem__(self, key, value):
        pass


# chains through $ref (refused on one path, not on another) beside the table's cases
REF_CASES = CASES + [
    ("ref-cycle", {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}, {"title": "t"}]},
                             "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                   "allOf": [{"properties": {"x": {"type": "integer"}}},
                             {"if": {"properties": {"x": {"const": 1}}},
                              "then": {"properties": {"y": {"$ref": "#/$defs/a"}}}},
                             {"if": {"properties": {"x": {"const": 2}}},
                              "then": {"properties": {"z": {"maximum": 3}}}}]}),
    ("if-then-allof-6", _if_then_allof(4) | {"allOf": _if_then_allof(4)["allOf"] + [
        {"if": {"required": ["p0"]}, "then": {"properties": {"p1": {"minimum": 0}}},
         "else": {"properties": {"p2": {"maximum": 0}}}}]}),
]


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("memo", ["_flat_nodes", "_merged_nodes"])
@pytest.mark.parametrize("name,schema", REF_CASES, ids=[c[0] for c in REF_CASES])
def test_schema_kept_nodes_keep_the_ir(name, schema, memo, order, monkeypatch):
    # a node the compiler made is flattened once from the top (_flat_nodes), merged once
    # per origin, and a chain goes on from its first conjunct's merge (_merged_nodes)
    kept = _compiled(schema, order)
    init = compiler._Compiler.__init__

    def unkept_init(self, *args, **kw):
        init(self, *args, **kw)
        setattr(self, memo, _Unkept())
    monkeypatch.setattr(compiler._Compiler, "__init__", unkept_init)
    assert _compiled(schema, order) == kept


def _merges(schema, monkeypatch, memo=None) -> list:
    """Every merge a compile of schema makes (the facts of oneOf / anyOf products' too), in
    order: the merged node as JSON text (its key order too), where its keywords came from,
    and the original schemas it stands for."""
    out = []
    merged = conjunction.Conjunction._merged

    def recorded(self, node, ptr, origin):
        if memo is not None and not isinstance(getattr(self, memo), _Unkept):
            setattr(self, memo, _Unkept())
        m = merged(self, node, ptr, origin)
        out.append(m if m is False else (json.dumps(m), dict(m.src), json.dumps(m.parts)))
        return m
    with monkeypatch.context() as mp:
        mp.setattr(conjunction.Conjunction, "_merged", recorded)
        _compiled(schema, "any")
    return out


@pytest.mark.parametrize("name,schema", REF_CASES, ids=[c[0] for c in REF_CASES])
def test_schema_kept_merges_are_the_merges(name, schema, monkeypatch):
    # each merge, kept or gone on from a kept one, is the merge made afresh
    assert _merges(schema, monkeypatch) == _merges(schema, monkeypatch, "_merged_nodes")


def test_schema_merge_fold_cases_compile_and_refuse_as_meant():
    got = {name: _compiled(schema, "any")[0] == "refused" for name, schema in CASES}
    assert got == {name: name == "merge-refused" for name, _ in CASES}


# (schema, valid documents, invalid documents)
LANGUAGE = [
    # without `kind` every `if` holds, and each `then` requires it
    (_if_then_allof(4), ['{"kind": "a", "p1": 1, "p2": 2, "p3": 3}', '{"kind": "a", "p0": "x"}',
                         '{"kind": "d", "version": "2", "p0": 0}'],
     ['{"kind": "a", "p1": "x"}', '{"kind": "e"}', '{"kind": "b", "version": "3"}',
      '{"p0": 1}', '{}', '{"kind": "c", "p3": []}']),
    (dict(CASES)["additional-a"], ['{"x": 3, "y": 1, "z": 4}', '{"w": 0}'],
     ['{"x": 10}', '{"y": -1}', '{"x": 1.5}']),
    (dict(CASES)["enum-strings"], ['"w9"', '"w36"', "1", "2", "2.0"],
     ['"w0"', '"w1"', "true", "null", '"x"', "[1]"]),
]


@pytest.mark.parametrize("schema,good,bad", LANGUAGE)
def test_schema_merge_fold_is_exact(schema, good, bad):
    validator = jsonschema.Draft202012Validator(schema)
    assert all(validator.is_valid(json.loads(d)) for d in good)
    assert not any(validator.is_valid(json.loads(d)) for d in bad)
    g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None,
                                    property_order="any")
    for doc, ok in [(d, True) for d in good] + [(d, False) for d in bad]:
        m = g.matcher()
        assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == ok, doc


VALUES = ["a", "b", 1, 1.0, 2, True, False, None, [1], [1.0], {"k": 1}, {"k": True}, "1"]


@pytest.mark.parametrize("xs", [VALUES, VALUES[::-1] * 3, ["a"], []])
@pytest.mark.parametrize("values", [VALUES, VALUES[::2] * 2, ["b", "a", 1.0], [], [True]])
def test_json_among_is_the_plain_filter(xs, values):
    assert _json_among(xs, values) == _plain_among(xs, values)
