# C-level pieces of the matcher shared with the mask kernel (_mask.pyx).
from libc.stdint cimport int32_t, uint8_t

from cengine._automaton cimport FLAG_CONTAINER, Prog

cdef enum:
    NODE_ACCEPT = -1      # the empty stack: the document is complete
    NODE_EXIT = -2        # local walks only: the frame below the walk's base was popped

cdef struct Entry:
    int32_t node               # stack top (interned), or NODE_ACCEPT / NODE_EXIT
    int32_t ws                 # whitespace bytes spent so far
    int32_t pmax               # local walks: deepest relative push on the way

cdef struct EntryVec:
    Entry* data
    int32_t n
    int32_t cap

cdef struct Store:
    # interned stack frames: node i = (pos[i], parent[i]); depth = containers on the stack
    int32_t* pos
    int32_t* parent
    int32_t* depth
    int32_t n
    int32_t cap
    int32_t* table             # open addressing: node id or -1
    int32_t tmask              # table size - 1
    int32_t failed             # allocation failure or stack-set limit hit

cdef int vec_reserve(EntryVec* v, int32_t need) noexcept nogil
cdef void vec_free(EntryVec* v) noexcept nogil
cdef int store_init(Store* s, int32_t cap) noexcept nogil
cdef void store_free(Store* s) noexcept nogil
cdef int store_copy(Store* dst, const Store* src) noexcept nogil
cdef int32_t store_intern(Store* s, int32_t pos, int32_t parent, int32_t depth) noexcept nogil
cdef int32_t find_edge(const Prog* p, int32_t q, uint8_t b) noexcept nogil   # edge index or -1
cdef void expand(const Prog* p, Store* s, int32_t q, int32_t base, int32_t ws, int32_t pmax,
                 int32_t max_depth, EntryVec* out) noexcept nogil
cdef int32_t step(const Prog* p, Store* s, const Entry* src, int32_t n, uint8_t b,
                  int32_t max_depth, EntryVec* out) noexcept nogil
cdef void dedup(EntryVec* v, int32_t start) noexcept nogil

cdef class Program:
    cdef Prog c
    cdef object automaton      # keeps the numpy arrays alive
    cdef object arrays

cdef class Matcher:
    cdef readonly object grammar
    cdef readonly object vocab
    cdef Program program
    cdef Store store
    cdef EntryVec cur
    cdef EntryVec scratch
    cdef int32_t terminated     # EOS accepted: nothing else may follow
    # history for rollback: entries of each earlier step, flattened
    cdef EntryVec hist
    cdef int32_t* hist_off
    cdef int32_t* hist_term
    cdef int32_t hist_n
    cdef int32_t hist_cap
    cdef object tables          # cached TokenTables for (grammar, vocab)
    cdef int push_history(self) except -1
    cdef int _advance(self, const uint8_t* data, Py_ssize_t n) except -1
