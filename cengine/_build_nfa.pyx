# distutils: language = c++
# Design: Thompson construction of one rule's expression into flat C++ vectors (epsilon
# edges, byte edges, calls), read by the subset construction (_build_dfa); in share mode,
# equal suffixes are built once (emit_shared). RuleNfa's fields are declared in
# _build_nfa.pxd for the builder.
"""Thompson NFA of one rule's expression (cengine._build's kernels)."""
from libc.stdint cimport int64_t, uintptr_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from .errors import CompileError, LimitError

from cengine._build_hash cimport _PairMap
from cengine._build_ir cimport (MAX_EXPR_DEPTH, _Bytes, _ByteSet, _CharSet, _Seq, _Alt,
                                _Repeat, _Ref, _Nothing, _Dfa, _field, _SEQ_ITEMS, _ALT_ITEMS,
                                _REPEAT_ITEM, _REPEAT_LO, _REPEAT_HI, _REF_NAME, _BYTES_DATA,
                                _BYTESET_RANGES, _CHARSET_RANGES)
from cengine._build_utf8 cimport _charset_sequences, _tail_id


cdef class RuleNfa:
    """Thompson NFA of one rule's expression over bytes and calls, as flat C++ vectors:
    eps (from, to)*, byt (from, lo, hi, to, whitespace)*, calls (from, rule, return)*."""
    def __init__(self, dict rule_index, rule_name, bint whitespace, int max_states, ws_type,
                 bint share=False):
        self.n = 0
        self.ws = 1 if whitespace else 0     # bytes emitted now spend the whitespace budget
        self.max_states = max_states
        self.rule_index = rule_index
        self.rule_name = rule_name
        self.ws_type = ws_type               # automaton._Whitespace (an inlined whitespace rule)
        # share=True: equal suffixes (an expression followed by the same state) are built
        # once, so the subset construction meets one NFA state where it met a copy per
        # occurrence (the free-key trie repeats its UTF-8 tails and string-body calls at
        # every node). Same language; another numbering than the frozen reference's.
        self.share = share
        self.starts_of = _PairMap() if share else None

    cdef void reset(self, rule_name, bint whitespace) noexcept:
        """Empty again, for another rule of the same grammar (Builder.add_rules makes one
        RuleNfa per build: the vectors keep their room)."""
        self.n = 0
        self.ws = 1 if whitespace else 0
        self.rule_name = rule_name
        self.eps_flat.clear()
        self.byt_flat.clear()
        self.calls_flat.clear()
        self.canon.clear()
        if self.share:
            self.starts_of.clear()

    cdef int new(self) except -1:
        if self.n >= self.max_states:
            raise LimitError(f"grammar needs more than {self.max_states} automaton states")
        if self.share:
            self.canon.push_back(self.n)
        self.n += 1
        return self.n - 1

    # per-state views for inspection (the shape of the old pure-Python NFA)
    @property
    def eps(self):
        out = [[] for _ in range(self.n)]
        for i in range(0, <int>self.eps_flat.size(), 2):
            out[self.eps_flat[i]].append(self.eps_flat[i + 1])
        return out

    @property
    def bytes_(self):
        out = [[] for _ in range(self.n)]
        for i in range(0, <int>self.byt_flat.size(), 5):
            out[self.byt_flat[i]].append(tuple(self.byt_flat[i + j] for j in range(1, 5)))
        return out

    @property
    def calls(self):
        out = [[] for _ in range(self.n)]
        for i in range(0, <int>self.calls_flat.size(), 3):
            out[self.calls_flat[i]].append((self.calls_flat[i + 1], self.calls_flat[i + 2]))
        return out

    def build(self, e):
        cdef int s = self.new()
        cdef int t = self.new()
        self.emit(e, s, t, 0)
        return s, t

    cdef int start_of(self, e, int t, int depth) except -1:
        """Share mode: a state that matches e and continues at t (made once per e, t and
        whitespace bit: its only out-edges are e's fragment, which ends in t)."""
        cdef int a
        cdef int64_t ka = self._key(e)
        cdef int64_t kb = self._cont(t, 0)
        a = self.starts_of.get(ka, kb)
        if a >= 0:
            return a
        a = self.new()
        self.emit(e, a, t, depth + 1)
        self.starts_of.put(ka, kb, a)
        return a

    cdef int64_t _key(self, e) except -2:
        if type(e) is _Ref:
            idx = self.rule_index.get(_field(e, _REF_NAME, "name"))
            if idx is not None:
                return <int64_t>idx        # (below any object's address)
        return <int64_t><uintptr_t><void*>e

    cdef bint _stampable(self, int s, int t, int end, int e0, int e1, int b0, int b1,
                         int c0, int c1) noexcept:
        """Whether the fragment just emitted from s to t (its new states t..end-1, its edges
        the records [e0, e1), [b0, b1), [c0, c1)) names no other state, and in share mode
        continues (canon) only within itself: then the same emission from another start into
        another end makes the same fragment renumbered."""
        cdef int i, x
        for i in range(e0, e1):
            x = self.eps_flat[i]
            if x != s and not (t <= x < end):
                return False
        for i in range(b0, b1, 5):
            x = self.byt_flat[i]
            if x != s and not (t <= x < end):
                return False
            x = self.byt_flat[i + 3]
            if x != s and not (t <= x < end):
                return False
        for i in range(c0, c1, 3):
            x = self.calls_flat[i]
            if x != s and not (t <= x < end):
                return False
            x = self.calls_flat[i + 2]
            if x != s and not (t <= x < end):
                return False
        if self.share:
            for x in range(t, end):
                if not (t <= self.canon[x] < end):
                    return False
        return True

    cdef int _stamp(self, int cur, int s, int t, int end, int e0, int e1, int b0, int b1,
                    int c0, int c1) except -1:
        """A copy of the fragment (s, t, end, records) from cur into a new end, its states
        made in the same order; returns the new end."""
        cdef int i, x, nxt, delta
        nxt = self.new()
        for i in range(end - t - 1):
            self.new()
        delta = nxt - t
        for i in range(e0, e1):
            x = self.eps_flat[i]
            self.eps_flat.push_back(cur if x == s else x + delta)
        for i in range(b0, b1, 5):
            x = self.byt_flat[i]
            self.byt_flat.push_back(cur if x == s else x + delta)
            self.byt_flat.push_back(self.byt_flat[i + 1])
            self.byt_flat.push_back(self.byt_flat[i + 2])
            x = self.byt_flat[i + 3]
            self.byt_flat.push_back(cur if x == s else x + delta)
            self.byt_flat.push_back(self.byt_flat[i + 4])
        for i in range(c0, c1, 3):
            x = self.calls_flat[i]
            self.calls_flat.push_back(cur if x == s else x + delta)
            self.calls_flat.push_back(self.calls_flat[i + 1])
            x = self.calls_flat[i + 2]
            self.calls_flat.push_back(cur if x == s else x + delta)
        if self.share:
            for x in range(t, end):
                self.canon[x + delta] = self.canon[x] + delta
        return nxt

    cdef int emit(self, e, int s, int t, int depth) except -1:
        cdef int i, m, cur, nxt, a, b, saved, lo, hi, base
        cdef int copies, stamp = 0, tcur = 0, tnxt = 0, tend = 0
        cdef int te0 = 0, te1 = 0, tb0 = 0, tb1 = 0, tc0 = 0, tc1 = 0
        cdef const unsigned char* data
        if depth > MAX_EXPR_DEPTH:
            raise LimitError("grammar expressions nest too deeply")
        k = type(e)
        if self.share and (k is _Seq or k is _Alt or k is _CharSet):
            return self.emit_shared(e, k, s, t, depth)
        if k is _Bytes:
            d = _field(e, _BYTES_DATA, "data")
            if type(d) is not bytes:
                d = bytes(memoryview(d))
            data = <const unsigned char*>PyBytes_AS_STRING(d)
            m = <int>PyBytes_GET_SIZE(d)
            cur = s
            for i in range(m):
                if i == m - 1:
                    nxt = t
                else:
                    nxt = self.new()
                self._byte(cur, data[i], data[i], nxt)
                cur = nxt
            if m == 0:
                self._eps(s, t)
        elif k is _ByteSet:
            for r in _field(e, _BYTESET_RANGES, "ranges"):
                self._byte(s, r[0], r[1], t)
        elif k is _CharSet:
            # share the tails: sequences of equal length end in the same states
            for sq in _charset_sequences(_field(e, _CHARSET_RANGES, "ranges")):
                cur = s
                m = len(sq)
                for i in range(m):
                    lo, hi = sq[i]
                    if i == m - 1:
                        nxt = t
                    else:
                        nxt = self.new()
                    self._byte(cur, lo, hi, nxt)
                    cur = nxt
        elif k is _Seq:
            items = _field(e, _SEQ_ITEMS, "items")
            m = len(items)
            cur = s
            for i in range(m):
                if i == m - 1:
                    nxt = t
                else:
                    nxt = self.new()
                self.emit(items[i], cur, nxt, depth + 1)
                cur = nxt
        elif k is _Alt:
            for it in _field(e, _ALT_ITEMS, "items"):
                a = self.new()
                b = self.new()
                self._eps(s, a)
                self.emit(it, a, b, depth + 1)
                self._eps(b, t)
        elif k is _Repeat:
            item = _field(e, _REPEAT_ITEM, "item")
            lo_o = _field(e, _REPEAT_LO, "lo")
            hi_o = _field(e, _REPEAT_HI, "hi")
            cur = s
            # the counted copies (lo of them, then hi - lo optional ones, each after a skip to
            # t): the first is emitted, the others stamped from it when its fragment touches
            # only its own new states, its start and its end (then emitting again would make
            # the same states and edges, renumbered: a walk of the item's expression per count
            # is what a {1,255} costs otherwise)
            copies = <int>lo_o if hi_o is None else <int>hi_o
            stamp = 0               # 0 no copy yet, 1 stamp from the first, -1 emit each
            for i in range(copies):
                if i >= <int>lo_o:
                    self._eps(cur, t)
                if stamp == 1:
                    nxt = self._stamp(cur, tcur, tnxt, tend, te0, te1, tb0, tb1, tc0, tc1)
                else:
                    nxt = self.new()
                    te0 = <int>self.eps_flat.size()
                    tb0 = <int>self.byt_flat.size()
                    tc0 = <int>self.calls_flat.size()
                    self.emit(item, cur, nxt, depth + 1)
                    if stamp == 0:
                        tcur, tnxt, tend = cur, nxt, self.n
                        te1 = <int>self.eps_flat.size()
                        tb1 = <int>self.byt_flat.size()
                        tc1 = <int>self.calls_flat.size()
                        stamp = 1 if i + 1 < copies and self._stampable(
                            tcur, tnxt, tend, te0, te1, tb0, tb1, tc0, tc1) else -1
                cur = nxt
            if hi_o is None:
                # loop through a fresh head: cur -eps-> h -item-> b -eps-> h ; h -eps-> t.
                # Looping back to cur itself would be wrong when cur has other exits (an
                # enclosing optional's skip): (a* '@')? would then accept a* alone
                h = self.new()
                a = self.new()
                b = self.new()
                self._eps(cur, h)
                self._eps(h, a)
                self.emit(item, a, b, depth + 1)
                self._eps(b, h)
                self._eps(h, t)
            else:
                self._eps(cur, t)
        elif k is _Ref:
            idx = self.rule_index.get(_field(e, _REF_NAME, "name"))
            if idx is None:
                raise CompileError(f"rule '{e.name}' is used but never defined", rule=self.rule_name)
            self.calls_flat.push_back(s)
            self.calls_flat.push_back(<int>idx)
            self.calls_flat.push_back(t)
        elif k is self.ws_type:
            saved = self.ws
            self.ws = 1
            self.emit(e.item, s, t, depth + 1)
            self.ws = saved
        elif k is _Dfa:
            # one NFA state per DFA state, byte edges only: the subset construction keeps
            # them one for one
            base = self.n
            for i in range(len(e.accepting)):
                self.new()
            self._eps(s, base)
            for i in range(len(e.accepting)):
                for lo, hi, nxt in e.edges[i]:
                    self._byte(base + i, lo, hi, base + nxt)
                if e.accepting[i]:
                    self._eps(base + i, t)
        elif k is _Nothing:
            pass
        else:  # a front end produced something unknown
            raise TypeError(f"not a grammar expression: {e!r}")
        return 0

    cdef int emit_shared(self, e, k, int s, int t, int depth) except -1:
        """Share mode's Seq, Alt and CharSet, with as many states as the plain construction
        where nothing repeats (the growth limit counts NFA states). A fragment only adds
        out-edges to its start and in-edges to its end, so a fragment made for (expression,
        continuation) serves every later occurrence with an equal continuation: a sequence is
        built from its end, each item's start shared by (item, what follows); an alternative
        is shared by (item, the alternation's end)."""
        cdef int i, m, cur, nxt, lo, hi, a, b
        cdef int64_t ka, kb
        if k is _Seq:
            items = _field(e, _SEQ_ITEMS, "items")
            m = len(items)
            if m == 0:
                return 0
            cur = t
            for i in range(m - 1, 0, -1):
                cur = self.start_of(items[i], cur, depth)
            self.emit(items[0], s, cur, depth + 1)
        elif k is _Alt:
            kb = self._cont(t, 0)
            for it in _field(e, _ALT_ITEMS, "items"):
                ka = self._key(it)
                a = self.starts_of.get(ka, kb)
                if a >= 0:
                    self._eps(s, a)
                    continue
                a = self.new()
                b = self.new()
                self.canon[b] = self.canon[t]
                self._eps(s, a)
                self.emit(it, a, b, depth + 1)
                self._eps(b, t)
                self.starts_of.put(ka, kb, a)
        else:
            # UTF-8 sequences from their ends: the states before a sequence's last bytes are
            # shared with every later use of that sequence into the same continuation
            kb = self._cont(t, 1)
            for sq in _charset_sequences(_field(e, _CHARSET_RANGES, "ranges")):
                m = len(sq)
                cur = t
                for i in range(m - 1, 0, -1):
                    ka = _tail_id(sq, i)
                    nxt = self.starts_of.get(ka, kb)
                    if nxt < 0:
                        nxt = self.new()
                        lo, hi = sq[i]
                        self._byte(nxt, lo, hi, cur)
                        self.starts_of.put(ka, kb, nxt)
                    cur = nxt
                lo, hi = sq[0]
                self._byte(s, lo, hi, cur)
        return 0
