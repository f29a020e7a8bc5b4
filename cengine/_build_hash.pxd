# The automaton builder's hash tables (implemented in _build_hash.pyx): the lookups sit in the
# inner loops of the NFA construction (_build_nfa), the subset construction (_build_dfa),
# minimisation (_build_minimize) and the closure chains (_build_pack), so they are `cdef
# inline` here and compile into each of those modules (a call into another extension module
# goes through a pointer and is never inlined); growing and resetting stay in the .pyx.
from libc.stdint cimport int64_t, int32_t, uint64_t, uint32_t
from libc.string cimport memcmp
from libcpp.vector cimport vector
cimport cython


@cython.final
cdef class _I64Map:
    """Open-addressing hash map from non-negative int64 keys to ints (the closure-chain pass
    does a few lookups per position: std::unordered_map's node allocations dominated)."""
    cdef vector[int64_t] keys
    cdef vector[int] vals
    cdef uint64_t mask
    cdef int count, shift

    cdef void reserve(self, int n) noexcept
    cdef void clear(self, int n) noexcept
    cdef void _grow(self) noexcept

    cdef inline uint64_t _slot(self, int64_t k) noexcept:
        return ((<uint64_t>k) * <uint64_t>0x9E3779B97F4A7C15ULL) >> self.shift

    cdef inline int get(self, int64_t k) noexcept:
        """The value of k, or -1."""
        cdef uint64_t i = self._slot(k)
        while True:
            if self.keys[i] == k:
                return self.vals[i]
            if self.keys[i] == -1:
                return -1
            i = (i + 1) & self.mask

    cdef inline void put(self, int64_t k, int v) noexcept:
        cdef uint64_t i = self._slot(k)
        while True:
            if self.keys[i] == k:
                self.vals[i] = v
                return
            if self.keys[i] == -1:
                self.keys[i] = k
                self.vals[i] = v
                self.count += 1
                if self.count * 2 > <int>self.keys.size():
                    self._grow()
                return
            i = (i + 1) & self.mask


@cython.final
cdef class _PairMap:
    """Open-addressing hash map from pairs of non-negative int64 keys to non-negative ints."""
    cdef vector[int64_t] ka, kb
    cdef vector[int] vals
    cdef uint64_t mask
    cdef int count

    cdef void clear(self) noexcept
    cdef void _grow(self) noexcept

    cdef inline uint64_t _slot(self, int64_t a, int64_t b) noexcept:
        cdef uint64_t h = (<uint64_t>a) * <uint64_t>0x9E3779B97F4A7C15ULL
        h ^= (h >> 32) ^ ((<uint64_t>b) * <uint64_t>0xC2B2AE3D27D4EB4FULL)
        h ^= h >> 29
        return h & self.mask

    cdef inline int get(self, int64_t a, int64_t b) noexcept:
        """The value of (a, b), or -1."""
        cdef uint64_t i = self._slot(a, b)
        while True:
            if self.ka[i] == a and self.kb[i] == b:
                return self.vals[i]
            if self.ka[i] == -1:
                return -1
            i = (i + 1) & self.mask

    cdef inline void put(self, int64_t a, int64_t b, int v) noexcept:
        cdef uint64_t i = self._slot(a, b)
        while True:
            if self.ka[i] == a and self.kb[i] == b:
                self.vals[i] = v
                return
            if self.ka[i] == -1:
                self.ka[i] = a
                self.kb[i] = b
                self.vals[i] = v
                self.count += 1
                if self.count * 2 > <int>self.ka.size():
                    self._grow()
                return
            i = (i + 1) & self.mask


@cython.final
cdef class _SetTable:
    """Int sequences numbered in insertion order, found again by content (hash + compare),
    each with an int value: the DFA's NFA-state sets, without Python objects per lookup."""
    cdef vector[int] data, off, vals, next_same
    cdef _I64Map heads
    cdef int64_t last_hash      # of the sequence find looked up last (add takes it over)

    cdef void reset(self, int n) noexcept

    cdef inline int64_t _hash(self, vector[int]& v) noexcept:
        # two ints per multiply: half the dependent steps of one per int (the hash only picks
        # buckets; which index a sequence gets is insertion order)
        cdef const int* d = v.data()
        cdef size_t n = v.size(), i = 0
        cdef uint64_t h = 0xcbf29ce484222325ULL ^ (<uint64_t>n * 0x9E3779B97F4A7C15ULL)
        while i + 1 < n:
            h = (h ^ ((<uint64_t><uint32_t>d[i]) | ((<uint64_t><uint32_t>d[i + 1]) << 32))) \
                * 0xff51afd7ed558ccdULL
            h ^= h >> 32
            i += 2
        if i < n:
            h = (h ^ <uint64_t><uint32_t>d[i]) * 0xff51afd7ed558ccdULL
            h ^= h >> 32
        return <int64_t>(h & 0x7FFFFFFFFFFFFFFFULL)

    cdef inline int find(self, vector[int]& v) noexcept:
        """Index of v, or -1 (then add(v, value) appends it without hashing it again)."""
        cdef int64_t h = self._hash(v)
        cdef int i = self.heads.get(h)
        cdef int a
        cdef size_t n = v.size()
        self.last_hash = h
        while i >= 0:
            a = self.off[i]
            if <size_t>(self.off[i + 1] - a) == n and \
                    (n == 0 or memcmp(&self.data[a], v.data(), n * sizeof(int)) == 0):
                return i
            i = self.next_same[i]
        return -1

    cdef inline int add(self, vector[int]& v, int value) noexcept:
        """Append v (not present) with value; returns its index."""
        return self._append(v, value, self._hash(v))

    cdef inline int add_found(self, vector[int]& v, int value) noexcept:
        """add(v, value) right after find(v) missed it (the hash find made serves)."""
        return self._append(v, value, self.last_hash)

    cdef inline int _append(self, vector[int]& v, int value, int64_t h) noexcept:
        cdef int i = <int>self.vals.size()
        cdef size_t at = self.data.size(), n = v.size()
        self.next_same.push_back(self.heads.get(h))
        self.heads.put(h, i)
        # (an insert copies once; resize zeroed the room before the copy)
        self.data.insert(self.data.end(), v.begin(), v.end())
        self.off.push_back(<int>(at + n))
        self.vals.push_back(value)
        return i


cdef inline uint64_t _sig_hash(const int* s, int n) noexcept nogil:
    """A 64-bit hash of the ints s[:n] (it only picks slots: which entry a sequence is, is
    found by comparing). Two lanes of two ints each per step: half the dependent multiplies
    of one lane (signatures run to dozens of ints)."""
    cdef uint64_t h1 = 0xcbf29ce484222325ULL ^ (<uint64_t>n * 0x9E3779B97F4A7C15ULL)
    cdef uint64_t h2 = 0x84222325cbf29ce4ULL
    cdef int i = 0
    while i + 3 < n:
        h1 = (h1 ^ ((<uint64_t><uint32_t>s[i]) | ((<uint64_t><uint32_t>s[i + 1]) << 32))) \
            * 0xff51afd7ed558ccdULL
        h2 = (h2 ^ ((<uint64_t><uint32_t>s[i + 2]) | ((<uint64_t><uint32_t>s[i + 3]) << 32))) \
            * 0xc4ceb9fe1a85ec53ULL
        h1 ^= h1 >> 32
        h2 ^= h2 >> 29
        i += 4
    while i < n:
        h1 = (h1 ^ <uint64_t><uint32_t>s[i]) * 0xff51afd7ed558ccdULL
        h1 ^= h1 >> 32
        i += 1
    h1 = (h1 ^ h2) * 0x9E3779B97F4A7C15ULL
    return h1 ^ (h1 >> 31)


@cython.final
cdef class _SigTable:
    """minimize's signatures -> classes: int sequences found by content, each with an int
    value. One probe finds or inserts (open addressing over the sequences' 64-bit hashes,
    kept in the slots: sequences are compared only on equal hashes)."""
    cdef vector[uint64_t] slot_hash
    cdef vector[int] slot_entry         # -1: empty
    cdef vector[int] data, off, vals
    cdef vector[uint64_t] hashes        # per entry
    cdef uint64_t mask
    cdef int count

    cdef void reset(self, int n) noexcept
    cdef void _grow(self) noexcept

    cdef inline int find_or_add(self, const int* s, int n, int value) noexcept:
        """Index of the sequence s[:n] when present, else -1 after adding it with value (as
        entry count - 1)."""
        return self.find_or_add_hashed(s, n, value, _sig_hash(s, n))

    cdef inline int find_or_add_hashed(self, const int* s, int n, int value,
                                       uint64_t h) noexcept:
        """find_or_add of s[:n] whose _sig_hash is h."""
        cdef int j, a
        cdef uint64_t slot = h & self.mask
        cdef int* entry = self.slot_entry.data()
        cdef uint64_t* hs = self.slot_hash.data()
        while True:
            j = entry[slot]
            if j < 0:
                break
            if hs[slot] == h:
                a = self.off[j]
                if self.off[j + 1] - a == n and memcmp(&self.data[a], s, n * sizeof(int)) == 0:
                    return j
            slot = (slot + 1) & self.mask
        j = <int>self.vals.size()
        entry[slot] = j
        hs[slot] = h
        self.data.insert(self.data.end(), s, s + n)
        a = <int>self.data.size()
        self.off.push_back(a)           # (an lvalue: a temporary goes through emplace_back)
        self.vals.push_back(value)
        self.hashes.push_back(h)
        self.count += 1
        if 2 * self.count > <int>self.slot_entry.size():
            self._grow()
        return -1


cdef struct _NodeSlot:
    int32_t q, below, node, unused      # node < 0: empty (16 bytes: one slot per cache line part)


@cython.final
cdef class _StackedNodes:
    """finish's closure-chain nodes (q, below) over a non-empty stack (below != 0) -> node
    number, by open addressing with each slot holding its key and its value: the lookups are
    mostly misses of a table larger than the cache, and one slot read is one memory access
    (an _I64Map reads its key and value arrays apart). Nodes over the empty stack are not
    kept here: an array by position finds them."""
    cdef vector[_NodeSlot] slots
    cdef uint64_t mask
    cdef int count, shift

    cdef void reset(self, int n) noexcept
    cdef void _grow(self) noexcept

    cdef inline _NodeSlot* find(self, int q, int below) noexcept:
        """The slot of (q, below): its node, or the empty slot where it goes."""
        cdef uint64_t i = ((((<uint64_t>q) << 32) | <uint32_t>below)
                           * <uint64_t>0x9E3779B97F4A7C15ULL) >> self.shift
        cdef _NodeSlot* s = self.slots.data()
        while s[i].node >= 0 and (s[i].q != q or s[i].below != below):
            i = (i + 1) & self.mask
        return &s[i]

    cdef inline void fill(self, _NodeSlot* at, int q, int below, int node) noexcept:
        """Put node into the empty slot find returned for (q, below)."""
        at.q = q
        at.below = below
        at.node = node
        self.count += 1
        if 2 * self.count > <int>self.slots.size():
            self._grow()
