# Bit helpers of the mask kernels, inline so every caller keeps a direct C call: byte sets
# (4 x uint64, one bit per byte value) and the compiler builtins on words. apply_mask, the
# one Python entry point over masks, is in _bitmask.pyx.
from libc.stdint cimport int32_t, uint64_t

cdef extern from *:
    int popcount32 "__builtin_popcount"(unsigned int) nogil
    int popcount64 "__builtin_popcountll"(unsigned long long) nogil
    int ctz32 "__builtin_ctz"(unsigned int) nogil
    int ctz64 "__builtin_ctzll"(unsigned long long) nogil


cdef inline void allow_range(uint64_t* a, int32_t lo, int32_t hi) noexcept nogil:
    """Add the bytes lo..hi (inclusive) to the set a."""
    cdef int32_t w, a0, a1
    for w in range(lo >> 6, (hi >> 6) + 1):
        a0 = lo - 64 * w if lo > 64 * w else 0
        a1 = hi - 64 * w if hi < 64 * w + 63 else 63
        a[w] |= (~(<uint64_t> 0) >> (63 - a1 + a0)) << a0


cdef inline int32_t next_allowed(const uint64_t* a, int32_t b) noexcept nogil:
    """The smallest byte >= b in the set a, or 256."""
    cdef int32_t w = b >> 6
    cdef uint64_t m
    if w >= 4:
        return 256
    m = a[w] & (~(<uint64_t> 0) << (b & 63))
    while m == 0:
        w += 1
        if w == 4:
            return 256
        m = a[w]
    return 64 * w + ctz64(m)

