# distutils: language = c++
# Design: the states of an any-order object (ir.AnyOrder) are enumerated with C ints and made
# into positions directly, two per state; Builder.add_positions appends them as the object
# rule's positions. No IR rule, inlining walk or subset construction per state.
"""Positions of an ir.AnyOrder object rule (cengine.automaton.build).

A state (s, c) is what has been written: s the declared members (a bit set; in the chain
form past the state budget, the index of the next one that may come) and c the members
counted (0 when no bound needs the count). Positions, for the object `{` members `}`:

  0        start: `{` -> 1
  1        after `{`: whitespace -> 1; `}` -> end when the object may be empty; a call of
           each member that may come first, returning to A of the state it leads to
  A(s, c)  after a member: whitespace -> A; `,` -> C when another member may come; `}` ->
           end when every required member is written and the count is within its bounds
  C(s, c)  after a comma (made when a member may come): whitespace -> C; a call of each
           member that may come next, returning to A of the state it leads to
  end      final (the last position)

numbered 0, 1, then A and C of each state in discovery order (breadth first), the end.

The states and moves are those of the IR form (one rule per state,
tests/oracles/any_order_reference.py): the same rule is called for a member in every state
and a state is made only when the object can still close from it.
"""
from libc.stdint cimport int64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from libcpp.unordered_map cimport unordered_map
from libcpp.pair cimport pair
from libcpp.algorithm cimport sort as cpp_sort

import numpy as np

cdef int COMMA = 0x2C
cdef int OPEN = 0x7B
cdef int CLOSE = 0x7D


cdef inline int _popcount(int64_t x) noexcept:
    cdef int k = 0
    while x:
        x &= x - 1
        k += 1
    return k


cdef class _Machine:
    """The object's states: moves, viability and closing, as the IR form decides them."""
    cdef int n, lo, hi              # hi -1: no bound
    cdef bint chain, bounded, counted, extra
    cdef int64_t req_mask, every
    cdef vector[char] required
    cdef vector[int] missing_from   # chain form: required members at index >= i

    def __init__(self, int n, required, bint extra, int lo, hi, bint chain):
        cdef int j
        cdef char r
        self.n = n
        self.lo = lo
        self.hi = -1 if hi is None else hi
        self.chain = chain
        self.extra = extra
        self.bounded = lo > 1 or hi is not None
        self.counted = self.bounded and (extra or chain)
        self.req_mask = 0
        for j in range(n):
            # (a typed local: Cython's C++ mode binds a conditional pushed into a vector to a
            # dangling reference)
            r = 1 if required[j] else 0
            self.required.push_back(r)
            if r and not chain:
                self.req_mask |= (<int64_t>1) << j
        self.every = ((<int64_t>1) << n) - 1 if not chain else 0
        self.missing_from.assign(n + 1, 0)
        for j in range(n - 1, -1, -1):
            self.missing_from[j] = self.missing_from[j + 1] + self.required[j]

    cdef inline int cap(self, int c) noexcept:
        # counts past both bounds' reach behave alike: one state for them all
        if not self.counted:
            return 0
        if self.hi >= 0:
            return c
        return c if c < self.lo else self.lo

    cdef inline int missing(self, int64_t s) noexcept:
        if self.chain:
            return self.missing_from[s]
        return _popcount(self.req_mask & ~s)

    cdef inline int left(self, int64_t s) noexcept:
        if self.chain:
            return self.n - <int>s
        return self.n - _popcount(s)

    cdef inline int written(self, int64_t s, int c) noexcept:
        """Members written, or -1 when not tracked and no bound needs it."""
        if self.counted:
            return c
        if self.bounded:
            return self.n - self.left(s)       # subset states without extra keys
        return -1

    cdef inline bint viable(self, int64_t s, int c) noexcept:
        """The object can still close from (s, c)."""
        cdef int k = self.written(s, c)
        if k < 0:
            return True
        if self.hi >= 0 and k + self.missing(s) > self.hi:
            return False
        return self.extra or k + self.left(s) >= self.lo

    cdef inline bint can_close(self, int64_t s, int c) noexcept:
        cdef int k = self.written(s, c)
        return self.missing(s) == 0 and (k < 0 or k >= self.lo)

    cdef void moves(self, int64_t s, vector[int]& js, vector[int64_t]& ts) noexcept:
        """The declared members that may come in state s (ascending) and the states after."""
        cdef int j
        cdef int64_t free, low
        js.clear()
        ts.clear()
        if self.chain:
            for j in range(<int>s, self.n):
                js.push_back(j)
                ts.push_back(j + 1)
                if self.required[j]:
                    break
            return
        free = self.every & ~s
        while free:
            low = free & -free
            j = _popcount(low - 1)
            js.push_back(j)
            ts.push_back(s | low)
            free ^= low


def positions(node, dict rule_index):
    """The positions of an ir.AnyOrder rule, numbered from 0 (the start) within the rule:
    the tables finals, e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to packed into one
    int32 array behind their sizes P, E, C, the layout Builder.add_positions takes (byte
    edges sorted per position, calls ascending by rule)."""
    cdef int n = len(node.members)
    cdef _Machine m = _Machine(n, node.required, node.extra is not None, node.lo, node.hi,
                               node.chain)
    cdef vector[int] member_rule
    cdef int extra_rule = -1
    for name in node.members:
        member_rule.push_back(<int>_rule(rule_index, name))
    if node.extra is not None:
        extra_rule = <int>_rule(rule_index, node.extra)
    # whitespace ranges, checked apart from the structural bytes (else the DFA is not one)
    cdef vector[int] ws_lo, ws_hi
    for lo, hi in node.ws:
        if lo <= COMMA <= hi or lo <= CLOSE <= hi or lo <= OPEN <= hi or \
                (ws_hi.size() and lo <= ws_hi.back()):
            raise ValueError(f"ir.AnyOrder whitespace {node.ws!r} must be sorted, disjoint "
                             "and apart from '{', ',' and '}'")
        ws_lo.push_back(lo)
        ws_hi.push_back(hi)

    # states in discovery order (breadth first from the start; completions then settle in
    # few sweeps, the builder's sweeps running from the last position down)
    cdef unordered_map[int64_t, int] index
    cdef vector[int64_t] st_s
    cdef vector[int] st_c
    # per state: its calls (rule, target state) after a comma, or of the start for state -1
    cdef vector[int] calls_off, call_rule, call_state
    cdef vector[int] js
    cdef vector[int64_t] ts
    cdef int64_t width = (node.hi if node.hi is not None else node.lo) + 2
    cdef int i, k, c, c1, t, q
    cdef int64_t s
    cdef bint empty_ok = node.lo == 0 and m.missing_from[0] == 0     # (no member required)

    calls_off.push_back(0)
    # the start's moves are those after a comma of state (0, 0), whether or not that state
    # is ever entered: its own A/C positions are made only when some move leads back to it
    i = -1
    while True:
        if i < 0:
            s, c = 0, 0
        else:
            s, c = st_s[i], st_c[i]
        c1 = m.cap(c + 1)
        m.moves(s, js, ts)
        for k in range(<int>js.size()):
            if m.bounded and not m.viable(ts[k], c1):
                continue
            t = _state(index, st_s, st_c, ts[k], c1, width)
            call_rule.push_back(member_rule[js[k]])
            call_state.push_back(t)
        if extra_rule >= 0 and (not m.bounded or m.viable(s, c1)):
            t = _state(index, st_s, st_c, s, c1, width)
            call_rule.push_back(extra_rule)
            call_state.push_back(t)
        calls_off.push_back(<int>call_rule.size())
        i += 1
        if i >= <int>st_s.size():
            break

    # positions: 0 start, 1 after `{`, then per state its A and (when a member may follow)
    # its C, the end last
    cdef int S = <int>st_s.size()
    cdef vector[int] pos_a, pos_c
    q = 2
    for i in range(S):
        pos_a.push_back(q)
        q += 1
        if calls_off[i + 2] > calls_off[i + 1]:
            pos_c.push_back(q)
            q += 1
        else:
            pos_c.push_back(-1)
    cdef int END = q
    cdef int P = q + 1
    cdef vector[int] finals, e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to
    cdef vector[pair[int, int]] cp
    finals.assign(P, 0)
    finals[END] = 1
    e_off.push_back(0)
    c_off.push_back(0)
    # the start
    _edge(e_lo, e_hi, e_to, e_ws, OPEN, OPEN, 1, 0)
    e_off.push_back(<int>e_lo.size())
    c_off.push_back(0)
    # after `{` (like a C, with the empty object's close), then each state's A and C
    _position(1, -1, -1, END if empty_ok else -1, ws_lo, ws_hi, calls_off, call_rule,
              call_state, pos_a, e_lo, e_hi, e_to, e_ws, e_off, c_rule, c_to, c_off, cp)
    for i in range(S):
        _position(pos_a[i], -2, pos_c[i], END if m.can_close(st_s[i], st_c[i]) else -1,
                  ws_lo, ws_hi, calls_off, call_rule, call_state, pos_a,
                  e_lo, e_hi, e_to, e_ws, e_off, c_rule, c_to, c_off, cp)
        if pos_c[i] >= 0:
            _position(pos_c[i], i, -1, -1, ws_lo, ws_hi, calls_off, call_rule, call_state,
                      pos_a, e_lo, e_hi, e_to, e_ws, e_off, c_rule, c_to, c_off, cp)
    # the end
    e_off.push_back(<int>e_lo.size())
    c_off.push_back(<int>c_rule.size())
    return _packed(finals, e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to)


cdef void _position(int q, int calls_of, int comma_to, int close_to, vector[int]& ws_lo,
                    vector[int]& ws_hi, vector[int]& calls_off, vector[int]& call_rule,
                    vector[int]& call_state, vector[int]& pos_a, vector[int]& e_lo,
                    vector[int]& e_hi, vector[int]& e_to, vector[int]& e_ws, vector[int]& e_off,
                    vector[int]& c_rule, vector[int]& c_to, vector[int]& c_off,
                    vector[pair[int, int]]& cp) noexcept:
    """Position q: its whitespace loop, `,` to comma_to and `}` to close_to (when >= 0;
    edges ascending), and the calls of state calls_of's moves (-1: the start's, -2: none)
    into the A of the state each leads to, ascending by rule. cp: scratch room."""
    cdef int k
    cp.clear()
    _ws_edges(ws_lo, ws_hi, -1, COMMA, q, e_lo, e_hi, e_to, e_ws)
    if comma_to >= 0:
        _edge(e_lo, e_hi, e_to, e_ws, COMMA, COMMA, comma_to, 0)
    _ws_edges(ws_lo, ws_hi, COMMA, CLOSE, q, e_lo, e_hi, e_to, e_ws)
    if close_to >= 0:
        _edge(e_lo, e_hi, e_to, e_ws, CLOSE, CLOSE, close_to, 0)
    _ws_edges(ws_lo, ws_hi, CLOSE, 256, q, e_lo, e_hi, e_to, e_ws)
    e_off.push_back(<int>e_lo.size())
    if calls_of >= -1:
        for k in range(calls_off[calls_of + 1], calls_off[calls_of + 2]):
            cp.push_back(pair[int, int](call_rule[k], pos_a[call_state[k]]))
        cpp_sort(cp.begin(), cp.end())
        for k in range(<int>cp.size()):
            c_rule.push_back(cp[k].first)
            c_to.push_back(cp[k].second)
    c_off.push_back(<int>c_rule.size())


cdef object _rule(dict rule_index, name):
    idx = rule_index.get(name)
    if idx is None:
        raise KeyError(f"ir.AnyOrder calls rule '{name}', which the build does not have")
    return idx


cdef int _state(unordered_map[int64_t, int]& index, vector[int64_t]& st_s, vector[int]& st_c,
                int64_t s, int c, int64_t width) except -1:
    """The number of state (s, c), made now if new."""
    cdef int64_t key = s * width + c
    if index.count(key):
        return index[key]
    cdef int i = <int>st_s.size()
    index[key] = i
    st_s.push_back(s)
    st_c.push_back(c)
    return i


cdef void _ws_edges(vector[int]& ws_lo, vector[int]& ws_hi, int above, int below, int q,
                    vector[int]& lo, vector[int]& hi, vector[int]& to, vector[int]& ws) noexcept:
    """The whitespace self-loop of position q, its ranges strictly between above and below."""
    cdef size_t k
    for k in range(ws_lo.size()):
        if ws_lo[k] > above and ws_hi[k] < below:
            _edge(lo, hi, to, ws, ws_lo[k], ws_hi[k], q, 1)


cdef inline void _edge(vector[int]& lo, vector[int]& hi, vector[int]& to, vector[int]& ws,
                       int a, int b, int t, int w) noexcept:
    lo.push_back(a)
    hi.push_back(b)
    to.push_back(t)
    ws.push_back(w)


cdef object _packed(vector[int]& finals, vector[int]& e_off, vector[int]& e_lo,
                    vector[int]& e_hi, vector[int]& e_to, vector[int]& e_ws, vector[int]& c_off,
                    vector[int]& c_rule, vector[int]& c_to):
    """The tables in the one int32 array Builder.add_positions reads: P, E, C, then the
    tables one after the other."""
    cdef vector[int]* parts[9]
    parts[0] = &finals
    parts[1] = &e_off
    parts[2] = &e_lo
    parts[3] = &e_hi
    parts[4] = &e_to
    parts[5] = &e_ws
    parts[6] = &c_off
    parts[7] = &c_rule
    parts[8] = &c_to
    cdef size_t n = 3, at = 3, k
    for k in range(9):
        n += parts[k].size()
    a = np.empty(n, np.int32)
    cdef int[::1] mv = a
    mv[0] = <int>finals.size()
    mv[1] = <int>e_lo.size()
    mv[2] = <int>c_rule.size()
    for k in range(9):
        if parts[k].size():
            memcpy(&mv[at], parts[k].data(), parts[k].size() * sizeof(int))
            at += parts[k].size()
    return a
