# distutils: language = c++
# Design: the minimal DFA of a finite set of byte strings, made in one pass over the sorted
# strings (incremental construction of a minimal acyclic automaton: the states along the last
# string are open, every other state is final and registered by its signature; when the next
# string leaves the last one's path, the path's states below the fork are frozen deepest
# first, each replaced by an equal registered state or registered itself). Work and memory
# are linear in the bytes of the strings (plus the sort); the register never holds more than
# the minimal automaton's states. The answer is an ir.Dfa's fields, numbered breadth-first
# from the start in byte order, so equal sets give equal tuples whatever order they came in.
"""Minimal DFA of a finite set of byte strings (the enum values of a schema, cengine.ir.Dfa).

`string_set_dfa(words)` returns (edges, accepting, longest, size) for ir.Dfa: state 0 starts,
edges[q] the (lo, hi, target) byte ranges of q (sorted, disjoint, adjacent bytes into one
target merged), accepting[q] whether a string may end at q; longest the length of the longest
string (-inf for no string), size the states plus the edges (ir.dfa_max_match and ir.dfa_size,
known here without walking the tuples again). The automaton is the minimal one of the set
(every state live and reachable, no two states with the same future), so its size depends on
the set only, not on the order or repeats of `words`.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcmp
from libcpp.vector cimport vector
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF

cimport cython


cdef extern from *:
    """
    #include <algorithm>
    #include <cstring>
    #include <vector>
    struct StrRef { const unsigned char* p; long n; };
    static inline bool strref_less(const StrRef& a, const StrRef& b) {
        long m = a.n < b.n ? a.n : b.n;
        int c = m ? std::memcmp(a.p, b.p, (size_t)m) : 0;
        return c < 0 || (c == 0 && a.n < b.n);
    }
    static inline void sort_strrefs(std::vector<StrRef>& v) {
        std::sort(v.begin(), v.end(), strref_less);
    }
    """
    cdef struct StrRef:
        const unsigned char* p
        long n
    void sort_strrefs(vector[StrRef]& v) nogil


cdef struct Edge:
    int32_t byte
    int32_t to


cdef inline uint64_t _signature_hash(bint final, const vector[Edge]& es) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL if final else 0x2545F4914F6CDD1DULL
    cdef size_t i
    for i in range(es.size()):
        h = (h ^ <uint64_t>(es[i].byte + 1)) * 0x100000001B3ULL
        h = (h ^ <uint64_t>(es[i].to + 0x9E37)) * 0xC2B2AE3D27D4EB4FULL
        h ^= h >> 29
    return h


cdef class _Register:
    """The frozen states: flat edge arrays and an open-addressing table on their signatures
    (final flag and edges, targets frozen ids)."""
    cdef vector[uint8_t] fin
    cdef vector[int32_t] off            # state s's edges are edges[off[s] .. off[s + 1])
    cdef vector[Edge] edges
    cdef vector[int32_t] table          # -1: free slot
    cdef vector[uint64_t] hashes        # per frozen state
    cdef int bits

    def __cinit__(self):
        self.bits = 8
        self.table.resize(1 << 8, -1)
        self.off.push_back(0)

    cdef inline bint _same(self, int32_t s, bint final, const vector[Edge]& es) noexcept nogil:
        cdef int32_t b = self.off[s], n = self.off[s + 1] - b
        cdef size_t i
        if self.fin[s] != final or <size_t>n != es.size():
            return False
        for i in range(es.size()):
            if self.edges[b + i].byte != es[i].byte or self.edges[b + i].to != es[i].to:
                return False
        return True

    cdef void _grow(self) noexcept nogil:
        cdef size_t mask, h
        cdef int32_t s
        self.bits += 1
        self.table.assign(<size_t>1 << self.bits, -1)
        mask = (<size_t>1 << self.bits) - 1
        for s in range(<int32_t>self.fin.size()):
            h = <size_t>(self.hashes[s] >> (64 - self.bits))
            while self.table[h] != -1:
                h = (h + 1) & mask
            self.table[h] = s

    cdef int32_t freeze(self, bint final, const vector[Edge]& es) noexcept nogil:
        """The frozen state equal to (final, es), registered now if there is none."""
        cdef uint64_t hv = _signature_hash(final, es)
        cdef size_t mask = (<size_t>1 << self.bits) - 1
        cdef size_t h = <size_t>(hv >> (64 - self.bits))
        cdef int32_t s
        cdef size_t i
        while self.table[h] != -1:
            s = self.table[h]
            if self.hashes[s] == hv and self._same(s, final, es):
                return s
            h = (h + 1) & mask
        s = <int32_t>self.fin.size()
        self.fin.push_back(final)
        for i in range(es.size()):
            self.edges.push_back(es[i])
        self.off.push_back(<int32_t>self.edges.size())
        self.hashes.push_back(hv)
        self.table[h] = s
        if 2 * self.fin.size() > self.table.size():        # half full at most
            self._grow()
        return s


@cython.boundscheck(False)
@cython.wraparound(False)
def string_set_dfa(words):
    """(edges, accepting, longest, size) of the minimal DFA of the set of byte strings
    `words` (an iterable of bytes, repeats and any order allowed): the fields of an ir.Dfa."""
    cdef list keep = [w if type(w) is bytes else bytes(w) for w in words]
    cdef vector[StrRef] refs
    cdef StrRef r
    for w in keep:
        r.p = <const unsigned char*>PyBytes_AS_STRING(w)
        r.n = PyBytes_GET_SIZE(w)
        refs.push_back(r)
    cdef _Register reg = _Register()
    # the open path: state d is reached by the first d bytes of the last string; the last
    # edge of each open state but the deepest leads to the next one (its target set when
    # that one is frozen)
    cdef vector[vector[Edge]] path
    cdef vector[uint8_t] path_fin
    cdef long prev_n = 0, p, d, m, longest = -1
    cdef const unsigned char* prev = NULL
    cdef Edge e
    cdef size_t i
    cdef int32_t s
    with nogil:
        sort_strrefs(refs)
        path.resize(1)
        path_fin.push_back(0)
        for i in range(refs.size()):
            r = refs[i]
            if r.n > longest:
                longest = r.n
            m = r.n if r.n < prev_n else prev_n
            p = 0
            while p < m and r.p[p] == prev[p]:
                p += 1
            if i > 0 and p == r.n and p == prev_n:
                continue                                    # a repeat
            d = prev_n
            while d > p:                                    # freeze below the fork
                s = reg.freeze(path_fin[d], path[d])
                path[d - 1].back().to = s
                d -= 1
            if <long>path.size() < r.n + 1:
                path.resize(r.n + 1)
                path_fin.resize(r.n + 1)
            for d in range(p, r.n):
                e.byte = r.p[d]
                e.to = -1
                path[d].push_back(e)
                path[d + 1].clear()
                path_fin[d + 1] = 0
            path_fin[r.n] = 1
            prev = r.p
            prev_n = r.n
        d = prev_n
        while d > 0:
            s = reg.freeze(path_fin[d], path[d])
            path[d - 1].back().to = s
            d -= 1
    start = reg.freeze(path_fin[0], path[0]) if refs.size() else -1
    # no collector pause of its own: a compile runs under grammar.COLLECTOR_PAUSE already
    edges, accepting, size = _numbered(reg, start)
    return edges, accepting, float(longest) if longest >= 0 else float("-inf"), size


cdef tuple _numbered(_Register reg, int32_t start):
    """The registered states reachable from start, numbered breadth-first (start 0, then in
    the order of the edges' bytes), as ir.Dfa's (edges, accepting), and their size (states
    plus edge ranges)."""
    if start < 0:
        return (), (), 0
    cdef vector[int32_t] num, order
    num.assign(reg.fin.size(), -1)
    num[start] = 0
    order.push_back(start)
    cdef size_t head = 0
    cdef int32_t s, t, j, b, lo, hi, to
    while head < order.size():
        s = order[head]
        head += 1
        for j in range(reg.off[s], reg.off[s + 1]):
            t = reg.edges[j].to
            if num[t] < 0:
                num[t] = <int32_t>order.size()
                order.push_back(t)
    cdef Py_ssize_t k, n = <Py_ssize_t>order.size()
    edges = PyTuple_New(n)
    accepting = PyTuple_New(n)
    cdef list row
    cdef Py_ssize_t size = n
    for k in range(n):
        s = order[k]
        row = []
        j = reg.off[s]
        while j < reg.off[s + 1]:
            lo = reg.edges[j].byte
            to = num[reg.edges[j].to]
            hi = lo
            j += 1
            while j < reg.off[s + 1] and reg.edges[j].byte == hi + 1 and \
                    num[reg.edges[j].to] == to:
                hi += 1
                j += 1
            row.append((lo, hi, to))
        x = tuple(row)
        size += len(row)
        Py_INCREF(x)
        PyTuple_SET_ITEM(edges, k, x)
        f = bool(reg.fin[s])
        Py_INCREF(f)
        PyTuple_SET_ITEM(accepting, k, f)
    return edges, accepting, size
