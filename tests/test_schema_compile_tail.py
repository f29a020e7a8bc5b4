"""The compile tail (issue 30, item 3): work a compile skipped must not change what it makes.

- The facts of a schema (negation._facts: types, values, required names, for the disjointness
  proofs of oneOf and of anyOf products) are kept per compile by identity: an allOf of
  if/then blocks folds its anyOf product one block at a time and asked again for the facts of
  every branch at every step. The IR is the same without the memo, and it is read once.
- compile_json_schema leaves the proof that the root derives a document to the refusals: a
  grammar whose root derives none is refused by the build, and the refusal is then the
  schema's own, as schema_to_ir alone (check_productive=True, the default) gives it.
- cengine.prepare makes the enforced formats' strings and their kept positions
  (strings.warm_formats): a compile then makes none of them, and its tables are those made
  without anything kept.
"""
from __future__ import annotations

import numpy as np
import pytest

import cengine
from cengine.schema import compiler, negation, schema_to_ir
from test_schema_merge_fold import REF_CASES, _if_then_allof, _Unkept
from test_schema_merge_reuse import _compiled   # the IR as text, or the refusal


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("name,schema", REF_CASES, ids=[c[0] for c in REF_CASES])
def test_schema_kept_facts_keep_the_ir(name, schema, order, monkeypatch):
    kept = _compiled(schema, order)
    init = compiler._Compiler.__init__

    def unkept_init(self, *args, **kw):
        init(self, *args, **kw)
        self._facts_memo = _Unkept()
    monkeypatch.setattr(compiler._Compiler, "__init__", unkept_init)
    assert _compiled(schema, order) == kept


def _reads(schema, monkeypatch) -> list:
    # the (schema, ptr, closed, depth) whose facts a compile read
    out = []
    read = negation.Negation._read_facts

    def recorded(self, s, ptr, closed, depth):
        out.append((id(s), ptr, closed, depth))
        return read(self, s, ptr, closed, depth)
    monkeypatch.setattr(negation.Negation, "_read_facts", recorded)
    schema_to_ir(schema, closed_objects=False, whitespace_budget=None, property_order="any")
    return out


@pytest.mark.parametrize("n", [3, 4])
def test_schema_facts_read_once_per_node(n, monkeypatch):
    reads = _reads(_if_then_allof(n), monkeypatch)
    assert reads, "the product of the if/then blocks reads facts"
    # (the objects read stay alive in the memo, so an id stands for one object)
    assert len(reads) == len(set(reads))


# (name, schema): the root derives no document; each is refused alike by compile_json_schema
# and by schema_to_ir, naming the document's root
UNPRODUCTIVE = [
    ("false", False),
    ("not-true", {"not": {}}),
    ("required-false", {"type": "object", "properties": {"a": False}, "required": ["a"]}),
    ("endless-ref", {"$ref": "#"}),
    ("endless-property", {"type": "object", "properties": {"a": {"$ref": "#"}},
                          "required": ["a"]}),
    ("endless-array", {"type": "array", "items": {"$ref": "#"}, "minItems": 1}),
    ("empty-length", {"type": "string", "minLength": 5, "maxLength": 2}),
    ("allof-types", {"allOf": [{"type": "string"}, {"type": "integer"}]}),
    ("deep-required", {"type": "object", "required": ["x"], "properties": {
        "x": {"type": "object", "required": ["y"], "properties": {"y": {"enum": []}}}}}),
]


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("name,schema", UNPRODUCTIVE, ids=[c[0] for c in UNPRODUCTIVE])
def test_schema_unproductive_refused_alike(name, schema, order):
    with pytest.raises(cengine.CompileError) as alone:
        schema_to_ir(schema, property_order=order)
    with pytest.raises(cengine.CompileError) as compiled:
        cengine.compile_json_schema(schema, property_order=order)
    for e in (alone.value, compiled.value):
        assert "accepts no finite JSON document" in str(e)
        assert type(e) is cengine.CompileError and e.pointer == "" and e.keyword is None
    # without the proof the grammar is made, and the build refuses it
    g = schema_to_ir(schema, property_order=order, check_productive=False)
    with pytest.raises(cengine.CompileError):
        cengine.grammar.Grammar.from_ir(g)


# schemas the build refuses for a reason of its own keep that refusal
def test_schema_build_refusal_kept():
    schema = {"type": "string", "pattern": "^(a|b)*a(a|b){18}$"}
    budget = cengine.CompileBudget(max_dfa_growth=4)
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema(schema, budget=budget)
    assert "no finite JSON document" not in str(e.value)


@pytest.mark.parametrize("schema", [True, {"type": "object", "properties": {
    "a": {"$ref": "#"}, "b": {"type": "integer"}}}, {"anyOf": [False, {"type": "null"}]}])
def test_schema_productive_compiles_as_before(schema):
    g = cengine.compile_json_schema(schema)
    ref = cengine.grammar.Grammar.from_ir(schema_to_ir(schema))
    for name, _ in cengine.automaton.TABLES:
        assert (getattr(g.automaton, name) == getattr(ref.automaton, name)).all(), name


# --- the enforced formats made at prepare time ----------------------------------------------
def _every_format_schema() -> dict:
    from cengine.schema import formats
    return {"type": "object", "properties": {
        f"p{i}": {"type": "string", "format": name} for i, name in enumerate(formats.FORMATS)}}


def test_warm_formats_leaves_nothing_to_make():
    from cengine import automaton
    from cengine.schema import formats, strings
    strings.warm_formats()
    assert set(formats._FORMAT_EXPRS) == set(formats.FORMATS)
    kept, merged = dict(automaton._KEPT_POSITIONS), dict(automaton._KEPT_MERGED)
    assert kept, "some format string is large enough to be a rule of its own, kept"
    for order in ("any", "declared"):
        automaton.build(schema_to_ir(_every_format_schema(), closed_objects=False,
                                     property_order=order))
    # every format's kept positions (and their merge) were found, none made now
    assert automaton._KEPT_POSITIONS.keys() == kept.keys()
    assert automaton._KEPT_MERGED.keys() == merged.keys()


def test_warm_formats_same_tables():
    from cengine import automaton
    from cengine.schema import strings
    g = schema_to_ir(_every_format_schema(), closed_objects=False, property_order="any")
    strings.warm_formats()
    warm = automaton.build(g)
    saved = dict(automaton._KEPT_POSITIONS), dict(automaton._KEPT_MERGED)
    automaton._KEPT_POSITIONS.clear()
    automaton._KEPT_MERGED.clear()
    try:
        cold = automaton.build(g)
    finally:
        automaton._KEPT_POSITIONS.update(saved[0])
        automaton._KEPT_MERGED.update(saved[1])
    for name, _ in automaton.TABLES:
        assert np.array_equal(getattr(warm, name), getattr(cold, name)), name
