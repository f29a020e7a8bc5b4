"""The builder's UTF-8 byte-range sequences of a code point range (cengine._build_utf8, over C
ints) are exactly those of cengine.utf8.sequences, the same sequences in the same order: the
NFA of a character set is made from them, so any difference changes the automaton's
numbering or its language."""
from __future__ import annotations

import random

import pytest

from cengine import utf8
from cengine._build_utf8 import _utf8_sequences

EDGES = [0x0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFFFF,
         0x10000, 0x3FFFF, 0x40000, 0x10FFFF]

CASES = [
    (0x0, 0x10FFFF),            # everything: every length, the surrogates cut out
    (0x20, 0x7E),               # one byte
    (0x80, 0x7FF),              # two bytes, aligned
    (0x81, 0x7FE),              # two bytes, split at both ends
    (0x0, 0x21),
    (0x23, 0x5B),
    (0x5D, 0x10FFFF),           # a JSON string character, the piece after the backslash
    (0xD800, 0xDFFF),           # only surrogates: nothing
    (0xD7FF, 0xE000),           # the two code points around them
    (0x1F600, 0x1F64F),         # four bytes
    (0x10000, 0x10FFFF),
    (0x41, 0x40),               # empty
    (0x12345, 0x12345),         # one code point
]


def _reference(lo, hi):
    return [tuple(sq) for sq in utf8.sequences(lo, hi)]


@pytest.mark.parametrize("lo, hi", CASES)
def test_utf8_sequences_match_the_python_function(lo, hi):
    assert _utf8_sequences(lo, hi) == _reference(lo, hi)


def test_utf8_sequences_match_around_every_boundary():
    points = sorted({max(0, min(0x10FFFF, e + d)) for e in EDGES for d in (-1, 0, 1)})
    for lo in points:
        for hi in points:
            assert _utf8_sequences(lo, hi) == _reference(lo, hi), (hex(lo), hex(hi))


def test_utf8_sequences_match_on_random_ranges():
    rng = random.Random(7)
    for _ in range(3000):
        a, b = sorted(rng.randrange(0x110000) for _ in range(2))
        if rng.random() < 0.3:          # short ranges: more splits at the ends
            b = min(0x10FFFF, a + rng.randrange(200))
        assert _utf8_sequences(a, b) == _reference(a, b), (hex(a), hex(b))


def test_utf8_sequences_notice_a_difference():
    # the comparison is not vacuous: a neighbouring range gives other sequences
    assert _utf8_sequences(0x81, 0x7FF) != _reference(0x80, 0x7FF)
