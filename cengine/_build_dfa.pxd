# The subset construction (_build_dfa.pyx): the Builder (_build.pyx) keeps one Determinizer
# per build and hands it each rule's NFA with the positions to append to.
from libc.stdint cimport int64_t
from libcpp.vector cimport vector
from libcpp.pair cimport pair
cimport cython

from cengine._build_hash cimport _SetTable
from cengine._build_nfa cimport RuleNfa
from cengine._build_positions cimport Positions


@cython.final
cdef class Determinizer:
    cdef int64_t max_growth     # DFA states per NFA state of a rule (0: unlimited)
    cdef vector[char] reached   # NFA states of the rule in some DFA state made so far
    cdef int64_t n_reached
    # the NFA of the rule being determinized
    # (byte edges as records of four ints, lo hi to ws, and calls as pairs, rule return: a
    # DFA state's edges are then copied record by record, not column by column)
    cdef vector[int] n_eoff, n_eto, n_boff, n_brec, n_coff, n_crec
    cdef vector[int] mark, buf
    # share mode: the states of self.buf that act (byte edges, calls, or the accept state);
    # the DFA state is that set, see add_rule
    cdef vector[int] acting
    cdef vector[char] acts
    cdef bint acting_only
    cdef int stamp
    # the subset construction's tables, emptied for each rule (made once per build)
    cdef _SetTable sets, by_targets
    # add_rule's scratch vectors between rules (their room kept)
    cdef vector[int] x_cur, x_targets, x_single, x_rec, x_bounds, x_covering
    cdef vector[pair[int, int]] x_cpairs
    cdef vector[int] x_lo_next
    cdef vector[int] x_fill

    cdef int check_growth(self, int nsets) except -1
    cdef int closure(self, Positions pos, vector[int]& init) except -1
    cdef vector[int]* dfa_key(self) noexcept
    cdef void _csr(self, int n, vector[int]& flat, int stride, vector[int]& off,
                   vector[int]& out) noexcept
    cdef void _swap_scratch(self, vector[int]& cur, vector[int]& targets, vector[int]& single,
                            vector[int]& rec, vector[int]& bounds,
                            vector[pair[int, int]]& cpairs, vector[int]& lo_next,
                            vector[int]& covering) noexcept
    cdef int _state_of(self, Positions pos, _SetTable sets, vector[int]& targets,
                       int* nsets, bint byte_edge) except -1
    cdef int _target_state(self, Positions pos, _SetTable sets, vector[int]& targets,
                           vector[int]& single, int* nsets, bint byte_edge) except -1
    cdef int add_rule(self, Positions pos, int rule, RuleNfa nfa, int start,
                      int accept) except -1
