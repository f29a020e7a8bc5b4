# distutils: language = c++
# Design: the builder's open-addressing tables (their lookups are inline in _build_hash.pxd,
# compiled into the modules that use them); here what runs rarely: making, emptying, growing.
"""Hash tables of the automaton builder (cengine._build's kernels): growing and resetting;
the lookups are `cdef inline` in _build_hash.pxd."""
from libc.stdint cimport int64_t, uint64_t
from libcpp.vector cimport vector


cdef inline size_t _table_capacity(int n, int* shift) noexcept nogil:
    """The slots of an open-addressing table for about n keys (a power of two, at least 64
    and 2n: half full at most) and its multiplicative hash's shift (64 - log2 of the slots)."""
    cdef size_t cap = 64
    shift[0] = 58
    while cap < <size_t>(2 * n):
        cap *= 2
        shift[0] -= 1
    return cap


cdef class _I64Map:
    def __cinit__(self):
        self.keys.assign(64, -1)
        self.vals.assign(64, 0)
        self.mask = 63
        self.shift = 58
        self.count = 0

    cdef void reserve(self, int n) noexcept:
        """Room for n keys without growing (only while empty)."""
        self.clear(n)

    cdef void clear(self, int n) noexcept:
        """Empty again, sized for about n keys (the memory is kept)."""
        cdef int shift
        cdef size_t cap = _table_capacity(n, &shift)
        self.keys.assign(cap, -1)
        self.vals.assign(cap, 0)
        self.mask = cap - 1
        self.shift = shift
        self.count = 0

    cdef void _grow(self) noexcept:
        cdef vector[int64_t] ok = self.keys
        cdef vector[int] ov = self.vals
        cdef size_t n = ok.size() * 2, j
        self.keys.assign(n, -1)
        self.vals.assign(n, 0)
        self.mask = n - 1
        self.shift -= 1
        self.count = 0
        for j in range(ok.size()):
            if ok[j] != -1:
                self.put(ok[j], ov[j])


cdef class _PairMap:
    def __cinit__(self):
        self.ka.assign(64, -1)
        self.kb.assign(64, 0)
        self.vals.assign(64, 0)
        self.mask = 63
        self.count = 0

    cdef void clear(self) noexcept:
        """Empty again (the room beyond 64 slots is kept, unused)."""
        self.ka.assign(64, -1)
        self.kb.assign(64, 0)
        self.vals.assign(64, 0)
        self.mask = 63
        self.count = 0

    cdef void _grow(self) noexcept:
        cdef vector[int64_t] oa = self.ka, ob = self.kb
        cdef vector[int] ov = self.vals
        cdef size_t n = oa.size() * 2, j
        self.ka.assign(n, -1)
        self.kb.assign(n, 0)
        self.vals.assign(n, 0)
        self.mask = n - 1
        self.count = 0
        for j in range(oa.size()):
            if oa[j] != -1:
                self.put(oa[j], ob[j], ov[j])


cdef class _SetTable:
    def __cinit__(self):
        self.off.push_back(0)
        self.heads = _I64Map()

    cdef void reset(self, int n) noexcept:
        """Empty again, with room for about n sequences."""
        self.data.clear()
        self.off.clear()
        self.off.push_back(0)
        self.vals.clear()
        self.next_same.clear()
        self.heads.clear(n)


cdef class _SigTable:
    cdef void reset(self, int n) noexcept:
        """Empty again, with room for n sequences without growing."""
        cdef size_t cap = 16
        while cap < <size_t>(2 * n):
            cap *= 2
        self.slot_hash.assign(cap, 0)
        self.slot_entry.assign(cap, -1)
        self.mask = cap - 1
        self.count = 0
        self.data.clear()
        self.off.assign(1, 0)
        self.vals.clear()
        self.hashes.clear()

    cdef void _grow(self) noexcept:
        cdef vector[uint64_t] oh = self.slot_hash
        cdef vector[int] oe = self.slot_entry
        cdef size_t cap = oe.size() * 2, i
        cdef uint64_t slot
        self.slot_hash.assign(cap, 0)
        self.slot_entry.assign(cap, -1)
        self.mask = cap - 1
        for i in range(oe.size()):
            if oe[i] >= 0:
                slot = oh[i] & self.mask
                while self.slot_entry[slot] >= 0:
                    slot = (slot + 1) & self.mask
                self.slot_entry[slot] = oe[i]
                self.slot_hash[slot] = oh[i]


cdef class _StackedNodes:
    cdef void reset(self, int n) noexcept:
        """Empty, with room for about n nodes before growing."""
        cdef int shift
        cdef size_t cap = _table_capacity(n, &shift)
        cdef _NodeSlot empty
        empty.q = empty.below = empty.unused = 0
        empty.node = -1
        self.slots.assign(cap, empty)
        self.mask = cap - 1
        self.shift = shift
        self.count = 0

    cdef void _grow(self) noexcept:
        # twice the room, the nodes put back where find puts them
        cdef vector[_NodeSlot] old
        cdef _NodeSlot* at
        old.swap(self.slots)
        self.reset(self.count)
        self.count = 0
        cdef size_t j
        for j in range(old.size()):
            if old[j].node >= 0:
                at = self.find(old[j].q, old[j].below)
                at[0] = old[j]
                self.count += 1
