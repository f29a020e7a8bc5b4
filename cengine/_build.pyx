# distutils: language = c++
# Design: Python hands each rule's Thompson NFA to a Builder; subset construction and every
# per-position pass run over C++ vectors, in the frozen oracle's order (see the docstring).
# The inlining pass before them flattens the IR once into int-indexed nodes and decides over
# those (its section below).
# The automaton's constants come from _automaton.pxd, the one place they are defined.
"""C++ kernels of the automaton builder (cengine.automaton.build).

The Python side builds each rule's Thompson NFA (flat int lists) and hands it to a `Builder`,
which does the subset construction and every per-position pass (nullable rules, left callees,
shortest completion, pruning, closure chains) over C++ vectors, then packs the numpy tables.

Everything here must reproduce the frozen pure-Python builder, the test oracle
tests/oracles/automaton_reference.py, exactly: the same DFA numbering
(discovery order: byte partitions ascending, then calls by rule), the same Bellman-Ford sweep
order (tie-breaking of the completion pointers), the same DFS order for closure chains, the
same compile-work units spent at the same moments, and the same error messages.
"""
from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t, uint32_t, uintptr_t
from libc.string cimport memcpy, memcmp, memset
from libc.stdlib cimport malloc, free
from libcpp.vector cimport vector
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set
from libcpp.algorithm cimport sort as cpp_sort, unique as cpp_unique
cimport cython
from cython.operator cimport dereference as deref
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS

import numpy as np

from .errors import CompileError, LimitError

cimport cengine._automaton as _a
from cengine._build_hash cimport _I64Map, _SetTable, _SigTable, _NodeSlot, _StackedNodes
from cengine._build_ir cimport _made_elsewhere
from cengine._build_nfa cimport RuleNfa

# the automaton's constants for Python (cengine.automaton re-exports them), defined once in
# _automaton.pxd; the kernels here use the C constants as _a.X
FLAG_FINAL = _a.FLAG_FINAL
FLAG_WS = _a.FLAG_WS
FLAG_CONTAINER = _a.FLAG_CONTAINER
INF = _a.INF

# compile-work units between two moments the subset construction lets other threads run
# (about a millisecond): it holds the GIL, and a server compiling on a thread must keep
# answering other requests meanwhile (docs/reliability.md)
cdef int64_t GIL_YIELD_UNITS = 50_000
# DFA states a rule may always have, whatever its NFA size, under a growth limit (the limit
# is max_dfa_growth x NFA states + this); cengine.automaton documents both
cdef int64_t GROWTH_SLACK = 4096
DFA_GROWTH_SLACK = GROWTH_SLACK
cdef int MAX_CHAIN_DEPTH = 256


# The tables are made with np.empty and filled through the buffer protocol: a typed
# memoryview per table (its format parsed and checked each time) cost more than the copy,
# and a build makes twenty of them.
cdef object _np_empty = np.empty
cdef object _DT_I32 = np.dtype(np.int32)
cdef object _DT_U8 = np.dtype(np.uint8)
cdef object _DT_I64 = np.dtype(np.int64)


cdef object _new_array(size_t n, dtype, void** data):
    """A new C-contiguous array of n items of dtype; data: where its items start (valid
    while the array lives: numpy arrays made here are never resized)."""
    cdef Py_buffer view
    a = _np_empty(n, dtype)
    PyObject_GetBuffer(a, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
    data[0] = view.buf
    PyBuffer_Release(&view)
    return a


cdef object _i32(vector[int]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_I32, &d)
    if v.size():
        memcpy(d, v.data(), v.size() * sizeof(int))
    return a


cdef object _u8(vector[int]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_U8, &d)
    cdef uint8_t* m = <uint8_t*>d
    # the source through a pointer and its length in a local: a byte store may alias the
    # vector's own pointers (-fno-strict-aliasing), which kept the loop from vectorizing
    cdef const int* src = v.data()
    cdef size_t i, n = v.size()
    for i in range(n):
        m[i] = <uint8_t>src[i]
    return a


cdef object _i64(vector[int64_t]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_I64, &d)
    if v.size():
        memcpy(d, v.data(), v.size() * sizeof(int64_t))
    return a


cdef inline int _one_state(vector[int]& targets) noexcept:
    """The NFA state when all targets are that one state, else -1."""
    cdef int t0 = targets[0]
    cdef size_t i
    for i in range(1, targets.size()):
        if targets[i] != t0:
            return -1
    return t0


cdef inline int _signature(int p, const int* cl, int base, const int* fin,
                           const int* e_off, const int* lo, const int* hi, const int* ws,
                           const int* to, const int* c_off, const int* c_rule,
                           const int* c_to, int* out) noexcept nogil:
    """What position p does, in classes cl (indexed from base), written to out (room for
    2 + 2 edges + 2 calls): its final flag, its edge count, its byte edges (adjacent ranges
    into one class merged), each as two ints (hi | lo << 8 | ws << 16, then the class: a
    byte range packs into one int, so the signatures to hash and compare are half as long),
    its calls (rule, class). Returns its length."""
    cdef int k, t, at = 2, prev
    out[0] = fin[p]
    for k in range(e_off[p], e_off[p + 1]):
        t = cl[to[k] - base]
        if at > 2:
            prev = out[at - 2]
            if (prev & 0xFF) == lo[k] - 1 and (prev >> 16) == ws[k] and out[at - 1] == t:
                out[at - 2] = (prev & ~0xFF) | hi[k]
                continue
        out[at] = hi[k] | (lo[k] << 8) | (ws[k] << 16)
        out[at + 1] = t
        at += 2
    out[1] = (at - 2) >> 1              # edge count
    for k in range(c_off[p], c_off[p + 1]):
        out[at] = c_rule[k]
        out[at + 1] = cl[c_to[k] - base]
        at += 2
    return at


cdef struct _ChainNode:
    # finish's closure-chain node: the frame head over the stack node tail (0: the empty
    # stack), its depth, its chain number (-1: none yet), the last walk that met it as a chain
    int32_t head, tail, depth, chain, seen

cdef inline int _intern(_StackedNodes index, vector[int]& top, vector[_ChainNode]& nodes,
                        int q, int below) noexcept:
    """finish's node (q, below), made when new: (q, empty stack), the walks' top frames, are
    found by position in top, the others in the hash table."""
    cdef int node
    cdef _NodeSlot* at = NULL
    cdef _ChainNode x
    if below == 0:
        if top[q] >= 0:
            return top[q]
    else:
        at = index.find(q, below)
        if at.node >= 0:
            return at.node
    node = <int>nodes.size()
    if below == 0:
        top[q] = node
    else:
        index.fill(at, q, below, node)
    x.head = q
    x.tail = below
    x.depth = nodes[below].depth + 1
    x.chain = -1
    x.seen = -1
    nodes.push_back(x)
    return node


cdef inline void _sort_ints(vector[int]& v) noexcept:
    """Sort v ascending: a closure's few acting states in place (std::sort's call and
    set-up cost more than the sort itself below a dozen), larger sets by std::sort."""
    cdef size_t n = v.size(), i, j
    cdef int* d = v.data()
    cdef int x
    if n > 12:
        cpp_sort(v.begin(), v.end())
        return
    for i in range(1, n):
        x = d[i]
        j = i
        while j > 0 and d[j - 1] > x:
            d[j] = d[j - 1]
            j -= 1
        d[j] = x


cdef inline void _no_op() noexcept nogil:
    pass


cdef extern from *:
    """
    static inline int cengine_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    """
    int _ctz64 "cengine_ctz64"(unsigned long long x) noexcept nogil     # x != 0


cdef object _pack_call_free(const int* fin, const int* e_off, const int* lo, const int* hi,
                            const int* to, const int* ws, int b, int e):
    """The call-free positions [b, e) packed as add_positions takes them (targets from 0), read
    only."""
    cdef int P = e - b, p, k
    cdef int e0 = e_off[b], E = e_off[e] - e0
    out = np.empty(5 + 3 * P + 4 * E, dtype=np.int32)
    cdef int[::1] o = out
    o[0] = P
    o[1] = E
    o[2] = 0
    cdef int at = 3
    for p in range(P):
        o[at + p] = fin[b + p]
    at += P
    for p in range(P + 1):
        o[at + p] = e_off[b + p] - e0
    at += P + 1
    for k in range(E):
        o[at + k] = lo[e0 + k]
        o[at + E + k] = hi[e0 + k]
        o[at + 2 * E + k] = to[e0 + k] - b
        o[at + 3 * E + k] = ws[e0 + k]
    at += 4 * E
    for p in range(P + 1):
        o[at + p] = 0
    out.setflags(write=False)
    return out


@cython.final
cdef class Builder:
    # positions of all rules, numbered rule after rule (CSR edges)
    cdef vector[int] finals, pos_rule, starts
    cdef vector[int] e_off, e_lo, e_hi, e_to, e_ws
    cdef vector[int] c_off, c_rule, c_to
    cdef vector[int64_t] short_len
    cdef vector[int] short_kind, short_byte, short_rule, short_to
    cdef public int64_t used
    cdef public int failed_rule     # add_rules: the rule being built when one raised
    cdef public int failed_phase
    cdef int64_t limit
    cdef int64_t next_yield
    cdef int max_positions
    cdef int64_t max_growth     # DFA states per NFA state of a rule (0: unlimited)
    cdef vector[char] reached   # NFA states of the rule in some DFA state made so far
    cdef int64_t n_reached
    cdef str limit_name         # how the work limit is named in its error
    # the NFA of the rule being determinized
    # (byte edges as records of four ints, lo hi to ws, and calls as pairs, rule return: a
    # DFA state's edges are then copied record by record, not column by column)
    cdef vector[int] n_eoff, n_eto, n_boff, n_brec, n_coff, n_crec
    cdef vector[int] mark, buf
    # share mode: the states of self.buf that act (byte edges, calls, or the accept state);
    # the DFA state is that set, see add_rule
    cdef vector[int] acting
    cdef vector[char] acts
    cdef bint acting_only
    cdef int stamp
    # the subset construction's tables, emptied for each rule (made once per build)
    cdef _SetTable sets, by_targets
    # _add_rule's scratch vectors between rules (their room kept)
    cdef vector[int] x_cur, x_targets, x_single, x_rec, x_bounds, x_covering
    cdef vector[pair[int, int]] x_cpairs
    cdef vector[int] x_lo_next
    cdef vector[int] x_fill

    def __init__(self, int64_t limit, int max_positions, int64_t max_growth=0,
                 str limit_name="MAX_COMPILE_WORK"):
        self.used = 0
        self.failed_rule = -1
        self.failed_phase = -1
        self.next_yield = GIL_YIELD_UNITS
        self.limit = limit
        self.max_positions = max_positions
        self.max_growth = max_growth
        self.limit_name = limit_name
        self.e_off.push_back(0)
        self.c_off.push_back(0)
        self.stamp = 0
        self.sets = _SetTable()
        self.by_targets = _SetTable()

    @property
    def n_positions(self):
        return <int>self.finals.size()

    cdef int spend(self, int64_t k) except -1:
        self.used += k
        if self.used > self.limit:
            raise LimitError(f"grammar too costly to compile: more than {self.limit:,} units "
                             f"of automaton construction work ({self.limit_name})",
                             limit="max_compile_work")
        if self.used >= self.next_yield:
            self.next_yield = self.used + GIL_YIELD_UNITS
            with nogil:         # a thread waiting for the GIL takes it here
                _no_op()
        return 0

    cdef int check_growth(self, int nsets) except -1:
        """Count the NFA states of the DFA state just made (self.buf) as reached, and refuse a
        rule whose DFA outgrows the part of its NFA it has reached: subset construction that
        explodes (`(a|b)*a(a|b){20}`: 2**21 states from 111) is stopped after a few thousand
        states, long before the work limit, while real rules stay near one DFA state per NFA
        state. Counting reached states, not all of them, keeps a bomb padded with a long
        unrelated alternative as cheap to refuse: the construction meets the padding one state
        per level while the bomb doubles."""
        cdef size_t m
        cdef int q
        for m in range(self.buf.size()):
            q = self.buf[m]
            if not self.reached[q]:
                self.reached[q] = 1
                self.n_reached += 1
        if self.max_growth > 0 and nsets > self.max_growth * self.n_reached + GROWTH_SLACK:
            raise LimitError(f"grammar too costly to compile: making a rule deterministic needs "
                             f"more than {nsets - 1:,} states for the {self.n_reached:,} NFA states "
                             f"it reached (limit max_dfa_growth={self.max_growth}: "
                             f"{self.max_growth} per NFA state reached, plus {GROWTH_SLACK:,})",
                             limit="max_dfa_growth")
        return 0

    cdef int closure(self, vector[int]& init) except -1:
        """self.buf = sorted epsilon closure of init; spends 8 + |distinct init| units."""
        cdef int q, r, k, k1
        cdef size_t i
        self.stamp += 1
        cdef int st = self.stamp
        # raw pointers: with -fno-strict-aliasing each push_back would reload the vectors
        cdef int* mark = self.mark.data()
        cdef const int* eoff = self.n_eoff.data()
        cdef const int* eto = self.n_eto.data()
        cdef vector[int]* buf = &self.buf
        buf.clear()
        for i in range(init.size()):
            q = init[i]
            if mark[q] != st:
                mark[q] = st
                buf.push_back(q)
        self.spend(8 + <int64_t>buf.size())
        i = 0
        while i < buf.size():
            q = deref(buf)[i]
            i += 1
            k1 = eoff[q + 1]
            for k in range(eoff[q], k1):
                r = eto[k]
                if mark[r] != st:
                    mark[r] = st
                    buf.push_back(r)
        if not self.acting_only:
            _sort_ints(self.buf)
            return 0
        # share mode: the DFA state is named by its acting states (dfa_key), sorted; the
        # rest of the closure only counts as reached (check_growth), in any order
        self.acting.clear()
        for i in range(self.buf.size()):
            q = self.buf[i]
            if self.acts[q]:
                self.acting.push_back(q)
        _sort_ints(self.acting)
        return 0

    cdef vector[int]* dfa_key(self) noexcept:
        """The NFA-state set that names the DFA state of the closure just made: all of it,
        sorted (the frozen reference's numbering), or in share mode only the states that act.
        A state with no byte edge and no call that is not the accept state (an alternative's
        end, a repeat's loop head) changes nothing the DFA state does, yet two closures that
        differ only in such states were two DFA states, equal futures the minimizer had to
        merge again; the subset construction now makes one."""
        return &self.acting if self.acting_only else &self.buf

    cdef void _csr(self, int n, vector[int]& flat, int stride, vector[int]& off,
                   vector[int]& out) noexcept:
        """Group the records of flat (stride ints, the first the from state) by from state,
        in their order: off[q]..off[q+1] are q's, their other stride - 1 ints in out."""
        cdef int m = <int>flat.size() // stride, w = stride - 1
        cdef int i, j, at
        off.assign(n + 1, 0)
        out.resize(<size_t>m * w)
        # raw pointers: with -fno-strict-aliasing each store would reload the vectors
        cdef int* o = off.data()
        cdef const int* f = flat.data()
        cdef int* dst = out.data()
        for i in range(m):
            o[f[i * stride] + 1] += 1
        for i in range(n):
            o[i + 1] += o[i]
        self.x_fill.assign(off.begin(), off.end())
        cdef int* fill = self.x_fill.data()
        for i in range(m):
            at = fill[f[i * stride]] * w
            fill[f[i * stride]] += 1
            for j in range(w):
                dst[at + j] = f[i * stride + 1 + j]

    def add_rules(self, list names, dict exprs, list whitespace, dict rule_index, ws_type,
                  bint share, int max_nfa_states, any_order, any_order_positions,
                  list kept_keys=None, dict kept=None):
        """The DFA of every rule in turn, names[i] being rule i (what add_rule and
        add_positions do one call at a time, without a Python round per rule): an any_order
        expression's positions from any_order_positions(expression, rule_index), every other
        expression's Thompson NFA (RuleNfa(rule_index, name, whitespace[i], max_nfa_states,
        ws_type, share), one reused) determinized. When one raises, failed_rule is the rule's
        index and failed_phase what was running: 0 the any-order positions, 1 the NFA, 2 the
        subset construction.

        kept_keys[i], when not None, is a key of kept (a dict the caller keeps across builds)
        under which rule i's determinized positions are stored: (the packed positions, the
        work units their construction spent). A rule found there is added from them and
        spends the same units, so a build refuses, or not, whatever was kept before. Only a
        rule without calls is stored (its positions name no other rule)."""
        cdef RuleNfa nfa = None
        cdef int ri, s, t, base
        cdef int64_t used0
        for ri in range(len(names)):
            name = names[ri]
            e = exprs[name]
            self.failed_rule = ri
            if _made_elsewhere(e, any_order):
                self.failed_phase = 0
                self.add_positions(ri, any_order_positions(e, rule_index))
                continue
            key = kept_keys[ri] if kept_keys is not None else None
            if key is not None:
                got = kept.get(key)
                if got is not None:
                    self.failed_phase = 2
                    self._add_packed(ri, got[0], got[1])
                    continue
            self.failed_phase = 1
            if nfa is None:
                nfa = RuleNfa(rule_index, name, whitespace[ri], max_nfa_states, ws_type, share)
            else:
                nfa.reset(name, whitespace[ri])
            s = nfa.new()
            t = nfa.new()
            nfa.emit(e, s, t, 0)
            self.failed_phase = 2
            base = <int>self.finals.size()
            used0 = self.used
            self._add_rule(ri, nfa, s, t)
            if key is not None:
                packed = self._packed_since(base)
                if packed is not None:
                    kept[key] = (packed, self.used - used0)
        self.failed_rule = -1
        self.failed_phase = -1

    cdef object _packed_since(self, int base):
        """The positions from base to the end (the last rule's), packed as add_positions
        takes them; None when they have calls."""
        cdef int end = <int>self.finals.size()
        if self.c_off[end] != self.c_off[base]:
            return None
        return _pack_call_free(self.finals.data(), self.e_off.data(), self.e_lo.data(),
                               self.e_hi.data(), self.e_to.data(), self.e_ws.data(), base, end)

    def add_rule(self, int rule, RuleNfa nfa, int start, int accept):
        """Determinize one rule's NFA and append its DFA states as positions."""
        self._add_rule(rule, nfa, start, accept)

    cdef void _swap_scratch(self, vector[int]& cur, vector[int]& targets, vector[int]& single,
                            vector[int]& rec, vector[int]& bounds,
                            vector[pair[int, int]]& cpairs, vector[int]& lo_next,
                            vector[int]& covering) noexcept:
        # _add_rule's locals and the kept scratch vectors trade contents: at the start the
        # locals take the room of the rule before, at the end they give it back (a swap is
        # its own inverse, so one call serves both)
        cur.swap(self.x_cur)
        targets.swap(self.x_targets)
        single.swap(self.x_single)
        rec.swap(self.x_rec)
        bounds.swap(self.x_bounds)
        cpairs.swap(self.x_cpairs)
        lo_next.swap(self.x_lo_next)
        covering.swap(self.x_covering)

    cdef inline void _add_edge(self, int out_start, int a, int b, int to, int ws) noexcept:
        # the byte edge [a, b) -> to of the DFA state whose edges start at out_start, merged
        # into the edge before when that one ends at a with the same target and flag
        cdef int last = <int>self.e_lo.size() - 1
        if last >= out_start and self.e_to[last] == to and self.e_hi[last] == a - 1 \
                and self.e_ws[last] == ws:
            self.e_hi[last] = b - 1
        else:
            self.e_lo.push_back(a)
            self.e_hi.push_back(b - 1)
            self.e_to.push_back(to)
            self.e_ws.push_back(ws)

    cdef inline int _state_of(self, _SetTable sets, vector[int]& targets, int* nsets) except -1:
        """The DFA state a byte edge leads to: the closure of targets, found among the rule's
        sets or added as state nsets[0] (counted, within the position and growth limits)."""
        self.closure(targets)
        cdef vector[int]* key = self.dfa_key()
        cdef int j = sets.find(deref(key))
        if j < 0:
            j = sets.add_found(deref(key), nsets[0])
            nsets[0] += 1
            if nsets[0] > self.max_positions:
                raise LimitError(f"grammar needs more than {self.max_positions} positions")
            self.check_growth(nsets[0])
        return j

    cdef int _add_rule(self, int rule, RuleNfa nfa, int start, int accept) except -1:
        cdef int n = nfa.n
        self._csr(n, nfa.eps_flat, 2, self.n_eoff, self.n_eto)
        self._csr(n, nfa.byt_flat, 5, self.n_boff, self.n_brec)
        self._csr(n, nfa.calls_flat, 3, self.n_coff, self.n_crec)
        # the closure's visited stamps carry on from the rule before: only new room is zeroed
        if self.stamp > 0x3FFFFFFF:
            self.mark.assign(n, 0)
            self.stamp = 0
        elif self.mark.size() < <size_t>n:
            self.mark.resize(n, 0)
        self.acting_only = nfa.share

        cdef int base = <int>self.finals.size()
        cdef _SetTable sets = self.sets           # DFA state i = NFA-state set i
        # sized for the DFA states a rule usually has (fewer than a third of its NFA states;
        # the tables grow when needed): clearing room for n entries cost more than the lookups
        sets.reset(n >> 2)
        cdef vector[int] cur, targets
        # DFA state of the closure of one NFA state, once known: most transitions have a
        # single target, so their closure and set lookup happen once per rule
        cdef vector[int] single
        cdef int one, o
        cdef _SetTable by_targets = self.by_targets   # sorted target set -> DFA state, likewise
        by_targets.reset(n >> 4)
        # rec: the byte edges of the DFA state being made, records of four ints (lo hi to ws)
        cdef vector[int] rec, bounds
        cdef vector[pair[int, int]] cpairs
        cdef int nsets, i, k, q, R, B, bi, a, b, ws0, ws1, j, g, h, rr
        cdef size_t m
        cdef int out_start, fin, w, x, k0, k1
        cdef bint scan
        cdef vector[int]* key
        cdef vector[int] lo_next
        cdef int lo_head[256]
        cdef vector[int] covering
        # raw pointers to the NFA's tables (not resized below)
        cdef const int* boff = self.n_boff.data()
        cdef const int* brec = self.n_brec.data()
        cdef const int* coff = self.n_coff.data()
        cdef const int* crec = self.n_crec.data()
        cdef const int* r
        cdef const int* cp
        cdef int nsrc, qsrc = 0
        cdef bint disjoint
        cdef uint64_t bound_bits[5]
        cdef uint64_t word
        # the scratch vectors keep their room from the rule before (swapped back at the end):
        # grown afresh, they cost some sixty allocations per rule
        self._swap_scratch(cur, targets, single, rec, bounds, cpairs, lo_next, covering)
        single.assign(n, -1)
        cur.clear()
        self.reached.assign(n, 0)
        self.n_reached = 0
        self.acts.assign(n, 0)
        if self.acting_only:
            for q in range(n):
                if q == accept or boff[q] != boff[q + 1] or coff[q] != coff[q + 1]:
                    self.acts[q] = 1

        # start state
        cur.push_back(start)
        self.closure(cur)
        sets.add(deref(self.dfa_key()), 0)
        nsets = 1
        self.check_growth(nsets)
        i = 0
        while i < nsets:
            cur.assign(sets.data.begin() + sets.off[i], sets.data.begin() + sets.off[i + 1])
            cp = cur.data()
            i += 1
            fin = 0
            R = 0
            nsrc = 0
            for m in range(cur.size()):
                q = cp[m]
                if q == accept:
                    fin = 1
                x = boff[q + 1] - boff[q]
                if x:
                    R += x
                    nsrc += 1
                    qsrc = q
            self.finals.push_back(fin)
            self.pos_rule.push_back(rule)
            # byte edges: partition [0, 255] by the ranges' boundaries. The state's ranges: the
            # one NFA state's own records when only one has byte edges (most states), else
            # every member's span copied in turn (the same order as edge by edge)
            if nsrc == 1:
                r = brec + 4 * boff[qsrc]
            else:
                if <size_t>(4 * R) > rec.size():
                    rec.resize(4 * R)
                w = 0
                for m in range(cur.size()):
                    q = cp[m]
                    x = boff[q + 1] - boff[q]
                    if x:
                        memcpy(rec.data() + w, brec + 4 * boff[q], 4 * x * sizeof(int))
                        w += 4 * x
                r = rec.data()
            self.spend(<int64_t>cur.size() + R)
            out_start = <int>self.e_lo.size()
            # ascending disjoint ranges (most states): each range is one piece, covered by
            # itself alone, and the gaps between them are pieces nothing covers; the bounds
            # and the pieces' covering ranges need no sweep
            disjoint = R > 0
            B = 2 * R
            for k in range(R - 1):
                if r[4 * k + 1] >= r[4 * k + 4]:
                    disjoint = False
                    break
                if r[4 * k + 1] + 1 == r[4 * k + 4]:
                    B -= 1
            if disjoint:
                self.spend(<int64_t>B * R)     # (the units of the reference's B x R scan)
                for k in range(R):
                    a = r[4 * k]
                    b = r[4 * k + 1] + 1
                    ws1 = r[4 * k + 3]
                    one = r[4 * k + 2]
                    if single[one] >= 0:
                        self.spend(9)       # what its closure costs: 8 + one state
                        j = single[one]
                    else:
                        targets.clear()
                        targets.push_back(one)
                        j = self._state_of(sets, targets, &nsets)
                        single[one] = j
                    self._add_edge(out_start, a, b, j + base, ws1)
            elif R:
                # the distinct bounds ascending: a bit per value 0..256, read off in order
                # (sorting the 2R values cost more than the sweep below)
                for w in range(5):
                    bound_bits[w] = 0
                for k in range(R):
                    a = r[4 * k]
                    bound_bits[a >> 6] |= (<uint64_t>1) << (a & 63)
                    a = r[4 * k + 1] + 1
                    bound_bits[a >> 6] |= (<uint64_t>1) << (a & 63)
                bounds.clear()
                for w in range(5):
                    word = bound_bits[w]
                    while word:
                        bounds.push_back((w << 6) + _ctz64(word))
                        word &= word - 1
                B = <int>bounds.size()
                self.spend(<int64_t>B * R)     # (the units of the reference's B x R scan)
                # sweep the pieces left to right with the ranges covering the current one
                # (a range covers every piece from its lo up to its hi: no bound falls
                # inside a piece), each range entering at the piece its lo starts (lists per
                # lo value; the order within a piece is irrelevant, its targets are sorted):
                # work in the pieces' targets, not pieces x ranges (a free-key trie node's
                # state has dozens of ranges)
                # (a few ranges: scanning them all per piece is cheaper than the lists)
                scan = R <= 8
                if not scan:
                    lo_next.resize(R)
                    for k in range(R):          # the heads of every piece start: empty
                        lo_head[r[4 * k]] = -1
                        if r[4 * k + 1] < 255:
                            lo_head[r[4 * k + 1] + 1] = -1
                    for k in range(R - 1, -1, -1):
                        lo_next[k] = lo_head[r[4 * k]]
                        lo_head[r[4 * k]] = k
                covering.clear()
                for bi in range(B - 1):
                    a = bounds[bi]
                    b = bounds[bi + 1]
                    if scan:
                        covering.clear()
                        for k in range(R):
                            if r[4 * k] <= a and b - 1 <= r[4 * k + 1]:
                                covering.push_back(k)
                    else:
                        w = 0
                        for x in range(<int>covering.size()):
                            k = covering[x]
                            if r[4 * k + 1] >= a:
                                covering[w] = k
                                w += 1
                        covering.resize(w)
                        k = lo_head[a]          # (a piece starts below 256)
                        while k >= 0:
                            covering.push_back(k)
                            k = lo_next[k]
                    if covering.size() == 0:
                        continue
                    targets.clear()
                    ws0 = 0
                    ws1 = 0
                    for x in range(<int>covering.size()):
                        k = covering[x]
                        targets.push_back(r[4 * k + 2])
                        if r[4 * k + 3]:
                            ws1 = 1
                        else:
                            ws0 = 1
                    if ws0 and ws1:
                        raise CompileError(f"byte 0x{a:02x} is whitespace on one path and content on "
                                           "another: the whitespace budget would be ambiguous")
                    one = _one_state(targets)
                    o = -1
                    if one < 0:
                        # several targets: look their set up before computing its closure
                        _sort_ints(targets)
                        targets.erase(cpp_unique(targets.begin(), targets.end()), targets.end())
                        o = by_targets.find(targets)
                    if o >= 0:
                        self.spend(8 + <int64_t>targets.size())     # what its closure costs
                        j = by_targets.vals[o]
                    elif one >= 0 and single[one] >= 0:
                        self.spend(9)       # what its closure costs: 8 + one state
                        j = single[one]
                    else:
                        j = self._state_of(sets, targets, &nsets)
                        if one >= 0:
                            single[one] = j
                        else:
                            by_targets.add_found(targets, j)     # (its find just missed)
                    self._add_edge(out_start, a, b, j + base, ws1)
            self.e_off.push_back(<int>self.e_lo.size())
            # call edges, grouped by callee, callees ascending
            cpairs.clear()
            cp = cur.data()
            for m in range(cur.size()):
                q = cp[m]
                for k in range(coff[q], coff[q + 1]):
                    cpairs.push_back(pair[int, int](crec[2 * k], crec[2 * k + 1]))
            if cpairs.size() > 1:
                cpp_sort(cpairs.begin(), cpairs.end())
            g = 0
            while g < <int>cpairs.size():
                rr = cpairs[g].first
                targets.clear()
                h = g
                while h < <int>cpairs.size() and cpairs[h].first == rr:
                    targets.push_back(cpairs[h].second)
                    h += 1
                g = h
                one = _one_state(targets)
                o = -1
                if one < 0:
                    # several targets: look their set up before computing its closure
                    _sort_ints(targets)
                    targets.erase(cpp_unique(targets.begin(), targets.end()), targets.end())
                    o = by_targets.find(targets)
                if o >= 0:
                    self.spend(8 + <int64_t>targets.size())     # what its closure costs
                    j = by_targets.vals[o]
                elif one >= 0 and single[one] >= 0:
                    self.spend(9)
                    j = single[one]
                else:
                    self.closure(targets)
                    key = self.dfa_key()
                    j = sets.find(deref(key))
                    if j < 0:
                        j = sets.add_found(deref(key), nsets)
                        nsets += 1
                        self.check_growth(nsets)
                    if one >= 0:
                        single[one] = j
                    else:
                        by_targets.add_found(targets, j)     # (its find just missed)
                self.c_rule.push_back(rr)
                self.c_to.push_back(j + base)
            self.c_off.push_back(<int>self.c_rule.size())
        if base + nsets > self.max_positions:
            raise LimitError(f"grammar needs more than {self.max_positions} positions")
        self.starts.push_back(base)
        self._swap_scratch(cur, targets, single, rec, bounds, cpairs, lo_next, covering)
        return 0

    # --- positions made elsewhere (cengine._anyorder: the states of an any-order object) ----
    def add_positions(self, int rule, const int[::1] packed):
        """Append one rule's ready positions, numbered from 0 (its start) within the rule, as
        cengine._anyorder.positions packs them into one int32 array (one array per table cost
        more to make and read than the object's positions): P, E, C, then finals[P],
        e_off[P+1], e_lo[E], e_hi[E], e_to[E], e_ws[E], c_off[P+1], c_rule[C], c_to[C]; per
        position p, byte edges e_*[e_off[p]:e_off[p+1]] (ascending, disjoint) and calls
        c_*[c_off[p]:c_off[p+1]] (one per callee, ascending). Spends a unit of work per
        position, edge and call."""
        self._add_packed(rule, packed, -1)

    cdef int _add_packed(self, int rule, const int[::1] packed, int64_t units) except -1:
        # add_positions' work; units < 0: spend a unit per position, edge and call
        cdef int base = <int>self.finals.size()
        cdef int n = <int>packed.shape[0]
        if n < 3 or n != 5 + 3 * packed[0] + 4 * packed[1] + 2 * packed[2]:
            raise ValueError("add_positions: not a packed table of positions")
        cdef int P = packed[0], E = packed[1], C = packed[2]
        cdef const int* finals = &packed[3]
        cdef const int* e_off = finals + P
        cdef const int* e_lo = e_off + P + 1
        cdef const int* e_hi = e_lo + E
        cdef const int* e_to = e_hi + E
        cdef const int* e_ws = e_to + E
        cdef const int* c_off = e_ws + E
        cdef const int* c_rule = c_off + P + 1
        cdef const int* c_to = c_rule + C
        cdef int p, k
        cdef int e0 = <int>self.e_lo.size() - e_off[0], c0 = <int>self.c_rule.size() - c_off[0]
        self.spend(<int64_t>P + E + C if units < 0 else units)
        if base + P > self.max_positions:
            raise LimitError(f"grammar needs more than {self.max_positions} positions")
        for p in range(P):
            self.finals.push_back(finals[p])
            self.pos_rule.push_back(rule)
            self.e_off.push_back(e0 + e_off[p + 1])
            self.c_off.push_back(c0 + c_off[p + 1])
        self.e_lo.insert(self.e_lo.end(), e_lo, e_lo + E)
        self.e_hi.insert(self.e_hi.end(), e_hi, e_hi + E)
        self.e_ws.insert(self.e_ws.end(), e_ws, e_ws + E)
        k = <int>self.e_to.size()
        self.e_to.insert(self.e_to.end(), e_to, e_to + E)
        for p in range(k, k + E):
            self.e_to[p] += base
        self.c_rule.insert(self.c_rule.end(), c_rule, c_rule + C)
        k = <int>self.c_to.size()
        self.c_to.insert(self.c_to.end(), c_to, c_to + C)
        for p in range(k, k + C):
            self.c_to[p] += base
        self.starts.push_back(base)
        return 0

    cdef bint _loops_apart(self, int b, int e) noexcept:
        """Whether minimize would merge none of the positions [b, e) of one rule, seen from
        their shape (an any-order object's): every position between the first and the last
        loops to itself on one byte x (the second's first loop), the first and the last have
        no edge on x, and one of those two is final, the other not. Two positions looping on
        x never merge (their signatures' edges on x name their own classes, apart until they
        merge: none can be first), one that loops on x never merges with one without an edge
        on x, and the first and the last differ in their final flag."""
        cdef const int* e_off = self.e_off.data()
        cdef const int* e_lo = self.e_lo.data()
        cdef const int* e_hi = self.e_hi.data()
        cdef const int* e_to = self.e_to.data()
        cdef int p, k, x = -1
        cdef bint loops
        if e - b < 3 or (self.finals[b] != 0) == (self.finals[e - 1] != 0):
            return False
        for k in range(e_off[b + 1], e_off[b + 2]):
            if e_to[k] == b + 1:
                x = e_lo[k]
                break
        if x < 0:
            return False
        for p in (b, e - 1):
            for k in range(e_off[p], e_off[p + 1]):
                if e_lo[k] <= x <= e_hi[k]:
                    return False
        for p in range(b + 1, e - 1):
            loops = False
            for k in range(e_off[p], e_off[p + 1]):
                if e_lo[k] <= x <= e_hi[k]:
                    loops = e_to[k] == p
                    break
            if not loops:
                return False
        return True

    cdef bint _forward_only(self, int b, int e) noexcept:
        """Whether every byte edge and call return of the positions [b, e) of one rule leads
        to the same or a later position (the subset construction numbers a rule without
        cycles that way unless two paths meet): then the rule needs no Tarjan (_sccs)."""
        cdef const int* e_off = self.e_off.data()
        cdef const int* e_to = self.e_to.data()
        cdef const int* c_off = self.c_off.data()
        cdef const int* c_to = self.c_to.data()
        cdef int p, k
        for p in range(b, e):
            for k in range(e_off[p], e_off[p + 1]):
                if e_to[k] < p:
                    return False
            for k in range(c_off[p], c_off[p + 1]):
                if c_to[k] < p:
                    return False
        return True

    cdef void _sccs(self, int b, int e, vector[int]& members, vector[int]& comp_off,
                    vector[int]& index, vector[int]& low, vector[int]& stack,
                    vector[int]& dfs_p, vector[int]& dfs_k) noexcept:
        """The strongly connected components of the positions [b, e) of one rule over byte
        edges and call returns (Tarjan, iterative), from b first: component c is
        members[comp_off[c]:comp_off[c + 1]] (in depth-first post-order), and every component
        comes after the components it reaches (its targets are final when it is visited)."""
        cdef int n = e - b, p, k, ne, nc, t, top, root, count = 0, q, at, m, finished = 0
        cdef int e0, c0, lp, x
        cdef int sp = 0, nm = 0
        cdef vector[int] fin
        cdef vector[int64_t] by_fin
        fin.assign(n, 0)
        members.assign(n, 0)
        # (comp_off filled from lvalues: a push_back of a temporary goes through
        # emplace_back, and the more of those this module has, the fewer GCC inlines,
        # _add_rule's among them)
        comp_off.assign(1, 0)
        index.assign(n, -1)             # discovery number; -2 once in a component
        low.assign(n, 0)
        stack.assign(n, 0)              # (each position is pushed once: room for all)
        dfs_p.assign(n, 0)
        dfs_k.assign(n, 0)
        cdef int* fn = fin.data()
        cdef int* mem = members.data()
        cdef int* idx = index.data()
        cdef int* lw = low.data()
        cdef int* stk = stack.data()
        cdef int* dp = dfs_p.data()
        cdef int* dk = dfs_k.data()
        cdef const int* e_off = self.e_off.data()
        cdef const int* e_to = self.e_to.data()
        cdef const int* c_off = self.c_off.data()
        cdef const int* c_to = self.c_to.data()
        for root in range(b, e):
            if idx[root - b] != -1:
                continue
            dp[0] = root
            dk[0] = 0
            top = 0
            idx[root - b] = count
            lw[root - b] = count
            count += 1
            stk[sp] = root
            sp += 1
            while top >= 0:
                p = dp[top]
                k = dk[top]
                e0 = e_off[p]
                ne = e_off[p + 1] - e0
                c0 = c_off[p] - ne
                nc = c_off[p + 1] - c0          # (targets k < nc: edges, then calls)
                # p's targets from the k-th on, in one loop until one is new (descend)
                lp = lw[p - b]
                t = -1
                while k < nc:
                    t = e_to[e0 + k] if k < ne else c_to[c0 + k]
                    k += 1
                    x = idx[t - b]
                    if x == -1:
                        break
                    if x >= 0 and x < lp:
                        lp = x                  # t is on the stack (not yet placed)
                    t = -1
                lw[p - b] = lp
                dk[top] = k
                if t >= 0:
                    idx[t - b] = count
                    lw[t - b] = count
                    count += 1
                    stk[sp] = t
                    sp += 1
                    top += 1
                    dp[top] = t
                    dk[top] = 0
                    continue
                top -= 1
                fn[p - b] = finished
                finished += 1
                if top >= 0 and lw[p - b] < lw[dp[top] - b]:
                    lw[dp[top] - b] = lw[p - b]
                if lw[p - b] == idx[p - b]:
                    at = nm
                    while True:
                        sp -= 1
                        q = stk[sp]
                        idx[q - b] = -2
                        mem[nm] = q
                        nm += 1
                        if q == p:
                            break
                    if nm - at > 1:
                        # in post-order (finish order): targets before sources but along
                        # the cycle, cross edges included, so one pass merges what it can
                        by_fin.clear()
                        for m in range(at, nm):
                            q = mem[m]
                            by_fin.push_back(((<int64_t>fn[q - b]) << 32) | q)
                        cpp_sort(by_fin.begin(), by_fin.end())
                        for m in range(<int>by_fin.size()):
                            mem[at + m] = <int>(<uint32_t>by_fin[m])     # (a C cast: see above)
                    comp_off.push_back(nm)

    def minimize(self, int max_rounds, list kept_keys=None, dict kept=None,
                 dict minimal=None):
        """Merge the positions of each rule that behave alike: the subset construction keeps
        one position per NFA-state set, and front ends copy expressions (the trie of an open
        object's free keys carries a UTF-8 tail per node, an object of few properties a chain
        per first property), so equal futures come in many copies.

        Merging from below: two positions with the same final flag, byte edges into the same
        classes with the same whitespace bit (adjacent ranges into one class merged) and the
        same callees returning into the same classes behave alike, so each merge keeps the
        language, the stack behaviour and every flag, whenever the passes stop. The positions
        are visited by strongly connected component, each after the components it reaches,
        so a position outside a cycle is looked at once, its targets' classes final; only the
        positions of a cycle repeat passes over their own component while they merge, at most
        max_rounds (a member of a cycle can only merge with members of the same cycle: its
        edge into the cycle names a class no position outside it has). This is the same
        merging as passes over the whole rule until none merges (the merges are monotone and
        end in the same classes) for a fraction of the signatures. (Copies of a cycle are not
        merged; a long counted run costs one look per position, where refining from one class
        per flag would take a pass per count.)

        kept_keys and kept as add_rules took them, and minimal (a dict the caller keeps across
        builds): a rule added from kept positions (call-free, the same packed array each
        time) is merged once per process. A rule's merging reads nothing but its own
        positions and max_rounds, so its result for that array is fixed: it is stored under
        (key, max_rounds) beside the array it was made from, and a later build whose rule
        holds the same array takes the stored positions instead of merging again.
        Returns (positions before, positions after)."""
        cdef int R = <int>self.starts.size()
        cdef int P = <int>self.finals.size()
        cdef int r, b, e, n, p, c, k, t, last, rounds, count, j, base, m, ci, cb, ce, ns
        cdef int ne_out = 0, nc_out = 0, widest = 2
        cdef int64_t work = 0
        cdef bint merged
        cdef vector[int] cls, ren, sig, newpos, rep, members, comp_off, index, low, stack
        cdef vector[int] dfs_p, dfs_k
        cdef _SigTable table = _SigTable()      # signature -> class, final positions
        cdef _SigTable local = _SigTable()      # the same within one pass over a cycle
        cdef vector[int] finals, pos_rule, starts, e_off, e_lo, e_hi, e_to, e_ws
        cdef vector[int] c_off, c_rule, c_to
        cdef const int* s_fin = self.finals.data()
        cdef const int* s_rule = self.pos_rule.data()
        cdef const int* s_eoff = self.e_off.data()
        cdef const int* s_lo = self.e_lo.data()
        cdef const int* s_hi = self.e_hi.data()
        cdef const int* s_to = self.e_to.data()
        cdef const int* s_ws = self.e_ws.data()
        cdef const int* s_coff = self.c_off.data()
        cdef const int* s_crule = self.c_rule.data()
        cdef const int* s_cto = self.c_to.data()
        cdef int* cl
        cdef int* sg
        cdef int* np_ = NULL
        cdef const int[::1] ready
        cdef bint use_ready, store
        cdef bint reuse
        cdef vector[int] entry_of        # a cycle member's entry in the last pass's table
        newpos.assign(P, 0)
        np_ = newpos.data()
        # the longest signature: room for it once
        for p in range(P):
            k = 2 + 2 * (s_eoff[p + 1] - s_eoff[p]) + 2 * (s_coff[p + 1] - s_coff[p])
            if k > widest:
                widest = k
        sig.assign(widest, 0)
        sg = sig.data()
        # room for the tables as they are (merging only shrinks them), written through
        # pointers and cut to what they hold at the end
        finals.assign(P, 0)
        pos_rule.assign(P, 0)
        starts.reserve(R)
        e_off.assign(P + 1, 0)
        c_off.assign(P + 1, 0)
        e_lo.assign(self.e_lo.size(), 0)
        e_hi.assign(self.e_lo.size(), 0)
        e_to.assign(self.e_lo.size(), 0)
        e_ws.assign(self.e_lo.size(), 0)
        c_rule.assign(self.c_rule.size(), 0)
        c_to.assign(self.c_rule.size(), 0)
        cdef int* o_fin = finals.data()
        cdef int* o_rule = pos_rule.data()
        cdef int* o_eoff = e_off.data()
        cdef int* o_lo = e_lo.data()
        cdef int* o_hi = e_hi.data()
        cdef int* o_to = e_to.data()
        cdef int* o_ws = e_ws.data()
        cdef int* o_coff = c_off.data()
        cdef int* o_crule = c_rule.data()
        cdef int* o_cto = c_to.data()
        cdef int npos = 0
        o_eoff[0] = 0
        o_coff[0] = 0
        for r in range(R):
            b = self.starts[r]
            e = self.starts[r + 1] if r + 1 < R else P
            n = e - b
            base = npos
            starts.push_back(base)
            # a kept rule: its merged positions stored by an earlier build (or to store now)
            use_ready = store = False
            if kept_keys is not None and kept_keys[r] is not None and minimal is not None:
                got = kept.get(kept_keys[r])
                if got is not None:
                    done = minimal.get((kept_keys[r], max_rounds))
                    if done is not None and done[0] is got[0]:
                        ready = done[1]
                        use_ready = True
                    else:
                        store = True
            if use_ready:
                # (packed as add_positions takes them, without calls: P, E, 0, finals[P],
                # e_off[P+1], e_lo[E], e_hi[E], e_to[E], e_ws[E], c_off[P+1])
                n = ready[0]
                m = ready[1]
                for p in range(n):
                    o_fin[base + p] = ready[3 + p]
                    o_rule[base + p] = r
                    o_eoff[base + p + 1] = ne_out + ready[3 + n + p + 1]
                    o_coff[base + p + 1] = nc_out
                j = 3 + 2 * n + 1
                for k in range(m):
                    o_lo[ne_out + k] = ready[j + k]
                    o_hi[ne_out + k] = ready[j + m + k]
                    o_to[ne_out + k] = base + ready[j + 2 * m + k]
                    o_ws[ne_out + k] = ready[j + 3 * m + k]
                ne_out += m
                npos += n
                continue
            cls.assign(n, 0)
            cl = cls.data()
            for p in range(n):
                cl[p] = p
            if n > 1 and not self._loops_apart(b, e):
                if self._forward_only(b, e):
                    # no edge leads back: every position is its own component and the
                    # positions from the last down are an order with targets first (the
                    # merges, hence the classes, are those of any such order)
                    members.assign(n, 0)
                    comp_off.assign(n + 1, 0)
                    for p in range(n):
                        members[p] = e - 1 - p
                        comp_off[p] = p
                    comp_off[n] = n
                else:
                    self._sccs(b, e, members, comp_off, index, low, stack, dfs_p, dfs_k)
                table.reset(n)
                for ci in range(<int>comp_off.size() - 1):
                    cb = comp_off[ci]
                    ce = comp_off[ci + 1]
                    reuse = False
                    if ce - cb > 1:
                        # a cycle: passes over its members, each against the others only (one
                        # position, looping to itself or not, has no other to merge with)
                        rounds = 0
                        merged = True
                        entry_of.resize(ce - cb)
                        while merged and rounds < max_rounds:
                            rounds += 1
                            merged = False
                            local.reset(ce - cb)
                            for m in range(cb, ce):
                                p = members[m]
                                ns = _signature(p, cl, b, s_fin, s_eoff, s_lo, s_hi, s_ws, s_to,
                                                s_coff, s_crule, s_cto, sg)
                                j = local.find_or_add(sg, ns, cl[p - b])
                                if j >= 0 and local.vals[j] != cl[p - b]:
                                    cl[p - b] = local.vals[j]
                                    merged = True
                                entry_of[m - cb] = j if j >= 0 else <int>local.vals.size() - 1
                                work += ns
                        # a pass that merged nothing read every member's signature in the
                        # classes the final pass reads: it takes them (and their hashes)
                        # from that pass, until a class changes
                        reuse = not merged
                    # final now: merge with what came before (a cycle's members find only
                    # their own entries), then serve the positions that reach it
                    for m in range(cb, ce):
                        p = members[m]
                        if reuse:
                            j = entry_of[m - cb]
                            k = local.off[j]
                            j = table.find_or_add_hashed(&local.data[k], local.off[j + 1] - k,
                                                         cl[p - b], local.hashes[j])
                        else:
                            ns = _signature(p, cl, b, s_fin, s_eoff, s_lo, s_hi, s_ws, s_to,
                                            s_coff, s_crule, s_cto, sg)
                            j = table.find_or_add(sg, ns, cl[p - b])
                            work += ns
                        if j >= 0 and table.vals[j] != cl[p - b]:
                            cl[p - b] = table.vals[j]
                            reuse = False
                    if work >= GIL_YIELD_UNITS:
                        work = 0
                        with nogil:     # a thread waiting for the GIL takes it here
                            _no_op()
            # classes numbered by first member: the start stays first
            ren.assign(n, -1)
            count = 0
            for p in range(n):
                if ren[cl[p]] < 0:
                    ren[cl[p]] = count
                    count += 1
            # the new positions of rule r: one per class, the first member its representative
            rep.clear()
            count = 0
            for p in range(b, e):
                c = ren[cl[p - b]]
                np_[p] = base + c
                if c == count:
                    rep.push_back(p)
                    count += 1
            # the representatives' edges and calls, targets renumbered (edges and call
            # returns stay within their rule, so its numbers are all known now)
            for c in range(count):
                p = rep[c]
                o_fin[npos] = s_fin[p]
                o_rule[npos] = s_rule[p]
                last = -1
                for k in range(s_eoff[p], s_eoff[p + 1]):
                    t = np_[s_to[k]]
                    if last >= 0 and o_to[last] == t and o_ws[last] == s_ws[k] \
                            and o_hi[last] == s_lo[k] - 1:
                        o_hi[last] = s_hi[k]
                        continue
                    o_lo[ne_out] = s_lo[k]
                    o_hi[ne_out] = s_hi[k]
                    o_to[ne_out] = t
                    o_ws[ne_out] = s_ws[k]
                    last = ne_out
                    ne_out += 1
                for k in range(s_coff[p], s_coff[p + 1]):
                    o_crule[nc_out] = s_crule[k]
                    o_cto[nc_out] = np_[s_cto[k]]
                    nc_out += 1
                npos += 1
                o_eoff[npos] = ne_out
                o_coff[npos] = nc_out
            if store and o_coff[npos] == o_coff[base]:
                minimal[(kept_keys[r], max_rounds)] = (
                    got[0], _pack_call_free(o_fin, o_eoff, o_lo, o_hi, o_to, o_ws, base, npos))
        finals.erase(finals.begin() + (npos), finals.end())
        pos_rule.erase(pos_rule.begin() + (npos), pos_rule.end())
        e_off.erase(e_off.begin() + (npos + 1), e_off.end())
        c_off.erase(c_off.begin() + (npos + 1), c_off.end())
        e_lo.erase(e_lo.begin() + (ne_out), e_lo.end())
        e_hi.erase(e_hi.begin() + (ne_out), e_hi.end())
        e_to.erase(e_to.begin() + (ne_out), e_to.end())
        e_ws.erase(e_ws.begin() + (ne_out), e_ws.end())
        c_rule.erase(c_rule.begin() + (nc_out), c_rule.end())
        c_to.erase(c_to.begin() + (nc_out), c_to.end())
        self.finals.swap(finals)
        self.pos_rule.swap(pos_rule)
        self.starts.swap(starts)
        self.e_off.swap(e_off)
        self.e_lo.swap(e_lo)
        self.e_hi.swap(e_hi)
        self.e_to.swap(e_to)
        self.e_ws.swap(e_ws)
        self.c_off.swap(c_off)
        self.c_rule.swap(c_rule)
        self.c_to.swap(c_to)
        return P, <int>self.finals.size()

    def nullable(self):
        """Rules whose start reaches a final position through nullable calls only (fixpoint)."""
        cdef int R = <int>self.starts.size()
        cdef int P = <int>self.finals.size()
        cdef vector[int] nul, seen, stack
        cdef int r, p, k, cr, t, ok, st = 0
        cdef bint changed = True
        nul.assign(R, 0)
        seen.assign(P, 0)
        while changed:
            changed = False
            for r in range(R):
                if nul[r]:
                    continue
                st += 1
                stack.clear()
                stack.push_back(self.starts[r])
                seen[self.starts[r]] = st
                ok = 0
                while stack.size() and not ok:
                    p = stack.back()
                    stack.pop_back()
                    if self.finals[p]:
                        ok = 1
                        break
                    for k in range(self.c_off[p], self.c_off[p + 1]):
                        cr = self.c_rule[k]
                        t = self.c_to[k]
                        if nul[cr] and seen[t] != st:
                            seen[t] = st
                            stack.push_back(t)
                if ok:
                    nul[r] = 1
                    changed = True
        return [bool(x) for x in nul]

    def left_cycle(self):
        """The first left-recursive cycle of rules, [r, ..., r], or None: the rules called
        before any byte is consumed (through nullable callees) form the graph, searched depth
        first from each rule in turn, callees ascending (the order the Python check had, so
        the error names the same cycle)."""
        cdef int R = <int>self.starts.size()
        cdef int P = <int>self.finals.size()
        cdef vector[int] nul, seen, stack, l_off, l_to, colour, path, it, row
        cdef int r, p, k, cr, t, st = 0, r0, top, nxt, i, j, flag
        for x in self.nullable():
            flag = 1 if x else 0      # (a typed local: Cython binds a conditional to a dangling ref)
            nul.push_back(flag)
        seen.assign(P, 0)
        l_off.push_back(0)
        for r in range(R):
            st += 1
            row.clear()
            stack.clear()
            stack.push_back(self.starts[r])
            seen[self.starts[r]] = st
            while stack.size():
                p = stack.back()
                stack.pop_back()
                for k in range(self.c_off[p], self.c_off[p + 1]):
                    cr = self.c_rule[k]
                    t = self.c_to[k]
                    row.push_back(cr)
                    if nul[cr] and seen[t] != st:
                        seen[t] = st
                        stack.push_back(t)
            cpp_sort(row.begin(), row.end())
            row.erase(cpp_unique(row.begin(), row.end()), row.end())
            l_to.insert(l_to.end(), row.begin(), row.end())
            l_off.push_back(<int>l_to.size())
        colour.assign(R, 0)
        for r0 in range(R):
            if colour[r0]:
                continue
            path.clear()
            it.clear()
            path.push_back(r0)
            it.push_back(l_off[r0])
            colour[r0] = 1
            while path.size():
                top = <int>path.size() - 1
                r = path[top]
                if it[top] == l_off[r + 1]:
                    colour[r] = 2
                    path.pop_back()
                    it.pop_back()
                    continue
                nxt = l_to[it[top]]
                it[top] += 1
                if colour[nxt] == 1:
                    for i in range(<int>path.size()):
                        if path[i] == nxt:
                            break
                    return [path[j] for j in range(i, <int>path.size())] + [nxt]
                if colour[nxt] == 0:
                    colour[nxt] = 1
                    path.push_back(nxt)
                    it.push_back(l_off[nxt])
        return None

    def shortest(self):
        """Shortest completion per position: Bellman-Ford sweeps from the last position down
        with strict improvement (the reference's tie-breaking). Returns short_len[] of the starts.

        A sweep looks again only at the rules (runs of positions) whose evaluation could change
        something: a position changes only when a value it reads went down, and a rule's
        positions read their own values and the starts of their callees. So a rule is skipped
        when no callee's start went down since its last look, and that look changed nothing or
        the rule leads forward only (each edge and call return to the same or a later position:
        one descending look is its fixpoint for the same callee starts). The skipped looks
        would have changed nothing: the same updates in the same order as whole sweeps."""
        cdef int P = <int>self.finals.size()
        cdef int R = <int>self.starts.size()
        cdef int p, k, t, r, b, e, nb, bi, j, clock = 0, st
        cdef int64_t best, v
        cdef bint changed = True, fwd, any_changed
        self.short_len.assign(P, _a.INF)
        self.short_kind.assign(P, 0)
        self.short_byte.assign(P, 0)
        self.short_rule.assign(P, 0)
        self.short_to.assign(P, 0)
        cdef int64_t* L = self.short_len.data()
        cdef int* s_kind = self.short_kind.data()
        cdef int* s_byte = self.short_byte.data()
        cdef int* s_rule = self.short_rule.data()
        cdef int* s_to = self.short_to.data()
        cdef const int* fin = self.finals.data()
        cdef const int* e_off = self.e_off.data()
        cdef const int* e_to = self.e_to.data()
        cdef const int* e_lo = self.e_lo.data()
        cdef const int* c_off = self.c_off.data()
        cdef const int* c_rule = self.c_rule.data()
        cdef const int* c_to = self.c_to.data()
        cdef const int* starts = self.starts.data()
        cdef const int* prule = self.pos_rule.data()
        for p in range(P):
            if fin[p]:
                L[p] = 0
        # what a look reads, per position: the first byte edge to each target other than the
        # position itself, then its calls but those returning to the position itself. A later
        # edge to the same target offers the same 1 + L[t], a self loop 1 + L[p] and a call
        # back to p L[start] + L[p], none strictly less than what the look holds by then, so
        # none can be the recorded one: the same updates from fewer reads (a string's
        # character class is many ranges to a few targets). Each record is (the position
        # whose value it adds: P for a byte edge, whose slot holds 1, or the callee's start;
        # target; byte or rule), so one loop prices both kinds.
        cdef size_t ne = self.e_to.size() + self.c_to.size(), nq = 0
        cdef int* qo = <int*>malloc((P + 1) * sizeof(int))
        cdef int* qa = <int*>malloc((ne + 1) * sizeof(int))
        cdef int* qt = <int*>malloc((ne + 1) * sizeof(int))
        cdef int* ql = <int*>malloc((ne + 1) * sizeof(int))
        cdef int* sa = <int*>malloc((P + 1) * sizeof(int))
        if qo == NULL or qa == NULL or qt == NULL or ql == NULL or sa == NULL:
            free(qo); free(qa); free(qt); free(ql); free(sa)
            raise MemoryError()
        memset(sa, 0xff, (P + 1) * sizeof(int))
        for p in range(P):
            qo[p] = <int>nq
            sa[p] = p
            for k in range(e_off[p], e_off[p + 1]):
                t = e_to[k]
                if sa[t] != p:
                    sa[t] = p
                    qa[nq] = P
                    qt[nq] = t
                    ql[nq] = e_lo[k]
                    nq += 1
            for k in range(c_off[p], c_off[p + 1]):
                t = c_to[k]
                if t != p:
                    qa[nq] = starts[c_rule[k]]
                    qt[nq] = t
                    ql[nq] = c_rule[k]
                    nq += 1
        qo[P] = <int>nq
        free(sa)
        self.short_len.push_back(1)     # the slot P a byte edge adds (popped at the end)
        L = self.short_len.data()
        # the runs of positions of one rule (blocks, descending as the sweeps go), each with
        # its distinct callees (CSR), whether it leads forward only, and whether its targets
        # stay inside it (else: whole sweeps)
        cdef vector[int] blk_b, blk_e, blk_fwd, cal_off, cal, mark, start_of, start_time
        cdef vector[int] eval_time, blk_changed
        cdef bint local = True
        mark.assign(R, -1)
        start_of.assign(P, -1)
        for r in range(R):
            if starts[r] < 0 or starts[r] >= P or start_of[starts[r]] >= 0:
                local = False
                break
            start_of[starts[r]] = r
        cal_off.push_back(0)
        e = P
        while e > 0 and local:
            b = e - 1
            while b > 0 and prule[b - 1] == prule[e - 1]:
                b -= 1
            nb = <int>blk_b.size()
            fwd = True
            for p in range(b, e):
                for k in range(e_off[p], e_off[p + 1]):
                    t = e_to[k]
                    if t < p:
                        fwd = False
                        if t < b:
                            local = False
                    elif t >= e:
                        local = False
                for k in range(c_off[p], c_off[p + 1]):
                    t = c_to[k]
                    if t < p:
                        fwd = False
                        if t < b:
                            local = False
                    elif t >= e:
                        local = False
                    r = c_rule[k]
                    if mark[r] != nb:
                        mark[r] = nb
                        cal.push_back(r)
            blk_b.push_back(b)
            blk_e.push_back(e)
            blk_fwd.push_back(<int>fwd)
            cal_off.push_back(<int>cal.size())
            e = b
        nb = <int>blk_b.size()
        start_time.assign(R, 0)         # clock of the look that last lowered the rule's start
        eval_time.assign(nb, 0)         # clock of the block's last look (0: none yet)
        blk_changed.assign(nb, 0)
        while changed:
            changed = False
            for bi in range(nb if local else 1):
                if local:
                    if eval_time[bi]:
                        any_changed = blk_changed[bi] and not blk_fwd[bi]
                        j = cal_off[bi]
                        while not any_changed and j < cal_off[bi + 1]:
                            any_changed = start_time[cal[j]] >= eval_time[bi]
                            j += 1
                        if not any_changed:
                            continue
                    clock += 1
                    eval_time[bi] = clock
                    b = blk_b[bi]
                    e = blk_e[bi]
                else:
                    b = 0
                    e = P
                any_changed = False
                for p in range(e - 1, b - 1, -1):
                    best = L[p]
                    for k in range(qo[p], qo[p + 1]):
                        t = qt[k]
                        v = L[qa[k]] + L[t]
                        if v < best:
                            best = v
                            s_to[p] = t
                            if qa[k] == P:
                                s_kind[p] = 1
                                s_byte[p] = ql[k]
                            else:
                                s_kind[p] = 2
                                s_rule[p] = ql[k]
                    if best < L[p]:
                        L[p] = best
                        any_changed = True
                        if local and start_of[p] >= 0:
                            start_time[start_of[p]] = clock
                if local:
                    blk_changed[bi] = <int>any_changed
                if any_changed:
                    changed = True
        free(qo); free(qa); free(qt); free(ql)
        self.short_len.pop_back()
        return [L[starts[r]] for r in range(R)]

    def finish(self, list rule_ws, list rule_container, list names):
        """Prune dead edges, compute flags and closure chains, pack the tables (a dict)."""
        cdef int P = <int>self.finals.size()
        cdef int p, k, q, t, r, below, nb, node, j, n_live_e = 0, n_live_c = 0
        cdef int64_t key
        cdef vector[int] e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to
        cdef vector[uint8_t] rws, rcont, trivial
        cdef int flag
        for x in rule_ws:
            flag = 1 if x else 0      # (a typed local: Cython binds a conditional to a dangling ref)
            rws.push_back(flag)
        for x in rule_container:
            flag = 1 if x else 0
            rcont.push_back(flag)
        cdef const int64_t* L = self.short_len.data()
        cdef const int* starts = self.starts.data()
        cdef const int* fin = self.finals.data()
        cdef const int* prule = self.pos_rule.data()
        # drop what leads nowhere; most builds have nothing to drop, and then the tables are
        # the builder's own (no copy)
        cdef int NE = <int>self.e_to.size(), NC = <int>self.c_rule.size()
        for k in range(NE):
            if L[self.e_to[k]] < _a.INF:
                n_live_e += 1
        for k in range(NC):
            if L[starts[self.c_rule[k]]] < _a.INF and L[self.c_to[k]] < _a.INF:
                n_live_c += 1
        cdef vector[int]* pe_off = &self.e_off
        cdef vector[int]* pe_lo = &self.e_lo
        cdef vector[int]* pe_hi = &self.e_hi
        cdef vector[int]* pe_to = &self.e_to
        cdef vector[int]* pe_ws = &self.e_ws
        cdef vector[int]* pc_off = &self.c_off
        cdef vector[int]* pc_rule = &self.c_rule
        cdef vector[int]* pc_to = &self.c_to
        if n_live_e < NE or n_live_c < NC:
            e_off.reserve(P + 1)
            c_off.reserve(P + 1)
            e_lo.reserve(n_live_e)
            e_hi.reserve(n_live_e)
            e_to.reserve(n_live_e)
            e_ws.reserve(n_live_e)
            c_rule.reserve(n_live_c)
            c_to.reserve(n_live_c)
            e_off.push_back(0)
            c_off.push_back(0)
            for p in range(P):
                for k in range(self.e_off[p], self.e_off[p + 1]):
                    if L[self.e_to[k]] < _a.INF:
                        e_lo.push_back(self.e_lo[k])
                        e_hi.push_back(self.e_hi[k])
                        e_to.push_back(self.e_to[k])
                        e_ws.push_back(self.e_ws[k])
                e_off.push_back(<int>e_lo.size())
                for k in range(self.c_off[p], self.c_off[p + 1]):
                    if L[starts[self.c_rule[k]]] < _a.INF and L[self.c_to[k]] < _a.INF:
                        c_rule.push_back(self.c_rule[k])
                        c_to.push_back(self.c_to[k])
                c_off.push_back(<int>c_rule.size())
            pe_off = &e_off
            pe_lo = &e_lo
            pe_hi = &e_hi
            pe_to = &e_to
            pe_ws = &e_ws
            pc_off = &c_off
            pc_rule = &c_rule
            pc_to = &c_to
        cdef const int* eoff = deref(pe_off).data()
        cdef const int* coff = deref(pc_off).data()
        cdef const int* crule = deref(pc_rule).data()
        cdef const int* cto = deref(pc_to).data()
        # flags and clo_pop straight into their arrays
        cdef void* d
        pos_flags = _new_array(P, _DT_U8, &d)
        cdef uint8_t* flags = <uint8_t*>d
        clo_pop_a = _new_array(P, _DT_U8, &d)
        cdef uint8_t* clo_pop = <uint8_t*>d
        trivial.resize(P)
        for p in range(P):
            flag = fin[p] != 0 and eoff[p] == eoff[p + 1] and coff[p] == coff[p + 1]
            trivial[p] = <uint8_t>flag    # (through a local: see above)
            r = prule[p]
            flags[p] = (_a.FLAG_FINAL * (fin[p] != 0)) | (_a.FLAG_WS * (rws[r] != 0)) \
                | (_a.FLAG_CONTAINER * (rcont[r] != 0))

        # closure chains. A stack below the top frame is an interned node (head, tail);
        # node 0 is the empty stack. A chain is the node (q, below).
        cdef vector[_ChainNode] nodes
        cdef _ChainNode* nd
        cdef _StackedNodes node_index = _StackedNodes()
        cdef _I64Map visited = None     # made for the first walk that outgrows walk_keys
        node_index.reset(P // 2)
        cdef vector[int64_t] work, walk_keys
        cdef vector[int] clo_chain, chain_nodes
        # (room reserved is not touched: a generous guess costs no page faults, growing
        # copies; the corpus stays below 4 chains per position, about P + calls)
        nodes.reserve(2 * P + NC + 1)
        clo_chain.reserve(2 * P + NC + 1)
        chain_nodes.reserve(P + 1)
        cdef _ChainNode empty
        empty.head = -1
        empty.tail = 0
        empty.depth = 0
        empty.chain = -1
        empty.seen = -1
        nodes.push_back(empty)
        clo_off_a = _new_array(P + 1, _DT_I32, &d)
        cdef int32_t* clo_off = <int32_t*>d
        clo_off[0] = 0
        cdef bint pop, big
        cdef size_t i
        # the node of (q, empty stack), once interned: most walks are that one frame
        cdef vector[int] top_node
        top_node.assign(P, -1)
        for p in range(P):
            pop = False
            work.clear()
            work.push_back((<int64_t>p) << 32)
            # the frames this walk has met: a short list (most walks stop at their first
            # frame), in a hash set stamped with p once the list is long
            walk_keys.clear()
            big = False
            while work.size():
                key = work.back()
                work.pop_back()
                q = <int>(key >> 32)
                below = <int>(<uint32_t>key)
                if big:
                    if visited.get(key) == p:
                        continue
                    visited.put(key, p)
                else:
                    for i in range(walk_keys.size()):
                        if walk_keys[i] == key:
                            break
                    else:
                        i = walk_keys.size()
                    if i < walk_keys.size():
                        continue
                    walk_keys.push_back(key)
                    if walk_keys.size() > 16:
                        big = True
                        if visited is None:
                            # (grows with the frames of the long walks: a few walks are)
                            visited = _I64Map()
                        for i in range(walk_keys.size()):
                            visited.put(walk_keys[i], p)
                if eoff[q] != eoff[q + 1]:
                    if below == 0 and top_node[q] >= 0:
                        node = top_node[q]
                    else:
                        node = _intern(node_index, top_node, nodes, q, below)
                    nd = &nodes[node]
                    if nd.seen != p:
                        nd.seen = p
                        j = nd.chain
                        if j < 0:
                            j = nd.chain = <int>chain_nodes.size()
                            chain_nodes.push_back(node)
                        clo_chain.push_back(j)
                if fin[q]:
                    if below:
                        work.push_back(((<int64_t>nodes[below].head) << 32) | nodes[below].tail)
                    else:
                        pop = True
                for k in range(coff[q], coff[q + 1]):
                    r = crule[k]
                    t = cto[k]
                    if trivial[t]:
                        nb = below
                    else:
                        if nodes[below].depth + 1 > MAX_CHAIN_DEPTH:
                            raise LimitError("rule calls nest more than 256 deep without consuming a byte",
                                             rule=names[r])
                        if below == 0 and top_node[t] >= 0:
                            nb = top_node[t]
                        else:
                            nb = _intern(node_index, top_node, nodes, t, below)
                    work.push_back(((<int64_t>starts[r]) << 32) | nb)
            clo_off[p + 1] = <int32_t>clo_chain.size()
            clo_pop[p] = pop
        # the chains' frames, top first, straight into their arrays (sizes known: one frame
        # per level of each chain's node)
        cdef int n_chains = <int>chain_nodes.size(), n_frames = 0
        for j in range(n_chains):
            n_frames += nodes[chain_nodes[j]].depth
        chain_off_a = _new_array(n_chains + 1, _DT_I32, &d)
        cdef int32_t* chain_off = <int32_t*>d
        chain_pos_a = _new_array(n_frames, _DT_I32, &d)
        cdef int32_t* chain_pos = <int32_t*>d
        chain_off[0] = 0
        k = 0
        for j in range(n_chains):
            node = chain_nodes[j]
            while node:
                chain_pos[k] = nodes[node].head
                k += 1
                node = nodes[node].tail
            chain_off[j + 1] = k

        short_len = _i64(self.short_len)
        return dict(
            rule_start=_i32(self.starts), pos_rule=_i32(self.pos_rule), pos_flags=pos_flags,
            edge_off=_i32(deref(pe_off)), edge_lo=_u8(deref(pe_lo)), edge_hi=_u8(deref(pe_hi)),
            edge_to=_i32(deref(pe_to)), edge_ws=_u8(deref(pe_ws)), call_off=_i32(deref(pc_off)),
            call_rule=_i32(deref(pc_rule)), call_to=_i32(deref(pc_to)),
            clo_off=clo_off_a, clo_chain=_i32(clo_chain), chain_off=chain_off_a,
            chain_pos=chain_pos_a, clo_pop=clo_pop_a, short_len=short_len,
            short_kind=_u8(self.short_kind), short_byte=_u8(self.short_byte),
            short_rule=_i32(self.short_rule), short_to=_i32(self.short_to))
