# cython: language_level=3
# Design: the matcher state is a small set of stacks over the automaton built by
# automaton.py. Stacks are hash-consed frames (pos, parent) in a per-matcher Store, so a
# stack is one int and the set dedups by comparing ints; pushing a chain of frames is a few
# hash lookups, popping is following `parent`. Every byte step is a `noexcept nogil` loop
# over the set (step -> expand with the precomputed closure chains). The closer sums the
# precomputed shortest lengths along each stack, picks the shortest (ties: smallest bytes)
# and emits by following the per-position shortest-step pointers. copy() memcpys the store;
# rollback restores whole earlier states kept in a flat history. Program, the C view of the
# automaton's tables, fills its struct from automaton.KERNEL_TABLES (the one list of them) and
# this module refuses to import when the struct in _automaton.pxd drifts from that list.
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
cimport numpy as cnp
import numpy as np

from cengine.automaton import KERNEL_TABLES

cnp.import_array()

cdef enum:
    MAX_STACKS = 1 << 16    # more simultaneous stacks than this: the grammar is too ambiguous
    MAX_FORCED = 4096

# ---------------------------------------------------------------------------------------
# entry vectors and the frame store

cdef int vec_reserve(EntryVec* v, int32_t need) noexcept nogil:
    cdef int32_t cap
    cdef Entry* d
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap > 0 else 16
    while cap < need:
        cap *= 2
    d = <Entry*> realloc(v.data, cap * sizeof(Entry))
    if d == NULL:
        return -1
    v.data = d
    v.cap = cap
    return 0

cdef void vec_free(EntryVec* v) noexcept nogil:
    free(v.data)
    v.data = NULL
    v.n = 0
    v.cap = 0

cdef inline int vec_push(EntryVec* v, int32_t node, int32_t ws, int32_t pmax) noexcept nogil:
    if v.n >= v.cap and vec_reserve(v, v.n + 1) != 0:
        return -1
    v.data[v.n].node = node
    v.data[v.n].ws = ws
    v.data[v.n].pmax = pmax
    v.n += 1
    return 0

cdef int store_init(Store* s, int32_t cap) noexcept nogil:
    cdef int32_t tsize = 1
    while tsize < cap * 2:
        tsize *= 2
    s.pos = <int32_t*> malloc(cap * sizeof(int32_t))
    s.parent = <int32_t*> malloc(cap * sizeof(int32_t))
    s.depth = <int32_t*> malloc(cap * sizeof(int32_t))
    s.table = <int32_t*> malloc(tsize * sizeof(int32_t))
    s.n = 0
    s.cap = cap
    s.tmask = tsize - 1
    s.failed = 0
    if s.pos == NULL or s.parent == NULL or s.depth == NULL or s.table == NULL:
        s.failed = 1
        return -1
    memset(s.table, 0xFF, tsize * sizeof(int32_t))
    return 0

cdef void store_free(Store* s) noexcept nogil:
    free(s.pos)
    free(s.parent)
    free(s.depth)
    free(s.table)
    s.pos = NULL
    s.parent = NULL
    s.depth = NULL
    s.table = NULL
    s.n = 0
    s.cap = 0

cdef int store_copy(Store* dst, const Store* src) noexcept nogil:
    dst.pos = <int32_t*> malloc(src.cap * sizeof(int32_t))
    dst.parent = <int32_t*> malloc(src.cap * sizeof(int32_t))
    dst.depth = <int32_t*> malloc(src.cap * sizeof(int32_t))
    dst.table = <int32_t*> malloc((src.tmask + 1) * sizeof(int32_t))
    if dst.pos == NULL or dst.parent == NULL or dst.depth == NULL or dst.table == NULL:
        dst.failed = 1
        return -1
    memcpy(dst.pos, src.pos, src.n * sizeof(int32_t))
    memcpy(dst.parent, src.parent, src.n * sizeof(int32_t))
    memcpy(dst.depth, src.depth, src.n * sizeof(int32_t))
    memcpy(dst.table, src.table, (src.tmask + 1) * sizeof(int32_t))
    dst.n = src.n
    dst.cap = src.cap
    dst.tmask = src.tmask
    dst.failed = src.failed
    return 0

cdef inline uint32_t _hash(int32_t pos, int32_t parent) noexcept nogil:
    cdef uint32_t h = <uint32_t> pos * 0x9E3779B1u
    h ^= (<uint32_t> parent + 0x7F4A7C15u) * 0x85EBCA77u
    h ^= h >> 15
    return h

cdef int _store_grow(Store* s) noexcept nogil:
    cdef int32_t cap = s.cap * 2
    cdef int32_t tsize = (s.tmask + 1) * 2
    cdef int32_t i
    cdef uint32_t h
    cdef int32_t* np_ = <int32_t*> realloc(s.pos, cap * sizeof(int32_t))
    if np_ == NULL:
        return -1
    s.pos = np_
    np_ = <int32_t*> realloc(s.parent, cap * sizeof(int32_t))
    if np_ == NULL:
        return -1
    s.parent = np_
    np_ = <int32_t*> realloc(s.depth, cap * sizeof(int32_t))
    if np_ == NULL:
        return -1
    s.depth = np_
    s.cap = cap
    if tsize < cap * 2:
        tsize = cap * 2
    free(s.table)
    s.table = <int32_t*> malloc(tsize * sizeof(int32_t))
    if s.table == NULL:
        return -1
    memset(s.table, 0xFF, tsize * sizeof(int32_t))
    s.tmask = tsize - 1
    for i in range(s.n):
        h = _hash(s.pos[i], s.parent[i]) & <uint32_t> s.tmask
        while s.table[h] >= 0:
            h = (h + 1) & <uint32_t> s.tmask
        s.table[h] = i
    return 0

cdef int32_t store_intern(Store* s, int32_t pos, int32_t parent, int32_t depth) noexcept nogil:
    cdef uint32_t h = _hash(pos, parent) & <uint32_t> s.tmask
    cdef int32_t i
    while True:
        i = s.table[h]
        if i < 0:
            break
        if s.pos[i] == pos and s.parent[i] == parent:
            return i
        h = (h + 1) & <uint32_t> s.tmask
    if s.n >= s.cap:
        if _store_grow(s) != 0:
            s.failed = 1
            return -1
        h = _hash(pos, parent) & <uint32_t> s.tmask
        while s.table[h] >= 0:
            h = (h + 1) & <uint32_t> s.tmask
    i = s.n
    s.n += 1
    s.pos[i] = pos
    s.parent[i] = parent
    s.depth[i] = depth
    s.table[h] = i
    return i

# ---------------------------------------------------------------------------------------
# automaton steps

cdef int32_t find_edge(const Prog* p, int32_t q, uint8_t b) noexcept nogil:
    cdef int32_t k
    for k in range(p.edge_off[q], p.edge_off[q + 1]):
        if p.edge_lo[k] <= b and b <= p.edge_hi[k]:
            return k
        if p.edge_lo[k] > b:
            break
    return -1

cdef void expand(const Prog* p, Store* s, int32_t q, int32_t base, int32_t ws, int32_t pmax,
                 int32_t max_depth, EntryVec* out) noexcept nogil:
    """Entries reached when a frame at position q (not yet normalised) sits on `base`."""
    cdef int32_t k, c, j, qq, node, d, pm, bdepth
    cdef bint ok
    while True:
        bdepth = s.depth[base] if base >= 0 else 0
        for k in range(p.clo_off[q], p.clo_off[q + 1]):
            c = p.clo_chain[k]
            node = base
            d = bdepth
            pm = pmax
            ok = True
            j = p.chain_off[c + 1] - 1
            while j >= p.chain_off[c]:
                qq = p.chain_pos[j]
                if p.pos_flags[qq] & FLAG_CONTAINER:
                    d += 1
                    if d > max_depth:
                        ok = False
                        break
                    if d > pm:
                        pm = d
                node = store_intern(s, qq, node, d)
                if node < 0:
                    return
                j -= 1
            if ok:
                if vec_push(out, node, ws, pm) != 0:
                    s.failed = 1
                    return
        if not p.clo_pop[q]:
            return
        if base < 0:
            if vec_push(out, base, ws, pmax) != 0:   # NODE_ACCEPT or NODE_EXIT
                s.failed = 1
            return
        q = s.pos[base]
        base = s.parent[base]

cdef enum:
    DEDUP_HASH_MIN = 48     # more entries than this are deduplicated through a hash set


cdef void _dedup_hashed(EntryVec* v, int32_t start) noexcept nogil:
    """dedup through an open-addressing set of the kept entries' indices (the pairwise scan is
    quadratic: a mask's joined suffix walk steps hundreds of entries at once)."""
    cdef int32_t n = v.n - start, i, j, w = start, cap = 64
    cdef uint64_t h, mask
    cdef int32_t* slots
    cdef Entry* e
    cdef Entry* f
    while cap < 2 * n:
        cap *= 2
    slots = <int32_t*> malloc(cap * sizeof(int32_t))
    if slots == NULL:
        return                  # duplicates cost work, never a wrong answer
    memset(slots, 0xFF, cap * sizeof(int32_t))
    mask = <uint64_t> (cap - 1)
    for i in range(start, v.n):
        e = &v.data[i]
        h = ((<uint64_t> <uint32_t> e.node) * 11400714819323198485u
             ^ (<uint64_t> <uint32_t> e.ws) * 14029467366897019727u
             ^ (<uint64_t> <uint32_t> e.pmax) * 1609587929392839161u) >> 20
        h &= mask
        while True:
            j = slots[h]
            if j < 0:
                v.data[w] = e[0]
                slots[h] = w
                w += 1
                break
            f = &v.data[j]
            if f.node == e.node and f.ws == e.ws and f.pmax == e.pmax:
                break
            h = (h + 1) & mask
    free(slots)
    v.n = w


cdef void dedup(EntryVec* v, int32_t start) noexcept nogil:
    """Remove duplicate entries in v.data[start:v.n] (keeps first occurrences, order kept)."""
    cdef int32_t i, j, w
    cdef bint dup
    cdef int32_t n = v.n - start
    if n <= 1:
        return
    if n > DEDUP_HASH_MIN:
        _dedup_hashed(v, start)
        return
    w = start
    for i in range(start, v.n):
        dup = False
        for j in range(start, w):
            if v.data[j].node == v.data[i].node and v.data[j].ws == v.data[i].ws \
                    and v.data[j].pmax == v.data[i].pmax:
                dup = True
                break
        if not dup:
            v.data[w] = v.data[i]
            w += 1
    v.n = w

cdef int32_t step(const Prog* p, Store* s, const Entry* src, int32_t n, uint8_t b,
                  int32_t max_depth, EntryVec* out) noexcept nogil:
    """Append to `out` the entries after consuming byte b from src[0:n]; returns how many."""
    cdef int32_t i, node, q, k, ws
    cdef int32_t start = out.n
    for i in range(n):
        node = src[i].node
        if node < 0:
            continue
        q = s.pos[node]
        k = find_edge(p, q, b)
        if k < 0:
            continue
        ws = src[i].ws
        if p.edge_ws[k]:
            ws += 1
            if p.ws_budget >= 0 and ws > p.ws_budget:
                continue
        expand(p, s, p.edge_to[k], s.parent[node], ws, src[i].pmax, max_depth, out)
    if out.n - start > 1:
        dedup(out, start)
    if out.n - start > MAX_STACKS:
        s.failed = 2
    return out.n - start

# ---------------------------------------------------------------------------------------
# the closer

cdef int _emit(const Prog* p, int32_t q, bytearray out, int depth) except -1:
    while p.short_kind[q] != 0:
        if p.short_kind[q] == 1:
            out.append(p.short_byte[q])
        else:
            _emit(p, p.rule_start[p.short_rule[q]], out, depth + 1)
        q = p.short_to[q]
    return 0

cdef int64_t _stack_len(const Prog* p, const Store* s, int32_t node) noexcept nogil:
    cdef int64_t total = 0
    while node >= 0:
        total += p.short_len[s.pos[node]]
        node = s.parent[node]
    return total

# ---------------------------------------------------------------------------------------

cdef int _raise_if_failed(Store* s) except -1:
    """Turn a failure flag left by a nogil step into an exception (and clear it)."""
    cdef int32_t f = s.failed
    s.failed = 0
    if f == 2:
        raise RuntimeError("grammar too ambiguous: more than 65536 simultaneous stacks")
    if f:
        raise MemoryError()
    return 0


cdef dict _table_slots(Prog* c):
    """Where each table's pointer lives in a Prog, and its element size: the one place the
    struct's table fields are named on this side (checked against KERNEL_TABLES below)."""
    return {
        "rule_start": (<size_t> &c.rule_start, sizeof(c.rule_start[0])),
        "pos_flags": (<size_t> &c.pos_flags, sizeof(c.pos_flags[0])),
        "edge_off": (<size_t> &c.edge_off, sizeof(c.edge_off[0])),
        "edge_lo": (<size_t> &c.edge_lo, sizeof(c.edge_lo[0])),
        "edge_hi": (<size_t> &c.edge_hi, sizeof(c.edge_hi[0])),
        "edge_to": (<size_t> &c.edge_to, sizeof(c.edge_to[0])),
        "edge_ws": (<size_t> &c.edge_ws, sizeof(c.edge_ws[0])),
        "clo_off": (<size_t> &c.clo_off, sizeof(c.clo_off[0])),
        "clo_chain": (<size_t> &c.clo_chain, sizeof(c.clo_chain[0])),
        "chain_off": (<size_t> &c.chain_off, sizeof(c.chain_off[0])),
        "chain_pos": (<size_t> &c.chain_pos, sizeof(c.chain_pos[0])),
        "clo_pop": (<size_t> &c.clo_pop, sizeof(c.clo_pop[0])),
        "short_len": (<size_t> &c.short_len, sizeof(c.short_len[0])),
        "short_kind": (<size_t> &c.short_kind, sizeof(c.short_kind[0])),
        "short_byte": (<size_t> &c.short_byte, sizeof(c.short_byte[0])),
        "short_rule": (<size_t> &c.short_rule, sizeof(c.short_rule[0])),
        "short_to": (<size_t> &c.short_to, sizeof(c.short_to[0])),
    }


def check_program_layout(kernel_tables):
    """Raise ImportError unless Prog's table fields are exactly `kernel_tables` ((name,
    dtype) pairs): the same names in the same order, the same element sizes, and no other
    pointer before the scalars (so every table field of the struct is filled)."""
    cdef Prog c
    slots = _table_slots(&c)
    base = <size_t> &c
    names = [name for name, _ in kernel_tables]
    order = sorted(slots, key=lambda name: slots[name][0])
    problems = []
    if order != names:
        problems.append(f"Prog's tables are {order}, automaton.KERNEL_TABLES lists {names}")
    for name, dtype in kernel_tables:
        if name in slots and slots[name][1] != dtype.itemsize:
            problems.append(f"{name}: {slots[name][1]}-byte elements in Prog, {dtype} declared")
    if <size_t> &c.n_pos - base != len(slots) * sizeof(void*):
        problems.append("Prog has table fields that _table_slots does not name")
    if problems:
        raise ImportError("cengine._automaton.Prog does not follow Automaton: "
                          + "; ".join(problems))


check_program_layout(KERNEL_TABLES)


cdef list _program_slots():
    """(name, dtype, its type number, byte offset of its pointer in Prog) per kernel table, in
    KERNEL_TABLES' order: worked out once, so making a Program (on the path to every
    grammar's first mask) is a pointer store per table."""
    cdef Prog c
    slots = _table_slots(&c)
    base = <size_t> &c
    return [(name, np.dtype(dtype), np.dtype(dtype).num, slots[name][0] - base)
            for name, dtype in KERNEL_TABLES]


cdef list _SLOTS = _program_slots()


cdef class Program:
    """C view of an Automaton's tables (the arrays stay owned by the Automaton)."""

    def __init__(self, automaton):
        cdef size_t base = <size_t> &self.c
        cdef cnp.ndarray arr
        cdef size_t off
        cdef int num
        a = automaton
        self.automaton = a
        converted = None
        for name, dtype, num, off in _SLOTS:
            table = getattr(a, name)
            if type(table) is np.ndarray and cnp.PyArray_NDIM(<cnp.ndarray> table) == 1 \
                    and cnp.PyArray_TYPE(<cnp.ndarray> table) == num \
                    and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray> table) \
                    and cnp.PyArray_DIM(<cnp.ndarray> table, 0) > 0:
                arr = table         # the builder's tables are contiguous of the right type
            else:
                arr = np.ascontiguousarray(table, dtype=dtype)
                if arr.shape[0] == 0:
                    arr = np.zeros(1, dtype=dtype)   # a valid pointer even for empty tables
                if converted is None:
                    converted = {}
                converted[name] = arr
            (<const void**> (base + off))[0] = cnp.PyArray_DATA(arr)
        self.arrays = converted     # the copies made here (the automaton holds the others)
        self.c.n_pos = a.n_positions
        self.c.max_depth = min(a.max_depth, (1 << 30))
        self.c.ws_budget = a.whitespace_budget


def program_of(grammar):
    """The grammar's shared C program (built once per grammar)."""
    prog = getattr(grammar, "_program", None)
    if prog is None:
        prog = Program(grammar.automaton)
        try:
            object.__setattr__(grammar, "_program", prog)
        except (AttributeError, TypeError):
            pass
    return prog


cdef class Matcher:
    """One document's state over a compiled Grammar (see the contract)."""

    def __cinit__(self):
        self.cur.data = NULL
        self.cur.n = self.cur.cap = 0
        self.scratch.data = NULL
        self.scratch.n = self.scratch.cap = 0
        self.hist.data = NULL
        self.hist.n = self.hist.cap = 0
        self.hist_off = NULL
        self.hist_term = NULL
        self.hist_n = self.hist_cap = 0
        self.store.pos = NULL
        self.store.parent = NULL
        self.store.depth = NULL
        self.store.table = NULL
        self.store.cap = 0
        self.store.n = 0
        self.terminated = 0

    def __init__(self, grammar, vocab=None):
        self.grammar = grammar
        self.vocab = vocab
        self.program = program_of(grammar)
        self.tables = None
        if store_init(&self.store, 64) != 0:
            raise MemoryError()
        expand(&self.program.c, &self.store, <int32_t> grammar.automaton.root_start, NODE_ACCEPT,
               0, 0, self.program.c.max_depth, &self.cur)
        dedup(&self.cur, 0)
        if self.store.failed:
            raise MemoryError()

    def __dealloc__(self):
        store_free(&self.store)
        vec_free(&self.cur)
        vec_free(&self.scratch)
        vec_free(&self.hist)
        free(self.hist_off)
        free(self.hist_term)

    cdef int push_history(self) except -1:
        cdef int32_t* o
        if self.hist_n + 1 >= self.hist_cap:
            cap = self.hist_cap * 2 if self.hist_cap else 64
            o = <int32_t*> realloc(self.hist_off, (cap + 1) * sizeof(int32_t))
            if o == NULL:
                raise MemoryError()
            self.hist_off = o
            o = <int32_t*> realloc(self.hist_term, (cap + 1) * sizeof(int32_t))
            if o == NULL:
                raise MemoryError()
            self.hist_term = o
            self.hist_cap = cap
            if self.hist_n == 0:
                self.hist_off[0] = 0
        if vec_reserve(&self.hist, self.hist.n + self.cur.n) != 0:
            raise MemoryError()
        memcpy(self.hist.data + self.hist.n, self.cur.data, self.cur.n * sizeof(Entry))
        self.hist.n += self.cur.n
        self.hist_term[self.hist_n] = self.terminated
        self.hist_n += 1
        self.hist_off[self.hist_n] = self.hist.n
        return 0

    cdef int _advance(self, const uint8_t* data, Py_ssize_t n) except -1:
        """Consume data into self.scratch; returns 1 if the bytes are legal (state untouched)."""
        cdef Py_ssize_t i
        cdef int32_t got = 0
        cdef EntryVec a, b, tmp
        cdef const Prog* p = &self.program.c
        if self.terminated:
            return 0
        if n == 0:
            return 1
        a.data = NULL
        a.n = a.cap = 0
        b.data = NULL
        b.n = b.cap = 0
        with nogil:
            got = step(p, &self.store, self.cur.data, self.cur.n, data[0], p.max_depth, &a)
            i = 1
            while got > 0 and i < n:
                b.n = 0
                got = step(p, &self.store, a.data, a.n, data[i], p.max_depth, &b)
                tmp = a
                a = b
                b = tmp
                i += 1
        vec_free(&b)
        if self.store.failed:
            vec_free(&a)
            _raise_if_failed(&self.store)
        if got <= 0:
            vec_free(&a)
            return 0
        vec_free(&self.scratch)
        self.scratch = a
        return 1

    def accept_bytes(self, data) -> bool:
        """Consume all of `data` or nothing; False leaves the state unchanged."""
        cdef const uint8_t[::1] view
        cdef EntryVec tmp
        if isinstance(data, str):
            raise TypeError("accept_bytes takes bytes, not str")
        view = memoryview(bytes(data) if not isinstance(data, bytes) else data).cast("B")
        if view.shape[0] == 0:
            if self.terminated:
                return False
            self.push_history()
            return True
        if not self._advance(&view[0], view.shape[0]):
            return False
        self.push_history()
        tmp = self.cur
        self.cur = self.scratch
        self.scratch = tmp
        return True

    def can_accept_bytes(self, data) -> bool:
        """Whether accept_bytes(data) would succeed, leaving the state unchanged."""
        cdef const uint8_t[::1] view
        view = memoryview(bytes(data) if not isinstance(data, bytes) else data).cast("B")
        if view.shape[0] == 0:
            return not self.terminated
        return bool(self._advance(&view[0], view.shape[0]))

    def accept_token(self, int token_id) -> bool:
        """Consume one token of the vocabulary (EOS only when the document is complete)."""
        if self.vocab is None:
            raise ValueError("this matcher has no vocabulary: make it with grammar.matcher(vocab)")
        if token_id < 0 or token_id >= self.vocab.size:
            return False
        if token_id in self.vocab.eos_ids:
            if self.terminated or not self.is_accepting():
                return False
            self.push_history()
            self.terminated = 1
            return True
        data = self.vocab.tokens[token_id]
        if not data:
            return False
        return self.accept_bytes(data)

    def is_accepting(self) -> bool:
        cdef int32_t i
        for i in range(self.cur.n):
            if self.cur.data[i].node == NODE_ACCEPT:
                return True
        return False

    def is_terminated(self) -> bool:
        """EOS was accepted: the document is finished."""
        return bool(self.terminated)

    def completion(self) -> bytes:
        """The shortest bytes that make the document complete (b"" when accepting)."""
        cdef int32_t i, node
        cdef int64_t best = -1, n
        cdef const Prog* p = &self.program.c
        if self.terminated:
            return b""
        for i in range(self.cur.n):
            n = _stack_len(p, &self.store, self.cur.data[i].node)
            if best < 0 or n < best:
                best = n
        result = None
        for i in range(self.cur.n):
            node = self.cur.data[i].node
            if _stack_len(p, &self.store, node) != best:
                continue
            out = bytearray()
            while node >= 0:
                _emit(p, self.store.pos[node], out, 0)
                node = self.store.parent[node]
            if result is None or bytes(out) < result:
                result = bytes(out)
        return result if result is not None else b""

    def completion_length(self) -> int:
        cdef int32_t i
        cdef int64_t best = -1, n
        for i in range(self.cur.n):
            n = _stack_len(&self.program.c, &self.store, self.cur.data[i].node)
            if best < 0 or n < best:
                best = n
        return int(max(best, 0))

    def allowed_bytes(self) -> list:
        """Every byte that may come next (for tests and tools; the mask uses the token trie)."""
        out = []
        cdef int b
        cdef EntryVec tmp
        tmp.data = NULL
        tmp.n = tmp.cap = 0
        if self.terminated:
            return out
        for b in range(256):
            tmp.n = 0
            if step(&self.program.c, &self.store, self.cur.data, self.cur.n, <uint8_t> b,
                    self.program.c.max_depth, &tmp) > 0:
                out.append(b)
        vec_free(&tmp)
        _raise_if_failed(&self.store)
        return out

    def forced_bytes(self, int limit=MAX_FORCED) -> bytes:
        """The longest byte string that is the only legal continuation (for fast-forward)."""
        cdef Matcher m = self.copy()
        out = bytearray()
        cdef int b, only
        cdef EntryVec tmp
        tmp.data = NULL
        tmp.n = tmp.cap = 0
        while len(out) < limit and not m.terminated:
            if m.is_accepting():
                break
            only = -1
            for b in range(256):
                tmp.n = 0
                if step(&m.program.c, &m.store, m.cur.data, m.cur.n, <uint8_t> b,
                        m.program.c.max_depth, &tmp) > 0:
                    if only >= 0:
                        only = -2
                        break
                    only = b
            if only < 0:
                break
            out.append(only)
            tmp.n = 0
            step(&m.program.c, &m.store, m.cur.data, m.cur.n, <uint8_t> only,
                 m.program.c.max_depth, &tmp)
            vec_free(&m.cur)
            m.cur = tmp
            tmp.data = NULL
            tmp.n = tmp.cap = 0
        vec_free(&tmp)
        _raise_if_failed(&m.store)
        return bytes(out)

    def copy(self):
        cdef Matcher m = Matcher.__new__(Matcher)
        m.grammar = self.grammar
        m.vocab = self.vocab
        m.program = self.program
        m.tables = self.tables
        m.terminated = self.terminated
        if store_copy(&m.store, &self.store) != 0:
            raise MemoryError()
        if vec_reserve(&m.cur, self.cur.n) != 0:
            raise MemoryError()
        memcpy(m.cur.data, self.cur.data, self.cur.n * sizeof(Entry))
        m.cur.n = self.cur.n
        if self.hist_n:
            if vec_reserve(&m.hist, self.hist.n) != 0:
                raise MemoryError()
            memcpy(m.hist.data, self.hist.data, self.hist.n * sizeof(Entry))
            m.hist.n = self.hist.n
            m.hist_cap = self.hist_cap
            m.hist_n = self.hist_n
            m.hist_off = <int32_t*> malloc((self.hist_cap + 1) * sizeof(int32_t))
            m.hist_term = <int32_t*> malloc((self.hist_cap + 1) * sizeof(int32_t))
            if m.hist_off == NULL or m.hist_term == NULL:
                raise MemoryError()
            memcpy(m.hist_off, self.hist_off, (self.hist_n + 1) * sizeof(int32_t))
            memcpy(m.hist_term, self.hist_term, self.hist_n * sizeof(int32_t))
        return m

    def rollback(self, int n_tokens) -> None:
        """Undo the last n accepted tokens (each accept_token / accept_bytes call is one)."""
        cdef int32_t start, k
        if n_tokens < 0 or n_tokens > self.hist_n:
            raise ValueError(f"cannot roll back {n_tokens} steps, only {self.hist_n} recorded")
        if n_tokens == 0:
            return
        k = self.hist_n - n_tokens
        start = self.hist_off[k]
        self.cur.n = 0
        if vec_reserve(&self.cur, self.hist.n - start) != 0 and self.hist.n - start > 0:
            raise MemoryError()
        cdef int32_t count = self.hist_off[k + 1] - start
        memcpy(self.cur.data, self.hist.data + start, count * sizeof(Entry))
        self.cur.n = count
        self.terminated = self.hist_term[k]
        self.hist.n = start
        self.hist_n = k

    @property
    def n_stacks(self) -> int:
        return self.cur.n

    def stacks(self) -> list:
        """The current stacks as tuples of positions, top first (for tests and debugging)."""
        out = []
        cdef int32_t i, node
        for i in range(self.cur.n):
            node = self.cur.data[i].node
            st = []
            while node >= 0:
                st.append(self.store.pos[node])
                node = self.store.parent[node]
            out.append((tuple(st), self.cur.data[i].ws))
        return out

    def fill_mask(self, out) -> None:
        """Bit i of out[i // 32] := token i may come next (contract layout, int32 words)."""
        if self.vocab is None:
            raise ValueError("this matcher has no vocabulary: make it with grammar.matcher(vocab)")
        if self.tables is None:
            self.tables = self.grammar.token_tables(self.vocab)
        self.tables.fill(self, out)
