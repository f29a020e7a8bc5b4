# The positions the builder makes (_build_positions.pyx): every rule's positions, numbered
# rule after rule, as CSR tables, and the compile work spent making them. The Builder
# (_build.pyx) is a Positions; each phase (_build_dfa, _build_minimize, _build_analyses,
# _build_pack) reads and writes these fields directly. spend is inline: the subset
# construction spends per closure and per edge.
from libc.stdint cimport int64_t
from libcpp.vector cimport vector

# compile-work units between two moments the builder lets other threads run (about a
# millisecond): it holds the GIL, and a server compiling on a thread must keep answering
# other requests meanwhile (docs/reliability.md)
cdef enum:
    GIL_YIELD_UNITS = 50000


cdef class Positions:
    # positions of all rules, numbered rule after rule (CSR edges)
    cdef vector[int] finals, pos_rule, starts
    cdef vector[int] e_off, e_lo, e_hi, e_to, e_ws
    cdef vector[int] c_off, c_rule, c_to
    # the shortest completion of each position (_build_analyses.shortest)
    cdef vector[int64_t] short_len
    cdef vector[int] short_kind, short_byte, short_rule, short_to
    cdef public int64_t used
    cdef int64_t limit
    cdef int64_t next_yield
    cdef int max_positions
    cdef str limit_name         # how the work limit is named in its error

    cdef int _past_mark(self) except -1
    cdef int add_packed(self, int rule, const int[::1] packed, int64_t units) except -1
    cdef object packed_since(self, int base)


cdef inline void _no_op() noexcept nogil:
    pass


cdef inline int spend(Positions p, int64_t k) except -1:
    """Spend k units of compile work: refused past the limit, the GIL let go now and then."""
    p.used += k
    if p.used > p.limit or p.used >= p.next_yield:
        return p._past_mark()
    return 0


cdef object pack_call_free(const int* fin, const int* e_off, const int* lo, const int* hi,
                           const int* to, const int* ws, int b, int e)
