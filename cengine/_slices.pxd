# The slice search (see _slices.pyx), called by _mask.pyx when it builds a position's table.
from libc.stdint cimport int32_t, int64_t, uint64_t

from cengine._automaton cimport Prog
from cengine._matcher cimport Store


cdef struct SliceMemo:
    # (position * 16 + UTF-8 state) -> slice depth of a lone frame there (open addressing)
    int64_t* keys
    int32_t* vals
    int32_t cap
    int32_t n
    int32_t limit

cdef int memo_init(SliceMemo* m, int32_t limit) noexcept nogil
cdef void memo_free(SliceMemo* m) noexcept nogil
cdef int32_t slice_bfs(const Prog* prog, Store* store, int32_t start, int32_t base_pm,
                       int32_t limit, SliceMemo* memo, const uint64_t* cls,
                       bint* closed=*) noexcept nogil
cdef int u8_state(int u, int b) noexcept nogil   # _u8_next
