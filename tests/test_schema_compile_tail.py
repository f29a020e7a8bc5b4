"""The compile tail (issue 30, item 3): work a compile skipped must not change what it makes.

- The facts of a schema (negation._facts: types, values, required names, for the disjointness
  proofs of oneOf and of anyOf products) are kept per compile by identity: an allOf of
  if/then blocks folds its anyOf product one block at a time and asked again for the facts of
  every branch at every step. The IR is the same without the memo, and it is read once.
- compile_json_schema leaves the proof that the root derives a document to the refusals: a
  grammar whose root derives none is refused by the build, and the refusal is then the
  schema's own, as schema_to_ir alone (check_productive=True, the default) gives it.
"""
from __future__ import annotations

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

