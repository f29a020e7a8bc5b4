"""The exit groups' suffix walks of one mask are joined per suffix trie (_mask.SuffixWalks):
stacks with one top and different frames below (an ambiguous grammar: a string called from
several rules, a oneOf narrowed into overlapping alternatives) are walked together, their
entries joined, once per trie instead of once per stack. Checked against brute force (every
token tried on the matcher) at states with many such stacks, over llama-bpe."""
import numpy as np
import pytest

import cengine
from material import vocab_gguf
from test_mask_exact import bits_of, brute_force, check_random_states


@pytest.fixture(scope="module")
def llama_bpe():
    v = cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))
    cengine.prepare(v)
    return v


# a quoted word called from eight rules, each closing it with a different tail: after the
# opening quote and a letter, eight stacks share the word's top with different frames below
EIGHT_TAILS = "root ::= " + " | ".join(f"t{k}" for k in range(8)) + "\n" + "\n".join(
    f't{k} ::= "\\"" word "\\"" "{tail}"' for k, tail in
    enumerate([",", ":", "]", "}", " x", " y", "\\n", ";"])) + "\nword ::= [a-z] word | \"\""

# sixty tails, several alike (`" x` reached from four rules): the joined entries pass
# _matcher's DEDUP_HASH_MIN, so their steps are deduplicated through its hash set
SIXTY_TAILS = "root ::= " + " | ".join(f"u{k}" for k in range(60)) + "\n" + "\n".join(
    f'u{k} ::= "\\"" word "\\"" "{chr(0x61 + k % 15)}{k % 4}"' for k in range(60)) + \
    "\nword ::= [a-z] word | \"\""

# an anyOf of open objects sharing their string properties (an array of a union, as
# Github_hard---o77317 and o25763 have): a string's closing quote exits into each branch
UNION = {"type": "array", "items": {"anyOf": [
    {"type": "object", "properties": {"id": {"type": "string"}, "a": {"type": "integer"}},
     "required": ["id"]},
    {"type": "object", "properties": {"id": {"type": "string"}, "b": {"type": "boolean"}},
     "required": ["id"]},
    {"type": "object", "properties": {"id": {"type": "string"}, "c": {"type": "null"}}},
]}}

CASES = {
    "eight_tails": (lambda: cengine.compile_gbnf(EIGHT_TAILS), b'"ab'),
    "sixty_tails": (lambda: cengine.compile_gbnf(SIXTY_TAILS), b'"ab'),
    "union_of_objects": (lambda: cengine.compile_json_schema(UNION, closed_objects=False,
                                                             property_order="any"),
                         b'[{"id": "x1'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_joined_suffix_walks_equal_brute_force(llama_bpe, name):
    make, prefix = CASES[name]
    cengine.CACHE.clear()
    g = make()
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(prefix)
    tops = [stack[0] for stack, _ in m.stacks() if stack]
    assert len(tops) >= 3 and len(set(tops)) < len(tops), tops   # shared tops
    for _ in range(2):              # the tables' first visit, then built
        mask = np.zeros(cengine.mask_words(llama_bpe.size), np.int32)
        m.fill_mask(mask)
        got = bits_of(mask, llama_bpe.size)
        want = brute_force(m, llama_bpe)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, [(int(i), llama_bpe.tokens[i], bool(got[i])) for i in bad[:8]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_joined_suffix_walks_random_states(llama_bpe, name):
    make, prefix = CASES[name]
    cengine.CACHE.clear()
    g = make()
    pieces = [prefix[i:i + 2] for i in range(0, len(prefix), 2)]
    assert check_random_states(g, llama_bpe, 16, seed=3, docs=[pieces]) == 16
