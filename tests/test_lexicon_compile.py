"""Lexicon front end (cengine/lexicon.py): output made only of the given words.

The oracle is a Python `re` built straight from the documented definition:
word (separator word)* [final mark], words and separators escaped literally.
"""
from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cengine
from cengine import ir
from cengine._build_nfa import RuleNfa
from cengine.automaton import MAX_NFA_STATES, _Whitespace
from cengine.errors import CompileError, LimitError
from cengine.lexicon import (FINAL_MARKS, MAX_TOTAL_BYTES, MAX_TRIE_NESTING, MAX_WORD_BYTES,
                             MAX_WORDS, SEPARATORS, lexicon_to_ir, nfa_states, trie_expr)


def expr_depth(e) -> int:
    if isinstance(e, (ir.Seq, ir.Alt)):
        return 1 + max(expr_depth(x) for x in e.items)
    return 1


def oracle(words):
    ws = "|".join(re.escape(w) for w in words if w)
    sep = "|".join(re.escape(s) for s in SEPARATORS)
    end = "|".join(re.escape(s) for s in FINAL_MARKS)
    return re.compile(f"(?:{ws})(?:(?:{sep})(?:{ws}))*(?:{end})?", re.DOTALL)


def accepts(g, text: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(text.encode("utf-8")) and m.is_accepting()


WORDS = ("cat", "car", "cart", "dog", "New York", "é", "日本")

TABLE = [
    ("cat", True),
    ("cat car", True),
    ("car, cart.", True),
    ("New York! dog", True),
    ("dog\ncat", True),
    ("dog; cat: car? cart!", True),
    ("cat.", True),
    ("é 日本 é", True),
    ("cat?", True),
    ("dog!", True),
    ("cat. dog! car? cart, dog; cat: car\ncart dog.", True),   # every separator, long
    ("", False),                  # at least one word
    ("ca", False),                # prefixes of words are not words
    ("carts", False),
    ("Cat", False),               # case-sensitive
    ("cat  dog", False),          # exactly one separator
    ("cat ", False),              # no trailing separator
    (" cat", False),
    ("cat,dog", False),           # ", " is the separator, not ","
    ("cat.. dog", False),
    ("cat!!", False),             # at most one final mark
    ("cat\n", False),
    ("New", False),               # a phrase is one word: no partial phrase
    ("New York York", False),
    ("cat\tdog", False),
    ("cat - dog", False),
    ("cat;dog", False),
    ("cat:", False),
    ("cat,", False),
]


@pytest.mark.parametrize("text,expected", TABLE)
def test_table(text, expected):
    g = cengine.compile_lexicon(WORDS)
    assert accepts(g, text) is expected
    assert bool(oracle(WORDS).fullmatch(text)) is expected


def test_duplicates_and_empty_words_are_dropped():
    a = lexicon_to_ir(("b", "a", "", "a", "b", ""))
    b = lexicon_to_ir(("a", "b"))
    assert a.rules["word"].expr == b.rules["word"].expr
    g = cengine.compile_lexicon(["a", "", "a"])
    assert accepts(g, "a a") and not accepts(g, "") and not accepts(g, "a ")


def test_words_that_contain_separators_are_whole_words():
    g = cengine.compile_lexicon(["etc.", "a b", "x"])
    for text, ok in [("etc.", True), ("etc..", True), ("etc. x", True), ("a b x", True),
                     ("a", False), ("x etc.!", True), ("etc", False)]:
        assert accepts(g, text) is ok, text


def test_prefix_tree_shares_prefixes():
    e = trie_expr([b"car", b"cart", b"cat"])
    assert e == ir.Seq((ir.Bytes(b"ca"),
                        ir.Alt((ir.Seq((ir.Bytes(b"r"), ir.Alt((ir.EMPTY, ir.Bytes(b"t"))))),
                                ir.Bytes(b"t")))))


def test_state_estimate_matches_the_automaton_builder():
    rnd = random.Random(7)
    words = sorted({"".join(rnd.choice("abcde") for _ in range(rnd.randint(1, 8)))
                    for _ in range(500)})
    e = trie_expr([w.encode() for w in words])
    nfa = RuleNfa({}, "word", False, MAX_NFA_STATES, _Whitespace, False)
    nfa.build(e)
    assert nfa_states(e) + 2 == len(nfa.eps)


def test_completion_is_the_shortest_word():
    m = cengine.compile_lexicon(["hello", "hi", "yes"]).matcher()
    assert m.completion() == b"hi"
    assert m.accept_bytes(b"hello, y") and m.completion() == b"es"


def test_deepest_prefix_chain_compiles():
    # every byte of the longest word is a branch point: the deepest trie the limits allow
    words = ["a" * k for k in range(1, MAX_WORD_BYTES + 1)]
    # the expression stays shallow (the IR's walkers recurse): flat suffixes below the cap
    assert expr_depth(trie_expr([w.encode() for w in words])) <= 2 * MAX_TRIE_NESTING + 2
    g = cengine.compile_lexicon(words)
    assert accepts(g, "a" * MAX_WORD_BYTES + " a")
    assert not accepts(g, "a" * (MAX_WORD_BYTES + 1))


def test_thousands_of_words():
    rnd = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rnd.choice(letters) for _ in range(rnd.randint(2, 9)))
                    for _ in range(5000)})
    g = cengine.compile_lexicon(words)
    ora = oracle(words)
    for _ in range(200):
        text = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 4)))
        if rnd.random() < 0.5:      # perturb one character
            i = rnd.randrange(len(text))
            text = text[:i] + rnd.choice("abcz ") + text[i + 1:]
        assert accepts(g, text) == bool(ora.fullmatch(text)), text


@pytest.mark.parametrize("words,error,fragment", [
    ((), CompileError, "no non-empty word"),
    (("", ""), CompileError, "no non-empty word"),
    ("word", CompileError, "not a single string"),
    (("ok", 3), CompileError, "word 1 is a int"),
    (("ok", b"bytes"), CompileError, "word 1 is a bytes"),
    (("ok", "x\ud800"), CompileError, "lone surrogate"),
    (("ok", "x" * (MAX_WORD_BYTES + 1)), LimitError, "bytes long"),
    (("é" * (MAX_WORD_BYTES // 2 + 1),), LimitError, "bytes long"),
    (tuple(str(i) for i in range(MAX_WORDS + 1)), LimitError, "words, more than"),
    (tuple(f"{i:05d}" + "x" * (MAX_WORD_BYTES - 5)
           for i in range(MAX_TOTAL_BYTES // MAX_WORD_BYTES + 1)),
     LimitError, "total"),
    (tuple(f"{i:04d}" + "y" * 250 for i in range(MAX_NFA_STATES // 250 + 1)),
     LimitError, "automaton states"),
])
def test_refusals(words, error, fragment):
    with pytest.raises(error) as info:
        lexicon_to_ir(words)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


# --- hypothesis ---------------------------------------------------------------------------

word_lists = st.lists(st.text(alphabet="ab. ,é", min_size=0, max_size=4), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word_lists, st.text(alphabet="ab. ,!?\né", max_size=12))
def test_random_texts_agree_with_the_definition(words, text):
    assume(any(words))
    g = cengine.compile_lexicon(words)
    assert accepts(g, text) == bool(oracle(words).fullmatch(text))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word_lists, st.data())
def test_generated_documents_are_accepted(words, data):
    assume(any(words))
    present = [w for w in words if w]
    n = data.draw(st.integers(1, 4))
    parts = [data.draw(st.sampled_from(present))]
    for _ in range(n - 1):
        parts += [data.draw(st.sampled_from(SEPARATORS)), data.draw(st.sampled_from(present))]
    parts.append(data.draw(st.sampled_from(("",) + FINAL_MARKS)))
    assert accepts(cengine.compile_lexicon(words), "".join(parts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word_lists, st.data())
def test_walked_documents_satisfy_the_definition(words, data):
    assume(any(words))
    g = cengine.compile_lexicon(words)
    m = g.matcher()
    out = bytearray()
    for _ in range(data.draw(st.integers(0, 16))):
        choices = list(m.allowed_bytes())
        if not choices:
            break
        b = data.draw(st.sampled_from(choices))
        assert m.accept_bytes(bytes([b]))
        out.append(b)
    tail = m.completion()
    assert m.accept_bytes(tail) and m.is_accepting()
    assert oracle(words).fullmatch((bytes(out) + tail).decode("utf-8"))


def test_fill_mask_matches_byte_level_acceptance():
    words = ["cat", "car", "cart", "dog", "日本"]
    tokens = [b"", b"c", b"ca", b"cat", b"car", b"t", b"rt", b" ", b", ", b" dog", b"t d", b".",
              b"!", b"\n", b"dog.", "日".encode(), "日本".encode()[:4], "本".encode(), b"x", b"og"]
    vocab = cengine.Vocabulary(tokens, eos_ids=[0])
    m = cengine.compile_lexicon(words).matcher(vocab)
    rnd = random.Random(5)
    for _ in range(12):
        mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
        m.fill_mask(mask)
        for i, tok in enumerate(tokens):
            bit = bool((int(mask[i // 32]) >> (i % 32)) & 1)
            assert bit == (m.is_accepting() if i == 0 else m.copy().accept_bytes(tok)), tok
        legal = [i for i, tok in enumerate(tokens) if tok and m.copy().accept_bytes(tok)]
        if not legal:
            break
        assert m.accept_token(rnd.choice(legal))
