# distutils: language = c++
# Design: the position tables every phase of the builder shares (declared in
# _build_positions.pxd): the compile-work budget, positions appended ready-made (an any-order
# object's, a rule kept from an earlier build) and rules' call-free positions packed to keep.
"""The automaton builder's position tables and compile-work budget (cengine._build's
kernels)."""
from libc.stdint cimport int64_t
import numpy as np

from .errors import LimitError


cdef class Positions:
    """Every rule's positions (CSR tables) and the compile work spent making them."""

    cdef int _past_mark(self) except -1:
        # spend's rare path: over the limit, or time to let other threads run
        if self.used > self.limit:
            raise LimitError(f"grammar too costly to compile: more than {self.limit:,} units "
                             f"of automaton construction work ({self.limit_name})",
                             limit="max_compile_work")
        if self.used >= self.next_yield:
            self.next_yield = self.used + GIL_YIELD_UNITS
            with nogil:         # a thread waiting for the GIL takes it here
                _no_op()
        return 0

    cdef int add_packed(self, int rule, const int[::1] packed, int64_t units) except -1:
        # add_positions' work; units < 0: spend a unit per position, edge and call
        cdef int base = <int>self.finals.size()
        cdef int n = <int>packed.shape[0]
        if n < 3 or n != 5 + 3 * packed[0] + 4 * packed[1] + 2 * packed[2]:
            raise ValueError("add_positions: not a packed table of positions")
        cdef int P = packed[0], E = packed[1], C = packed[2]
        cdef const int* finals = &packed[3]
        cdef const int* e_off = finals + P
        cdef const int* e_lo = e_off + P + 1
        cdef const int* e_hi = e_lo + E
        cdef const int* e_to = e_hi + E
        cdef const int* e_ws = e_to + E
        cdef const int* c_off = e_ws + E
        cdef const int* c_rule = c_off + P + 1
        cdef const int* c_to = c_rule + C
        cdef int p, k
        cdef int e0 = <int>self.e_lo.size() - e_off[0], c0 = <int>self.c_rule.size() - c_off[0]
        spend(self, <int64_t>P + E + C if units < 0 else units)
        if base + P > self.max_positions:
            raise LimitError(f"grammar needs more than {self.max_positions} positions")
        for p in range(P):
            self.finals.push_back(finals[p])
            self.pos_rule.push_back(rule)
            self.e_off.push_back(e0 + e_off[p + 1])
            self.c_off.push_back(c0 + c_off[p + 1])
        self.e_lo.insert(self.e_lo.end(), e_lo, e_lo + E)
        self.e_hi.insert(self.e_hi.end(), e_hi, e_hi + E)
        self.e_ws.insert(self.e_ws.end(), e_ws, e_ws + E)
        k = <int>self.e_to.size()
        self.e_to.insert(self.e_to.end(), e_to, e_to + E)
        for p in range(k, k + E):
            self.e_to[p] += base
        self.c_rule.insert(self.c_rule.end(), c_rule, c_rule + C)
        k = <int>self.c_to.size()
        self.c_to.insert(self.c_to.end(), c_to, c_to + C)
        for p in range(k, k + C):
            self.c_to[p] += base
        self.starts.push_back(base)
        return 0

    cdef object packed_since(self, int base):
        """The positions from base to the end (the last rule's), packed as add_positions
        takes them; None when they have calls."""
        cdef int end = <int>self.finals.size()
        if self.c_off[end] != self.c_off[base]:
            return None
        return pack_call_free(self.finals.data(), self.e_off.data(), self.e_lo.data(),
                              self.e_hi.data(), self.e_to.data(), self.e_ws.data(), base, end)


cdef object pack_call_free(const int* fin, const int* e_off, const int* lo, const int* hi,
                           const int* to, const int* ws, int b, int e):
    """The call-free positions [b, e) packed as add_positions takes them (targets from 0), read
    only."""
    cdef int P = e - b, p, k
    cdef int e0 = e_off[b], E = e_off[e] - e0
    out = np.empty(5 + 3 * P + 4 * E, dtype=np.int32)
    cdef int[::1] o = out
    o[0] = P
    o[1] = E
    o[2] = 0
    cdef int at = 3
    for p in range(P):
        o[at + p] = fin[b + p]
    at += P
    for p in range(P + 1):
        o[at + p] = e_off[b + p] - e0
    at += P + 1
    for k in range(E):
        o[at + k] = lo[e0 + k]
        o[at + E + k] = hi[e0 + k]
        o[at + 2 * E + k] = to[e0 + k] - b
        o[at + 3 * E + k] = ws[e0 + k]
    at += 4 * E
    for p in range(P + 1):
        o[at + p] = 0
    out.setflags(write=False)
    return out
