# cython: language_level=3
# Design: masks are int32 words, bit (i % 32) of word (i // 32) for token i (the contract's
# layout). The helpers the kernels share on masks and byte sets are inline in _bitmask.pxd;
# this module holds the Python entry point, apply_mask, a nogil loop over typed memoryviews.
from libc.stdint cimport int32_t, uint32_t
import numpy as np


def apply_mask(logits, mask) -> None:
    """Set logits[i] = -inf in place wherever bit i of the int32 mask is 0 (GIL released)."""
    cdef float[::1] lg = logits
    cdef const int32_t[::1] mk = mask
    cdef Py_ssize_t n = lg.shape[0], i
    cdef float neg = -np.inf
    if mk.shape[0] * 32 < n:
        raise ValueError(f"mask has {mk.shape[0]} words, logits need {(n + 31) // 32}")
    with nogil:
        for i in range(n):
            if not ((<uint32_t> mk[i >> 5]) >> (i & 31)) & 1:
                lg[i] = neg
