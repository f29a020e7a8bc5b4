# The slice search (see _slices.pyx), called by _mask.pyx when it builds a position's table.
from libc.stdint cimport int32_t

from cengine._automaton cimport Prog
from cengine._matcher cimport Store


cdef int32_t slice_bfs(const Prog* prog, Store* store, int32_t start, int32_t base_pm,
                       int32_t limit) noexcept nogil
