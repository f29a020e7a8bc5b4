# distutils: language = c++
# Design: the states of an any-order object (ir.AnyOrder) are enumerated with C ints and made
# into positions directly, two per state; Builder.add_positions appends them as the object
# rule's positions. No IR rule, inlining walk or subset construction per state. States are
# numbered through a flat table (a hash map only past FLAT_STATES keys), and the edges and
# calls are counted before they are written, straight into the packed array. The same
# states with `[` `]` for `{` `}` are an array of distinct values (uniqueItems over a finite
# domain, each member one value's rule).
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
from libcpp.vector cimport vector
from libcpp.unordered_map cimport unordered_map
from libcpp.pair cimport pair
from libcpp.algorithm cimport sort as cpp_sort

import numpy as np

cdef int COMMA = 0x2C


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
    # whitespace ranges, checked apart from the structural bytes (else the DFA is not one),
    # split once into those below `,`, between `,` and `}`, and above `}` (each position
    # writes its loop in three runs around its `,` and `}` edges)
    cdef vector[int] ws_lo, ws_hi
    cdef int lo_, hi_
    brackets = node.brackets
    if len(brackets) != 2 or brackets[0] <= COMMA or brackets[1] <= COMMA:
        raise ValueError(f"ir.AnyOrder brackets {brackets!r} must be two bytes above ','")
    cdef int OPEN = brackets[0]
    cdef int CLOSE = brackets[1]
    for lo, hi in node.ws:
        if lo <= COMMA <= hi or lo <= CLOSE <= hi or lo <= OPEN <= hi or \
                (ws_hi.size() and lo <= ws_hi.back()):
            raise ValueError(f"ir.AnyOrder whitespace {node.ws!r} must be sorted, disjoint "
                             "and apart from ',' and the brackets")
        ws_lo.push_back(lo)
        ws_hi.push_back(hi)
    cdef vector[int] run_lo[3]
    cdef vector[int] run_hi[3]
    cdef int bounds[4]
    bounds[0] = -1
    bounds[1] = COMMA
    bounds[2] = CLOSE
    bounds[3] = 256
    cdef int g, k
    for g in range(3):
        for k in range(<int>ws_lo.size()):
            if ws_lo[k] > bounds[g] and ws_hi[k] < bounds[g + 1]:
                run_lo[g].push_back(ws_lo[k])
                run_hi[g].push_back(ws_hi[k])
    cdef int nws = <int>(run_lo[0].size() + run_lo[1].size() + run_lo[2].size())

    # states in discovery order (breadth first from the start; completions then settle in
    # few sweeps, the builder's sweeps running from the last position down), numbered by a
    # flat table over (s, c) where it is small (a hash map past that)
    cdef _States states = _States(n, m.chain, (node.hi if node.hi is not None else node.lo) + 2)
    # per state: its calls (rule, target state) after a comma, or of the start for state -1
    cdef vector[int] calls_off, call_rule, call_state
    cdef vector[int] js
    cdef vector[int64_t] ts
    cdef int i, c, c1, t, q
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
            s, c = states.st_s[i], states.st_c[i]
        c1 = m.cap(c + 1)
        m.moves(s, js, ts)
        for k in range(<int>js.size()):
            if m.bounded and not m.viable(ts[k], c1):
                continue
            t = states.number(ts[k], c1)
            call_rule.push_back(member_rule[js[k]])
            call_state.push_back(t)
        if extra_rule >= 0 and (not m.bounded or m.viable(s, c1)):
            t = states.number(s, c1)
            call_rule.push_back(extra_rule)
            call_state.push_back(t)
        calls_off.push_back(<int>call_rule.size())
        i += 1
        if i >= <int>states.st_s.size():
            break

    # positions: 0 start, 1 after `{`, then per state its A and (when a member may follow)
    # its C, the end last; their edges counted first, so the tables are written in place
    cdef int S = <int>states.st_s.size()
    cdef vector[int] pos_a, pos_c
    cdef vector[char] closes
    cdef char cl
    cdef int64_t E = 1 + nws + (1 if empty_ok else 0)
    pos_a.reserve(S)
    pos_c.reserve(S)
    closes.reserve(S)
    q = 2
    for i in range(S):
        pos_a.push_back(q)
        q += 1
        cl = 1 if m.can_close(states.st_s[i], states.st_c[i]) else 0
        closes.push_back(cl)
        E += nws + cl
        if calls_off[i + 2] > calls_off[i + 1]:
            pos_c.push_back(q)
            q += 1
            E += nws + 1        # (its A's comma, and its own loop)
        else:
            pos_c.push_back(-1)
    cdef int END = q
    cdef int P = q + 1
    cdef int64_t C = <int64_t>call_rule.size()
    cdef int64_t total = 3 + P + (P + 1) + 4 * E + (P + 1) + 2 * C
    a = np.empty(total, np.int32)
    cdef int[::1] mv = a
    cdef _Out o
    o.finals = &mv[3]
    o.e_off = o.finals + P
    o.e_lo = o.e_off + P + 1
    o.e_hi = o.e_lo + E
    o.e_to = o.e_hi + E
    o.e_ws = o.e_to + E
    o.c_off = o.e_ws + E
    o.c_rule = o.c_off + P + 1
    o.c_to = o.c_rule + C
    o.p = 0
    o.e = 0
    o.c = 0
    o.close = CLOSE
    mv[0] = P
    mv[1] = <int>E
    mv[2] = <int>C
    cdef vector[pair[int, int]] cp
    # the start
    o.e_off[0] = 0
    o.c_off[0] = 0
    _put_edge(o, OPEN, OPEN, 1, 0)
    _end_position(o, 0)
    # after `{` (like a C, with the empty object's close), then each state's A and C
    _position(o, 1, -1, -1, END if empty_ok else -1, run_lo, run_hi, calls_off, call_rule,
              call_state, pos_a, cp)
    for i in range(S):
        _position(o, pos_a[i], -2, pos_c[i], END if closes[i] else -1, run_lo, run_hi,
                  calls_off, call_rule, call_state, pos_a, cp)
        if pos_c[i] >= 0:
            _position(o, pos_c[i], i, -1, -1, run_lo, run_hi, calls_off, call_rule,
                      call_state, pos_a, cp)
    # the end
    _end_position(o, 1)
    if o.p != P or o.e != E or o.c != C:
        raise AssertionError("ir.AnyOrder positions: tables not filled as counted")
    return a


cdef struct _Out:
    # the packed tables being written (pointers into the array) and how far each is filled
    int* finals
    int* e_off
    int* e_lo
    int* e_hi
    int* e_to
    int* e_ws
    int* c_off
    int* c_rule
    int* c_to
    int p
    int e
    int c
    int close       # the closing bracket


cdef inline void _put_edge(_Out& o, int a, int b, int t, int w) noexcept:
    o.e_lo[o.e] = a
    o.e_hi[o.e] = b
    o.e_to[o.e] = t
    o.e_ws[o.e] = w
    o.e += 1


cdef inline void _end_position(_Out& o, int final) noexcept:
    o.finals[o.p] = final
    o.p += 1
    o.e_off[o.p] = o.e
    o.c_off[o.p] = o.c


cdef inline void _ws_run(_Out& o, vector[int]& lo, vector[int]& hi, int q) noexcept:
    cdef size_t k
    for k in range(lo.size()):
        _put_edge(o, lo[k], hi[k], q, 1)


cdef void _position(_Out& o, int q, int calls_of, int comma_to, int close_to,
                    vector[int]* run_lo, vector[int]* run_hi, vector[int]& calls_off,
                    vector[int]& call_rule, vector[int]& call_state, vector[int]& pos_a,
                    vector[pair[int, int]]& cp) noexcept:
    """Position q (the next one): its whitespace loop, `,` to comma_to and `}` to close_to
    (when >= 0; edges ascending), and the calls of state calls_of's moves (-1: the start's,
    -2: none) into the A of the state each leads to, ascending by rule. cp: scratch room."""
    cdef int k
    _ws_run(o, run_lo[0], run_hi[0], q)
    if comma_to >= 0:
        _put_edge(o, COMMA, COMMA, comma_to, 0)
    _ws_run(o, run_lo[1], run_hi[1], q)
    if close_to >= 0:
        _put_edge(o, o.close, o.close, close_to, 0)
    _ws_run(o, run_lo[2], run_hi[2], q)
    if calls_of >= -1:
        cp.clear()
        for k in range(calls_off[calls_of + 1], calls_off[calls_of + 2]):
            cp.push_back(pair[int, int](call_rule[k], pos_a[call_state[k]]))
        cpp_sort(cp.begin(), cp.end())
        for k in range(<int>cp.size()):
            o.c_rule[o.c] = cp[k].first
            o.c_to[o.c] = cp[k].second
            o.c += 1
    _end_position(o, 0)


cdef object _rule(dict rule_index, name):
    idx = rule_index.get(name)
    if idx is None:
        raise KeyError(f"ir.AnyOrder calls rule '{name}', which the build does not have")
    return idx


# flat numbering tables up to this many (s, c) keys; a hash map past it
cdef int64_t FLAT_STATES = 1 << 16


cdef class _States:
    """The states (s, c) in discovery order and their numbers."""
    cdef int64_t width
    cdef bint flat
    cdef vector[int] slot                   # flat: key -> number, -1 not yet made
    cdef unordered_map[int64_t, int] index  # otherwise
    cdef vector[int64_t] st_s
    cdef vector[int] st_c

    def __init__(self, int n, bint chain, int64_t width):
        cdef int64_t keys = -1
        self.width = width
        if chain:
            keys = (n + 1) * width
        elif n <= 40:
            keys = ((<int64_t>1) << n) * width
        self.flat = 0 <= keys <= FLAT_STATES
        if self.flat:
            self.slot.assign(keys, -1)

    cdef int number(self, int64_t s, int c) except -1:
        """The number of state (s, c), made now if new."""
        cdef int64_t key = s * self.width + c
        cdef int i
        if self.flat:
            i = self.slot[key]
            if i >= 0:
                return i
            i = self.slot[key] = <int>self.st_s.size()
        else:
            if self.index.count(key):
                return self.index[key]
            i = <int>self.st_s.size()
            self.index[key] = i
        self.st_s.push_back(s)
        self.st_c.push_back(c)
        return i
