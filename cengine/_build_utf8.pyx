# Design: a charset's UTF-8 byte-range sequences over C ints (cengine.utf8.sequences, made
# once per code point set and cached), and a number per UTF-8 tail for the share-mode keys of
# the Thompson construction (_build_nfa).
"""UTF-8 byte-range sequences of code point sets, for the automaton builder's Thompson
construction (cengine._build_nfa)."""
from libc.stdint cimport int64_t
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from .utf8 import sequences as _sequences

# UTF-8 byte-range sequences of a code point set (pure, shared by every grammar)
cdef dict _SEQ_CACHE = {}


cdef list _charset_sequences(ranges):
    seqs = _SEQ_CACHE.get(ranges)
    if seqs is None:
        seqs = []
        for lo, hi in ranges:
            _append_sequences(lo, hi, seqs)
        if len(_SEQ_CACHE) > 4096:
            _SEQ_CACHE.clear()
        _SEQ_CACHE[ranges] = seqs
    return seqs


# cengine.utf8.sequences over C ints (a charset met for the first time cost a Python
# generator per range and per split); the same sequences in the same order, each a tuple of
# (lo, hi) byte ranges. Ranges outside the code points go to the Python function as before.
cdef long _SURR_LO = 0xD800, _SURR_HI = 0xDFFF
cdef long _BOUND_LO[4]
cdef long _BOUND_HI[4]
_BOUND_LO[:] = [0x0, 0x80, 0x800, 0x10000]
_BOUND_HI[:] = [0x7F, 0x7FF, 0xFFFF, 0x10FFFF]


cdef inline void _utf8(long cp, int n, int* out) noexcept:
    """The n UTF-8 bytes of cp (a surrogate encoded like any other 3-byte code point)."""
    cdef int k
    if n == 1:
        out[0] = <int>cp
        return
    for k in range(n - 1, 0, -1):
        out[k] = 0x80 | <int>(cp & 0x3F)
        cp >>= 6
    out[0] = (0xC0 if n == 2 else 0xE0 if n == 3 else 0xF0) | <int>cp


cdef int _split_aligned(long lo, long hi, int n, list out) except -1:
    """utf8._split_aligned: [lo, hi] (all n bytes long) as products of byte ranges."""
    cdef int i, k
    cdef long m
    cdef int a[4]
    cdef int b[4]
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if (lo & ~m) != (hi & ~m):
            if lo & m:
                _split_aligned(lo, lo | m, n, out)
                _split_aligned((lo | m) + 1, hi, n, out)
                return 0
            if (hi & m) != m:
                _split_aligned(lo, (hi & ~m) - 1, n, out)
                _split_aligned(hi & ~m, hi, n, out)
                return 0
    _utf8(lo, n, a)
    _utf8(hi, n, b)
    sq = PyTuple_New(n)
    for k in range(n):
        x = (a[k], b[k])
        Py_INCREF(x)
        PyTuple_SET_ITEM(sq, k, x)
    out.append(sq)
    return 0


cdef int _append_sequences(lo_obj, hi_obj, list out) except -1:
    """Append the byte-range sequences of the code points [lo, hi] (utf8.sequences)."""
    cdef long lo, hi, plo, phi, a, b
    cdef long p_lo[2]
    cdef long p_hi[2]
    cdef int np = 0, j, n
    if not (0 <= lo_obj <= 0x10FFFF and 0 <= hi_obj <= 0x10FFFF):
        out.extend([tuple(sq) for sq in _sequences(lo_obj, hi_obj)])
        return 0
    lo = lo_obj
    hi = hi_obj
    if hi < _SURR_LO or lo > _SURR_HI:
        p_lo[0] = lo
        p_hi[0] = hi
        np = 1
    else:
        if lo < _SURR_LO:
            p_lo[np] = lo
            p_hi[np] = _SURR_LO - 1
            np += 1
        if hi > _SURR_HI:
            p_lo[np] = _SURR_HI + 1
            p_hi[np] = hi
            np += 1
    for j in range(np):
        plo = p_lo[j]
        phi = p_hi[j]
        for n in range(4):
            a = plo if plo > _BOUND_LO[n] else _BOUND_LO[n]
            b = phi if phi < _BOUND_HI[n] else _BOUND_HI[n]
            if a <= b:
                _split_aligned(a, b, n + 1, out)
    return 0


def _utf8_sequences(lo, hi):
    """The sequences the builder makes for the code points [lo, hi], as a list of tuples
    (tests/test_automaton_utf8_sequences.py compares them with cengine.utf8.sequences)."""
    out = []
    _append_sequences(lo, hi, out)
    return out


# the UTF-8 tails (continuation byte ranges ending a sequence) met so far, each numbered
# once; a number is never given again (after a clear, a tail only gets a new one)
cdef dict _TAIL_IDS = {}
cdef int64_t _next_tail_id = 0


cdef int64_t _tail_id(tuple sq, int i) except -1:
    """The number of sq[i:], the same for equal tails of any sequence."""
    global _next_tail_id
    tail = sq[i:]
    n = _TAIL_IDS.get(tail)
    if n is None:
        if len(_TAIL_IDS) > 65536:
            _TAIL_IDS.clear()
        n = _next_tail_id
        _next_tail_id += 1
        _TAIL_IDS[tail] = n
    return <int64_t>n


# --- the inlining pass (automaton._inline_small_rules) -----------------------------------
# One walk over the rules' Python expressions flattens them into a DAG of int-indexed nodes
# (composite subtrees deduplicated by identity: front ends share them, an object's chains of
# optional members above all). Every question the pass asks (which rules a rule calls, which
# are recursive, how long a rule's match is, how big an inlined body is, which subtrees
# change) is then answered over C++ vectors, and only the subtrees that change are rebuilt as
# Python objects. The answers are exactly those of the frozen pure-Python pass,
# tests/oracles/inline_reference.py (which documents them): the same expressions, sharing
