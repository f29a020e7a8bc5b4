"""First visits of narrow positions are walked over the vocabulary directly, all such stacks of
a state in one walk (the union of their masks): exact against the brute-force answer, on
states with several narrow stacks at once (a root that takes any value, unions of objects,
whitespace before the value, budgets), at the first visit and at the second (tables)."""
import numpy as np
import pytest

import cengine
from material import vocab_gguf

from test_mask_exact import bits_of, brute_force

# (schema, or GBNF text, compile options, document whose prefixes are masked)
CASES = {
    "any_value": ({}, {}, b' {"a": [1, "x"]}'),
    "any_value_budget": ({}, {"whitespace_budget": 2}, b'  [ {"k": null}, true]'),
    "union_of_kinds": ({"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"},
                                  {"type": "integer"}, {"type": "null"}]}, {},
                       b'\n-12'),
    "union_of_objects": ({"anyOf": [
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"type": "array", "items": {"type": "boolean"}}]},
        {"closed_objects": True}, b'{ "id": 7}'),
    "generation_form": ({"type": "object", "properties": {"v": {}}},
                        {"surrounding_whitespace": False}, b'{"v": {"w": [ ]}}'),
    # after "a": whitespace loops for one stack and is the next literal byte for the other,
    # so it does not loop for the two together (each is walked alone)
    "whitespace_loops_for_one": ('root ::= "a" ( " b" | ws "c" ) "."\nws ::= [ \\t\\n]*',
                                 {}, b"a \tc."),
}


def _compile(schema, options):
    if isinstance(schema, str):
        return cengine.compile_gbnf(schema, **options)
    return cengine.compile_json_schema(schema, **options)


@pytest.fixture(scope="module")
def llama_bpe():
    return cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))


def _prefix_states(grammar, vocab, doc):
    """A fresh matcher at each prefix of doc that the grammar takes (every prefix is a first
    visit of its positions for a grammar compiled anew)."""
    for k in range(len(doc) + 1):
        m = grammar.matcher(vocab)
        if m.accept_bytes(doc[:k]):
            yield k, m


@pytest.mark.parametrize("name", sorted(CASES))
def test_mask_direct_walks_exact(llama_bpe, name):
    schema, options, doc = CASES[name]
    words = cengine.mask_words(llama_bpe.size)
    several = 0
    for k, m0 in _prefix_states(_compile(schema, options), llama_bpe, doc):
        want = brute_force(m0, llama_bpe)
        for visit in ("first", "second"):
            # a grammar compiled anew for each prefix: no table of its positions exists yet
            cengine.CACHE.clear()
            m = _compile(schema, options).matcher(llama_bpe)
            assert m.accept_bytes(doc[:k])
            mask = np.zeros(words, np.int32)
            m.fill_mask(mask)
            if visit == "second":
                m.fill_mask(mask)       # the positions' tables now, where they are built
            got = bits_of(mask, llama_bpe.size)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (doc[:k], visit, [(int(i), llama_bpe.tokens[i], bool(got[i]))
                                                    for i in bad[:8]])
        several += m0.n_stacks > 1
    assert several > 0      # the case does reach states of several stacks
