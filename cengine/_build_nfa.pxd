# RuleNfa (_build_nfa.pyx): a rule's Thompson NFA, its fields here for the subset
# construction (_build_dfa reads the flat vectors) and the Builder (which emits each rule).
from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cengine._build_hash cimport _PairMap


cdef class RuleNfa:
    cdef public int n
    cdef int ws, max_states
    cdef vector[int] eps_flat, byt_flat, calls_flat
    cdef dict rule_index
    cdef object rule_name, ws_type
    cdef bint share
    # share mode: (expression, continuation, whitespace bit) -> a state whose only edges are
    # that expression's fragment into the continuation. Keyed by object address (front ends
    # share subtrees; a structural hash would walk every fresh node the inlining made; the
    # expressions stay alive in the grammar for the whole build), calls by the callee's rule
    # index, UTF-8 tails by their _tail_id
    cdef _PairMap starts_of
    # share mode: the state each state continues as: itself, or for the end state of an
    # alternative (its only out-edge an epsilon to the alternation's end) that end's
    cdef vector[int] canon

    cdef void reset(self, rule_name, bint whitespace) noexcept
    cdef int new(self) except -1
    cdef int start_of(self, e, int t, int depth) except -1
    cdef int64_t _key(self, e) except -2
    cdef bint _stampable(self, int s, int t, int end, int e0, int e1, int b0, int b1,
                         int c0, int c1) noexcept
    cdef int _stamp(self, int cur, int s, int t, int end, int e0, int e1, int b0, int b1,
                    int c0, int c1) except -1
    cdef int emit(self, e, int s, int t, int depth) except -1
    cdef int emit_shared(self, e, k, int s, int t, int depth) except -1

    cdef inline void _byte(self, int s, int lo, int hi, int t) noexcept:
        self.byt_flat.push_back(s)
        self.byt_flat.push_back(lo)
        self.byt_flat.push_back(hi)
        self.byt_flat.push_back(t)
        self.byt_flat.push_back(self.ws)

    cdef inline void _eps(self, int s, int t) noexcept:
        self.eps_flat.push_back(s)
        self.eps_flat.push_back(t)

    cdef inline int64_t _cont(self, int t, int tail) noexcept:
        """Second half of a sharing key: the continuation, the whitespace bit, and whether
        the first half is a UTF-8 tail (_tail_id) rather than an expression."""
        return ((<int64_t>self.canon[t]) << 2) | (tail << 1) | self.ws
