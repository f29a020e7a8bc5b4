# A growable int32 vector for the nogil kernels (token ids, triples, trie arrays being
# built); i32_push is inline so the walks and the suffix-trie merge keep a direct call.
from libc.stdint cimport int32_t
from libc.stdlib cimport realloc

cdef struct I32Vec:
    int32_t* data
    int32_t n
    int32_t cap

cdef inline int i32_push(I32Vec* v, int32_t x) noexcept nogil:
    cdef int32_t cap
    cdef int32_t* d
    if v.n >= v.cap:
        cap = v.cap * 2 if v.cap else 64
        d = <int32_t*> realloc(v.data, cap * sizeof(int32_t))
        if d == NULL:
            return -1
        v.data = d
        v.cap = cap
    v.data[v.n] = x
    v.n += 1
    return 0
