"""UTF-8 encoding of code-point ranges as sequences of byte ranges.

A set of Unicode scalar values becomes a union of byte-range sequences, e.g.
U+0080..U+07FF -> [C2-DF][80-BF]. The automaton builder adds each sequence as a path
and determinises them, so classes like [^"\\] stay exact at the byte level.
"""
from __future__ import annotations

from typing import Iterator, List, Tuple

_BOUNDS = ((0x0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))
_SURROGATES = (0xD800, 0xDFFF)


def encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def _split_aligned(lo: int, hi: int, n: int) -> Iterator[List[Tuple[int, int]]]:
    # Split [lo, hi] (both encoding to n bytes) until each piece is a product of byte ranges:
    # every continuation position spans a full or contiguous sub-range independently.
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if (lo & ~m) != (hi & ~m):
            if lo & m:
                yield from _split_aligned(lo, lo | m, n)
                yield from _split_aligned((lo | m) + 1, hi, n)
                return
            if (hi & m) != m:
                yield from _split_aligned(lo, (hi & ~m) - 1, n)
                yield from _split_aligned(hi & ~m, hi, n)
                return
    a, b = encode(lo), encode(hi)
    yield [(a[k], b[k]) for k in range(n)]


def sequences(lo: int, hi: int) -> Iterator[List[Tuple[int, int]]]:
    """Byte-range sequences whose union is exactly the UTF-8 encodings of [lo, hi] minus
    surrogates."""
    pieces = []
    if hi < _SURROGATES[0] or lo > _SURROGATES[1]:
        pieces.append((lo, hi))
    else:
        if lo < _SURROGATES[0]:
            pieces.append((lo, _SURROGATES[0] - 1))
        if hi > _SURROGATES[1]:
            pieces.append((_SURROGATES[1] + 1, hi))
    for plo, phi in pieces:
        for n, (blo, bhi) in enumerate(_BOUNDS, start=1):
            a, b = max(plo, blo), min(phi, bhi)
            if a <= b:
                yield from _split_aligned(a, b, n)
