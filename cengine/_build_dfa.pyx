# distutils: language = c++
# Design: the subset construction of one rule's Thompson NFA (_build_nfa) into positions
# appended to the Builder's tables (_build_positions), in the frozen oracle's order
# (tests/oracles/automaton_reference.py: discovery order, byte partitions ascending, then
# calls by rule; the same work units at the same moments). The whole inner loop, closures
# and set lookups included, is in this module (the tables' lookups are inline from
# _build_hash.pxd, spend from _build_positions.pxd).
"""Subset construction of the automaton builder (cengine._build's kernels)."""
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from libcpp.pair cimport pair
from libcpp.algorithm cimport sort as cpp_sort, unique as cpp_unique
cimport cython
from cython.operator cimport dereference as deref

from .errors import CompileError, LimitError

from cengine._build_hash cimport _SetTable
from cengine._build_nfa cimport RuleNfa
from cengine._build_positions cimport Positions, spend

# DFA states a rule may always have, whatever its NFA size, under a growth limit (the limit
# is max_dfa_growth x NFA states + this); cengine.automaton documents both
cdef int64_t GROWTH_SLACK = 4096
DFA_GROWTH_SLACK = GROWTH_SLACK


cdef inline int _one_state(vector[int]& targets) noexcept:
    """The NFA state when all targets are that one state, else -1."""
    cdef int t0 = targets[0]
    cdef size_t i
    for i in range(1, targets.size()):
        if targets[i] != t0:
            return -1
    return t0


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


cdef extern from *:
    """
    static inline int cengine_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    """
    int _ctz64 "cengine_ctz64"(unsigned long long x) noexcept nogil     # x != 0


cdef inline void _add_edge(Positions pos, int out_start, int a, int b, int to, int ws) noexcept:
    # the byte edge [a, b) -> to of the DFA state whose edges start at out_start, merged
    # into the edge before when that one ends at a with the same target and flag
    cdef int last = <int>pos.e_lo.size() - 1
    if last >= out_start and pos.e_to[last] == to and pos.e_hi[last] == a - 1 \
            and pos.e_ws[last] == ws:
        pos.e_hi[last] = b - 1
    else:
        pos.e_lo.push_back(a)
        pos.e_hi.push_back(b - 1)
        pos.e_to.push_back(to)
        pos.e_ws.push_back(ws)


cdef class Determinizer:
    """The subset construction's state between rules of one build: the NFA in CSR form,
    the closure's scratch, the tables of NFA-state sets (emptied for each rule, their room
    kept)."""

    def __init__(self, int64_t max_growth=0):
        self.max_growth = max_growth
        self.stamp = 0
        self.sets = _SetTable()
        self.by_targets = _SetTable()

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

    cdef int closure(self, Positions pos, vector[int]& init) except -1:
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
        spend(pos, 8 + <int64_t>buf.size())
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

    cdef void _swap_scratch(self, vector[int]& cur, vector[int]& targets, vector[int]& single,
                            vector[int]& rec, vector[int]& bounds,
                            vector[pair[int, int]]& cpairs, vector[int]& lo_next,
                            vector[int]& covering) noexcept:
        # add_rule's locals and the kept scratch vectors trade contents: at the start the
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

    cdef int _state_of(self, Positions pos, _SetTable sets, vector[int]& targets,
                       int* nsets, bint byte_edge) except -1:
        """The DFA state an edge leads to: the closure of targets, found among the rule's sets
        or added as state nsets[0], counted within the growth limit; a byte edge's new state
        also within the position limit (the frozen reference checks a call's new states
        against it only when the rule is done, as add_rule does at its end)."""
        self.closure(pos, targets)
        cdef vector[int]* key = self.dfa_key()
        cdef int j = sets.find(deref(key))
        if j < 0:
            j = sets.add_found(deref(key), nsets[0])
            nsets[0] += 1
            if byte_edge and nsets[0] > pos.max_positions:
                raise LimitError(f"grammar needs more than {pos.max_positions} positions")
            self.check_growth(nsets[0])
        return j

    cdef int _target_state(self, Positions pos, _SetTable sets, vector[int]& targets,
                           vector[int]& single, int* nsets, bint byte_edge) except -1:
        """The DFA state of an edge into targets (a byte piece's, or a callee's returns):
        one NFA state's is remembered in single, a set of several's in by_targets (sorted and
        deduplicated here), so a closure is computed once per rule for each; a lookup that
        finds one spends what the closure would have cost."""
        cdef int j, o = -1
        cdef int one = _one_state(targets)
        if one < 0:
            # several targets: look their set up before computing its closure
            _sort_ints(targets)
            targets.erase(cpp_unique(targets.begin(), targets.end()), targets.end())
            o = self.by_targets.find(targets)
        if o >= 0:
            spend(pos, 8 + <int64_t>targets.size())     # what its closure costs
            return self.by_targets.vals[o]
        if one >= 0 and single[one] >= 0:
            spend(pos, 9)       # what its closure costs: 8 + one state
            return single[one]
        j = self._state_of(pos, sets, targets, nsets, byte_edge)
        if one >= 0:
            single[one] = j
        else:
            self.by_targets.add_found(targets, j)     # (its find just missed)
        return j

    cdef int add_rule(self, Positions pos, int rule, RuleNfa nfa, int start,
                      int accept) except -1:
        """Determinize one rule's NFA and append its DFA states to pos as positions."""
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

        cdef int base = <int>pos.finals.size()
        cdef _SetTable sets = self.sets           # DFA state i = NFA-state set i
        # sized for the DFA states a rule usually has (fewer than a third of its NFA states;
        # the tables grow when needed): clearing room for n entries cost more than the lookups
        sets.reset(n >> 2)
        cdef vector[int] cur, targets
        # DFA state of the closure of one NFA state, once known: most transitions have a
        # single target, so their closure and set lookup happen once per rule
        cdef vector[int] single
        cdef int one
        self.by_targets.reset(n >> 4)      # sorted target set -> DFA state, likewise
        # rec: the byte edges of the DFA state being made, records of four ints (lo hi to ws)
        cdef vector[int] rec, bounds
        cdef vector[pair[int, int]] cpairs
        cdef int nsets, i, k, q, R, B, bi, a, b, ws0, ws1, j, g, h, rr
        cdef size_t m
        cdef int out_start, fin, w, x, k0, k1
        cdef bint scan
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
        self.closure(pos, cur)
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
            pos.finals.push_back(fin)
            pos.pos_rule.push_back(rule)
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
            spend(pos, <int64_t>cur.size() + R)
            out_start = <int>pos.e_lo.size()
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
                spend(pos, <int64_t>B * R)     # (the units of the reference's B x R scan)
                for k in range(R):
                    a = r[4 * k]
                    b = r[4 * k + 1] + 1
                    ws1 = r[4 * k + 3]
                    one = r[4 * k + 2]
                    if single[one] >= 0:
                        spend(pos, 9)       # what its closure costs: 8 + one state
                        j = single[one]
                    else:
                        targets.clear()
                        targets.push_back(one)
                        j = self._state_of(pos, sets, targets, &nsets, True)
                        single[one] = j
                    _add_edge(pos, out_start, a, b, j + base, ws1)
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
                spend(pos, <int64_t>B * R)     # (the units of the reference's B x R scan)
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
                    j = self._target_state(pos, sets, targets, single, &nsets, True)
                    _add_edge(pos, out_start, a, b, j + base, ws1)
            pos.e_off.push_back(<int>pos.e_lo.size())
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
                j = self._target_state(pos, sets, targets, single, &nsets, False)
                pos.c_rule.push_back(rr)
                pos.c_to.push_back(j + base)
            pos.c_off.push_back(<int>pos.c_rule.size())
        if base + nsets > pos.max_positions:
            raise LimitError(f"grammar needs more than {pos.max_positions} positions")
        pos.starts.push_back(base)
        self._swap_scratch(cur, targets, single, rec, bounds, cpairs, lo_next, covering)
        return 0
