# The automaton as the C kernels see it: its constants, defined here once (Python reads them
# through cengine.automaton, which takes them from _build), and Prog, the struct of pointers
# into the Automaton's numpy tables. Prog's table fields mirror automaton.KERNEL_TABLES, in
# that order and before any other field: _matcher.pyx fills them from that list and checks
# the layout when it is imported.
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef enum:
    FLAG_FINAL = 1          # the position ends its rule
    FLAG_WS = 2             # bytes of this rule spend the document's whitespace budget
    FLAG_CONTAINER = 4      # frames of this rule count toward max_depth

cdef extern from *:
    """
    #define CENGINE_INF (((int64_t) 1) << 40)
    """
    const int64_t INF "CENGINE_INF"   # short_len of a position that cannot complete

cdef struct Prog:
    # the tables (automaton.KERNEL_TABLES)
    const int32_t* rule_start
    const uint8_t* pos_flags
    const int32_t* edge_off
    const uint8_t* edge_lo
    const uint8_t* edge_hi
    const int32_t* edge_to
    const uint8_t* edge_ws
    const int32_t* clo_off
    const int32_t* clo_chain
    const int32_t* chain_off
    const int32_t* chain_pos
    const uint8_t* clo_pop
    const int64_t* short_len
    const uint8_t* short_kind
    const uint8_t* short_byte
    const int32_t* short_rule
    const int32_t* short_to
    # the scalars
    int32_t n_pos
    int32_t max_depth
    int32_t ws_budget          # -1: unbounded
