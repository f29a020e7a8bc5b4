# distutils: language = c++
# Design: the free keys of an open object (ir.FreeKey: a JSON string that is none of the
# names) as positions made directly from the sorted spellings of the names: the trie of the
# spellings is the DFA, so there is no IR expression per trie node, no Thompson NFA and no
# subset construction. Builder.add_positions appends them as the key rule's positions.
"""Positions of an ir.FreeKey rule (cengine.automaton.build).

The names are spelled character by character as cengine.schema.json_grammar._spelling does
(json.dumps(ensure_ascii=False) of the character: raw UTF-8, `\\"` `\\\\` `\\b` `\\f` `\\n`
`\\r` `\\t`, `\\u00xx` for other controls, `\\udxxx` for a lone surrogate), sorted and made
distinct; a trie node is a range of them sharing a prefix that ends on a character boundary.
Positions:

  start    `"` -> the root's node
  node     `"` -> end unless a name ends here; a child's first spelling byte -> the child (or
           the byte positions inside its character); every other ASCII character as itself
           -> free; the lead bytes of every other non-ASCII character -> the shared UTF-8
           tails (then free); `\\` -> the escaped spellings of the names' characters that
           JSON makes escape (a control, the quote, the backslash): a child's -> the child,
           the others' -> free; a call of the escape rule (returning to end)
  free     a call of the string body rule (returning to end)
  end      final; with a `rest` rule, a call of it (returning to a final position)

which is the language of the trie expression the schema compiler built before
(tests/oracles/free_key_reference.py): while a key is still a prefix of a name, its
characters that occur in the names are taken only in their canonical spelling.
"""
from libcpp.vector cimport vector
from libcpp.string cimport string
from libcpp.algorithm cimport sort as cpp_sort, unique as cpp_unique
from libc.string cimport memcpy, memcmp
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS

import numpy as np

cdef object _np_empty = np.empty
cdef object _DT_I32 = np.dtype(np.int32)

cdef int QUOTE = 0x22
cdef int BACKSLASH = 0x5C
cdef char* HEX = b"0123456789abcdef"


cdef inline void _spell(Py_UCS4 c, string& out) noexcept:
    """Append the canonical spelling of one character of a name (json_grammar._spelling)."""
    cdef unsigned int u = <unsigned int>c
    cdef int k
    if u == 0x22 or u == 0x5C:
        out.push_back(b'\\')
        out.push_back(<char>u)
    elif u < 0x20 or (0xD800 <= u <= 0xDFFF):
        out.push_back(b'\\')
        if u == 0x08:
            out.push_back(b'b')
        elif u == 0x0C:
            out.push_back(b'f')
        elif u == 0x0A:
            out.push_back(b'n')
        elif u == 0x0D:
            out.push_back(b'r')
        elif u == 0x09:
            out.push_back(b't')
        else:
            out.push_back(b'u')
            for k in range(12, -1, -4):
                out.push_back(HEX[(u >> k) & 0xF])
    elif u < 0x80:
        out.push_back(<char>u)
    elif u < 0x800:
        out.push_back(<char>(0xC0 | (u >> 6)))
        out.push_back(<char>(0x80 | (u & 0x3F)))
    elif u < 0x10000:
        out.push_back(<char>(0xE0 | (u >> 12)))
        out.push_back(<char>(0x80 | ((u >> 6) & 0x3F)))
        out.push_back(<char>(0x80 | (u & 0x3F)))
    else:
        out.push_back(<char>(0xF0 | (u >> 18)))
        out.push_back(<char>(0x80 | ((u >> 12) & 0x3F)))
        out.push_back(<char>(0x80 | ((u >> 6) & 0x3F)))
        out.push_back(<char>(0x80 | (u & 0x3F)))


cdef inline int _byte(const string& s, size_t i) noexcept:
    return <int>(<unsigned char>s[i])


cdef inline int _char_len(const string& s, size_t d) noexcept:
    """Bytes of the spelling of the character that starts at s[d]."""
    cdef int c = _byte(s, d)
    if c == BACKSLASH:
        return 6 if _byte(s, d + 1) == 0x75 else 2
    if c < 0x80:
        return 1
    if c >= 0xF0:
        return 4
    if c >= 0xE0:
        return 3
    return 2


# the shared tails: TAIL + k is "k continuation bytes, then free"; the lead bytes whose
# second byte is narrower (no overlong forms, surrogates or code points past U+10FFFF)
cdef enum:
    T_FREE = 0
    T_C1 = 1
    T_C2 = 2
    T_C3 = 3
    T_E0 = 4
    T_ED = 5
    T_F0 = 6
    T_F4 = 7
    N_TAILS = 8


cdef class _Trie:
    """The positions being made: finals, byte edges and calls as records by position."""
    cdef vector[string] sp              # the names' spellings, sorted, distinct
    cdef vector[int] finals
    # byte edge records, each position's merged as they come (see edge)
    cdef vector[int] r_from, r_lo, r_hi, r_to
    cdef vector[int] last               # per position: its latest record (-1: none yet)
    cdef vector[int] n_rec              # per position: its records
    cdef vector[int] c_from, c_rule, c_to
    cdef int tails[N_TAILS]
    cdef int end, body, escape
    cdef vector[string] must              # spellings of the names' characters JSON escapes
    # the work list of trie nodes: spelling range, depth (bytes), position
    cdef vector[int] w_lo, w_hi, w_d, w_pos
    # node's scratch, emptied for each node (node is not reentrant; made per call, these cost
    # an allocation each per trie node)
    cdef vector[int] xb, xt, kid_pos, kid_first, esc_to, lb, lt
    cdef vector[string] esc

    cdef void reserve(self, int positions, int edges) noexcept:
        # room for about this many (the trie is made in one go: growing the vectors from
        # empty cost a copy of them per doubling)
        self.finals.reserve(positions)
        self.last.reserve(positions)
        self.n_rec.reserve(positions)
        self.c_from.reserve(positions)
        self.c_rule.reserve(positions)
        self.c_to.reserve(positions)
        self.r_from.reserve(edges)
        self.r_lo.reserve(edges)
        self.r_hi.reserve(edges)
        self.r_to.reserve(edges)

    cdef int new(self) noexcept:
        self.finals.push_back(0)
        self.last.push_back(-1)
        self.n_rec.push_back(0)
        return <int>self.finals.size() - 1

    cdef inline void edge(self, int p, int lo, int hi, int t) noexcept:
        # a position's edges come ascending; one that continues the position's latest into
        # the same target extends it (the merge _packed did over each position's records, in
        # the same order, so the same edges: fewer records to group)
        cdef int k = self.last[p]
        if k >= 0 and self.r_to[k] == t and self.r_hi[k] + 1 == lo:
            self.r_hi[k] = hi
            return
        self.last[p] = <int>self.r_from.size()
        self.n_rec[p] += 1
        self.r_from.push_back(p)
        self.r_lo.push_back(lo)
        self.r_hi.push_back(hi)
        self.r_to.push_back(t)

    cdef int tail(self, int k) noexcept:
        """The shared tail position k (made with the ones it leads to on first use)."""
        cdef int p = self.tails[k]
        if p >= 0:
            return p
        p = self.new()
        self.tails[k] = p
        if k == T_FREE:
            self.c_from.push_back(p)
            self.c_rule.push_back(self.body)
            self.c_to.push_back(self.end)
        elif k == T_C1:
            self.edge(p, 0x80, 0xBF, self.tail(T_FREE))
        elif k == T_C2 or k == T_C3:
            self.edge(p, 0x80, 0xBF, self.tail(k - 1))
        elif k == T_E0:
            self.edge(p, 0xA0, 0xBF, self.tail(T_C1))
        elif k == T_ED:
            self.edge(p, 0x80, 0x9F, self.tail(T_C1))
        elif k == T_F0:
            self.edge(p, 0x90, 0xBF, self.tail(T_C2))
        else:
            self.edge(p, 0x80, 0x8F, self.tail(T_C2))
        return p

    cdef void region(self, int p, int lo, int hi, int dflt, vector[int]& xb, vector[int]& xt,
                     size_t* at) noexcept:
        """Edges of p over bytes lo..hi: the exceptions xb/xt (ascending bytes, from *at on)
        that fall in the region, every other byte to the tail dflt (-1: none)."""
        cdef int b = lo, t = -1, e
        while b <= hi:
            if at[0] < xb.size() and xb[at[0]] == b:
                self.edge(p, b, b, xt[at[0]])
                at[0] += 1
                b += 1
                continue
            # a run of default bytes up to the next exception
            e = hi
            if at[0] < xb.size() and xb[at[0]] <= hi:
                e = xb[at[0]] - 1
            if dflt >= 0:
                if t < 0:
                    t = self.tail(dflt)
                self.edge(p, b, e, t)
            b = e + 1

    cdef void cont(self, int p, int lead, int i, int L, int first, int last, int d,
                   vector[int]& kid_pos, vector[int]& kid_first) noexcept:
        """Position p after i bytes of a non-ASCII character of L bytes: children first..last
        (indices into kid_pos/kid_first: their spellings in sp, at depth d) share those
        bytes; every other continuation byte leads to the tail of the rest."""
        cdef int lo = 0x80, hi = 0xBF, k, j, c, q
        cdef vector[int] xb, xt
        cdef size_t at = 0
        if i == 1:
            if lead == 0xE0:
                lo = 0xA0
            elif lead == 0xED:
                hi = 0x9F
            elif lead == 0xF0:
                lo = 0x90
            elif lead == 0xF4:
                hi = 0x8F
        k = first
        while k <= last:
            c = _byte(self.sp[kid_first[k]], d + i)
            j = k
            while j + 1 <= last and _byte(self.sp[kid_first[j + 1]], d + i) == c:
                j += 1
            if i + 1 == L:
                q = kid_pos[k]
            else:
                q = self.new()
                self.cont(q, lead, i + 1, L, k, j, d, kid_pos, kid_first)
            xb.push_back(c)
            xt.push_back(q)
            k = j + 1
        self.region(p, lo, hi, L - i - 1, xb, xt, &at)

    cdef void escapes(self, int p, vector[string]& spells, vector[int]& targets, int first,
                      int last, size_t off) noexcept:
        """The byte trie of spells[first..last] (sorted, prefix-free, sharing off bytes)
        from position p, each ending at its target."""
        cdef int k = first, j, c, q
        while k <= last:
            c = _byte(spells[k], off)
            j = k
            while j + 1 <= last and _byte(spells[j + 1], off) == c:
                j += 1
            if spells[k].size() == off + 1:
                q = targets[k]
            else:
                q = self.new()
                self.escapes(q, spells, targets, k, j, off + 1)
            self.edge(p, c, c, q)
            k = j + 1

    cdef void node(self, int lo, int hi, int d, int p) noexcept:
        """The edges and call of trie node p (spellings lo..hi-1, depth d); its children are
        put on the work list."""
        cdef bint is_end = lo < hi and <int>self.sp[lo].size() == d
        cdef int i = lo + (1 if is_end else 0), j, n, c, q, k, first
        cdef vector[int] xb, xt                 # ASCII exceptions
        cdef vector[int] kid_pos, kid_first     # non-ASCII children
        cdef vector[string] esc
        cdef vector[int] esc_to
        cdef vector[int] lb, lt                 # lead-byte exceptions
        cdef size_t at = 0
        cdef bint escaped
        cdef string one
        self._swap_scratch(xb, xt, kid_pos, kid_first, esc, esc_to, lb, lt)
        xb.clear()
        xt.clear()
        kid_pos.clear()
        kid_first.clear()
        esc.clear()
        esc_to.clear()
        lb.clear()
        lt.clear()
        if not is_end:
            xb.push_back(QUOTE)
            xt.push_back(self.end)
        while i < hi:
            n = _char_len(self.sp[i], d)
            j = i
            while j + 1 < hi and memcmp(self.sp[j + 1].data() + d, self.sp[i].data() + d,
                                        n) == 0:
                j += 1
            q = self.new()
            self.w_lo.push_back(i)
            self.w_hi.push_back(j + 1)
            self.w_d.push_back(d + n)
            self.w_pos.push_back(q)
            c = _byte(self.sp[i], d)
            if c == BACKSLASH:
                esc.push_back(self.sp[i].substr(d + 1, n - 1))
                esc_to.push_back(q)
            elif c < 0x80:
                xb.push_back(c)
                xt.push_back(q)
            else:
                kid_pos.push_back(q)
                kid_first.push_back(i)
            i = j + 1
        # the escaped spellings of the names' other must-escape characters leave the trie
        for k in range(<int>self.must.size()):
            escaped = False
            for j in range(<int>esc.size()):
                if esc[j].compare(self.must[k]) == 0:
                    escaped = True
                    break
            if not escaped:
                esc.push_back(self.must[k])
                esc_to.push_back(self.tail(T_FREE))
        if esc.size():
            q = self.new()
            _sort_by_spelling(esc, esc_to)
            self.escapes(q, esc, esc_to, 0, <int>esc.size() - 1, 0)
            xb.push_back(BACKSLASH)
            xt.push_back(q)
        _sort_pairs(xb, xt)
        self.region(p, 0x20, 0x21, T_FREE, xb, xt, &at)
        self.region(p, 0x22, 0x22, -1, xb, xt, &at)
        self.region(p, 0x23, 0x5B, T_FREE, xb, xt, &at)
        self.region(p, 0x5C, 0x5C, -1, xb, xt, &at)
        self.region(p, 0x5D, 0x7F, T_FREE, xb, xt, &at)
        # no non-ASCII child (most nodes) and the lead bytes' tails made: the eight edges the
        # regions below would add (one per region, to its tail), without their walk
        if kid_pos.size() == 0 and self.tails[T_C1] >= 0 and self.tails[T_E0] >= 0 \
                and self.tails[T_C2] >= 0 and self.tails[T_ED] >= 0 \
                and self.tails[T_F0] >= 0 and self.tails[T_C3] >= 0 \
                and self.tails[T_F4] >= 0:
            self.edge(p, 0xC2, 0xDF, self.tails[T_C1])
            self.edge(p, 0xE0, 0xE0, self.tails[T_E0])
            self.edge(p, 0xE1, 0xEC, self.tails[T_C2])
            self.edge(p, 0xED, 0xED, self.tails[T_ED])
            self.edge(p, 0xEE, 0xEF, self.tails[T_C2])
            self.edge(p, 0xF0, 0xF0, self.tails[T_F0])
            self.edge(p, 0xF1, 0xF3, self.tails[T_C3])
            self.edge(p, 0xF4, 0xF4, self.tails[T_F4])
            self.c_from.push_back(p)
            self.c_rule.push_back(self.escape)
            self.c_to.push_back(self.end)
            self._swap_scratch(xb, xt, kid_pos, kid_first, esc, esc_to, lb, lt)
            return
        # non-ASCII children, grouped by lead byte (ascending: the spellings are sorted)
        k = 0
        while k < <int>kid_pos.size():
            c = _byte(self.sp[kid_first[k]], d)
            j = k
            while j + 1 < <int>kid_pos.size() and _byte(self.sp[kid_first[j + 1]], d) == c:
                j += 1
            q = self.new()
            self.cont(q, c, 1, _char_len(self.sp[kid_first[k]], d), k, j, d, kid_pos,
                      kid_first)
            lb.push_back(c)
            lt.push_back(q)
            k = j + 1
        at = 0
        self.region(p, 0xC2, 0xDF, T_C1, lb, lt, &at)
        self.region(p, 0xE0, 0xE0, T_E0, lb, lt, &at)
        self.region(p, 0xE1, 0xEC, T_C2, lb, lt, &at)
        self.region(p, 0xED, 0xED, T_ED, lb, lt, &at)
        self.region(p, 0xEE, 0xEF, T_C2, lb, lt, &at)
        self.region(p, 0xF0, 0xF0, T_F0, lb, lt, &at)
        self.region(p, 0xF1, 0xF3, T_C3, lb, lt, &at)
        self.region(p, 0xF4, 0xF4, T_F4, lb, lt, &at)
        self.c_from.push_back(p)
        self.c_rule.push_back(self.escape)
        self.c_to.push_back(self.end)
        self._swap_scratch(xb, xt, kid_pos, kid_first, esc, esc_to, lb, lt)

    cdef void _swap_scratch(self, vector[int]& xb, vector[int]& xt, vector[int]& kid_pos,
                            vector[int]& kid_first, vector[string]& esc, vector[int]& esc_to,
                            vector[int]& lb, vector[int]& lt) noexcept:
        # node's locals and the kept scratch trade contents (a swap is its own inverse: the
        # same call at node's start and end)
        xb.swap(self.xb)
        xt.swap(self.xt)
        kid_pos.swap(self.kid_pos)
        kid_first.swap(self.kid_first)
        esc.swap(self.esc)
        esc_to.swap(self.esc_to)
        lb.swap(self.lb)
        lt.swap(self.lt)


cdef void _sort_pairs(vector[int]& keys, vector[int]& vals) noexcept:
    """Sort keys ascending (few, distinct), vals along (insertion sort)."""
    cdef int i, j, k, v
    for i in range(1, <int>keys.size()):
        k = keys[i]
        v = vals[i]
        j = i - 1
        while j >= 0 and keys[j] > k:
            keys[j + 1] = keys[j]
            vals[j + 1] = vals[j]
            j -= 1
        keys[j + 1] = k
        vals[j + 1] = v


cdef void _sort_by_spelling(vector[string]& keys, vector[int]& vals) noexcept:
    cdef int i, j, v
    cdef string k
    for i in range(1, <int>keys.size()):
        k = keys[i]
        v = vals[i]
        j = i - 1
        while j >= 0 and keys[j].compare(k) > 0:
            keys[j + 1] = keys[j]
            vals[j + 1] = vals[j]
            j -= 1
        keys[j + 1] = k
        vals[j + 1] = v


def positions(node, dict rule_index):
    """The positions of the ir.FreeKey rule `node`, packed as Builder.add_positions reads
    them; rule_index maps the rules it calls to their numbers."""
    cdef _Trie t = _Trie()
    cdef string s
    cdef Py_UCS4 c
    cdef int k, p, lo, hi, d, start
    cdef size_t i
    cdef bint seen[0x5D]
    for k in range(0x5D):
        seen[k] = False
    t.body = _rule(rule_index, node.body)
    t.escape = _rule(rule_index, node.escape)
    for name in node.names:
        s.clear()
        for c in <str>name:
            _spell(c, s)
            if c < 0x20 or c == 0x22 or c == 0x5C:
                seen[c] = True
        t.sp.push_back(s)
    cpp_sort(t.sp.begin(), t.sp.end())
    t.sp.erase(cpp_unique(t.sp.begin(), t.sp.end()), t.sp.end())
    k = 1
    for i in range(t.sp.size()):
        k += <int>t.sp[i].size()
    t.reserve(8 * k + 16, 16 * k + 32)
    for k in range(0x5D):
        if seen[k]:
            s.clear()
            _spell(<Py_UCS4>k, s)
            t.must.push_back(s.substr(1))       # after the backslash
    for k in range(N_TAILS):
        t.tails[k] = -1
    start = t.new()
    t.end = t.new()
    if node.rest is None:
        t.finals[t.end] = 1
    else:
        # the closed key calls the rest of the member (one call per position: end has none)
        p = t.new()
        t.finals[p] = 1
        t.c_from.push_back(t.end)
        t.c_rule.push_back(_rule(rule_index, node.rest))
        t.c_to.push_back(p)
    p = t.new()
    t.edge(start, QUOTE, QUOTE, p)
    t.w_lo.push_back(0)
    t.w_hi.push_back(<int>t.sp.size())
    t.w_d.push_back(0)
    t.w_pos.push_back(p)
    while t.w_pos.size():
        lo, hi, d, p = t.w_lo.back(), t.w_hi.back(), t.w_d.back(), t.w_pos.back()
        t.w_lo.pop_back()
        t.w_hi.pop_back()
        t.w_d.pop_back()
        t.w_pos.pop_back()
        t.node(lo, hi, d, p)
    return _packed(t)


cdef object _rule(dict rule_index, name):
    idx = rule_index.get(name)
    if idx is None:
        raise KeyError(f"ir.FreeKey calls rule '{name}', which the build does not have")
    return idx


cdef object _packed(_Trie t):
    """The tables in the one int32 array Builder.add_positions reads: P, E, C, finals,
    e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to. The records (merged already, see
    _Trie.edge) are grouped by position, each position's in the order they were made, by one
    scatter straight into the array."""
    cdef int P = <int>t.finals.size(), E = <int>t.r_from.size(), C = <int>t.c_from.size()
    cdef int i, p, at
    cdef size_t n = 3 + P + (P + 1) + 4 * E + (P + 1) + 2 * C
    cdef Py_buffer view
    a = _np_empty(n, _DT_I32)
    PyObject_GetBuffer(a, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
    cdef int* mv = <int*>view.buf
    PyBuffer_Release(&view)         # (the array lives on, never resized)
    mv[0] = P
    mv[1] = E
    mv[2] = C
    cdef int* finals = mv + 3
    cdef int* e_off = finals + P
    cdef int* e_lo = e_off + P + 1
    cdef int* e_hi = e_lo + E
    cdef int* e_to = e_hi + E
    cdef int* e_ws = e_to + E
    cdef int* c_off = e_ws + E
    cdef int* c_rule = c_off + P + 1
    cdef int* c_to = c_rule + C
    cdef const int* nrec = t.n_rec.data()
    cdef const int* r_from = t.r_from.data()
    cdef const int* r_lo = t.r_lo.data()
    cdef const int* r_hi = t.r_hi.data()
    cdef const int* r_to = t.r_to.data()
    cdef const int* c_from = t.c_from.data()
    for i in range(P):
        finals[i] = t.finals[i]
    e_off[0] = 0
    for i in range(P):
        e_off[i + 1] = e_off[i] + nrec[i]
    # the fill pointers in c_off's room (written after)
    for i in range(P):
        c_off[i] = e_off[i]
    for i in range(E):
        p = r_from[i]
        at = c_off[p]
        c_off[p] = at + 1
        e_lo[at] = r_lo[i]
        e_hi[at] = r_hi[i]
        e_to[at] = r_to[i]
        e_ws[at] = 0                    # (the key is no whitespace)
    # at most one call per position
    for i in range(P + 1):
        c_off[i] = 0
    for i in range(C):
        c_off[c_from[i] + 1] += 1
    for i in range(P):
        c_off[i + 1] += c_off[i]
    for i in range(C):
        at = c_off[c_from[i]]
        c_rule[at] = t.c_rule[i]
        c_to[at] = t.c_to[i]
    return a


# --- the escapes that leave the trie (ir.KeyEscape) ----------------------------------------
# `\\` then a short escape or `\\u` and four hex digits (either case) of a character no name
# uses, a surrogate pair for one past U+FFFF, then the rest of the string (a call of the
# body). Per position, the target of each hex digit value; digits read in both cases.

# the short escape letters, ascending, and the code point each stands for
cdef int[8] SHORT_LETTER = [0x22, 0x2F, 0x5C, 0x62, 0x66, 0x6E, 0x72, 0x74]
cdef int[8] SHORT_CP = [0x22, 0x2F, 0x5C, 0x08, 0x0C, 0x0A, 0x0D, 0x09]

cdef enum:
    MODE_FIRST = 0      # the first \\u: a character of the BMP or a high surrogate
    MODE_LOW = 1        # the \\u of the low surrogate after a given high one


cdef class _Escapes(_Trie):
    """The positions of one escape rule: hex digit automata over the characters the names
    do not use (used: their code points as sorted, disjoint ranges)."""
    cdef vector[int] u_lo, u_hi
    cdef int hex_tail[4]        # k any hex digits, then free
    cdef int low_tail[4]        # k any hex digits, then any low surrogate's \\u escape
    cdef int low_any            # `\\u` and any low surrogate (DC00-DFFF), then free

    cdef bint used_in(self, long a, long b) noexcept:
        """A used code point lies in [a, b]."""
        cdef size_t i
        for i in range(self.u_lo.size()):
            if self.u_lo[i] <= b and self.u_hi[i] >= a:
                return True
        return False

    cdef void digits(self, int p, int* t) noexcept:
        """p's edges for hex digits of values 0..15 to t[value] (-1: none), bytes ascending."""
        cdef int d
        for d in range(10):
            if t[d] >= 0:
                self.edge(p, 0x30 + d, 0x30 + d, t[d])
        for d in range(10, 16):
            if t[d] >= 0:
                self.edge(p, 0x41 + d - 10, 0x41 + d - 10, t[d])
        for d in range(10, 16):
            if t[d] >= 0:
                self.edge(p, 0x61 + d - 10, 0x61 + d - 10, t[d])

    cdef int any_hex(self, int k) noexcept:
        """k any hex digits, then free (0: free itself)."""
        cdef int p, d, q
        cdef int t[16]
        if k == 0:
            return self.tail(T_FREE)
        if self.hex_tail[k] >= 0:
            return self.hex_tail[k]
        p = self.new()
        self.hex_tail[k] = p
        q = self.any_hex(k - 1)
        for d in range(16):
            t[d] = q
        self.digits(p, t)
        return p

    cdef int any_low(self, int k) noexcept:
        """k any hex digits, then `\\u` and any low surrogate, then free."""
        cdef int p, d, q, r
        cdef int t[16]
        if k == 0:
            if self.low_any < 0:
                p = self.low_any = self.new()
                q = self.new()
                self.edge(p, BACKSLASH, BACKSLASH, q)
                r = self.new()
                self.edge(q, 0x75, 0x75, r)
                q = self.new()
                for d in range(16):
                    t[d] = -1
                t[0xD] = q
                self.digits(r, t)
                t[0xD] = -1
                for d in range(0xC, 16):
                    t[d] = self.any_hex(2)
                self.digits(q, t)
            return self.low_any
        if self.low_tail[k] >= 0:
            return self.low_tail[k]
        p = self.new()
        self.low_tail[k] = p
        q = self.any_low(k - 1)
        for d in range(16):
            t[d] = q
        self.digits(p, t)
        return p

    cdef int hex_node(self, int k, long base, int mode, long high) noexcept:
        """The position after 4 - k hex digits of value prefix base (base: the prefix times
        16^k): the rest of the values allowed in mode (high: the high surrogate, MODE_LOW)."""
        cdef int p = self.new(), d
        cdef long span = 1, a, b
        cdef int t[16]
        cdef int i
        for i in range(k - 1):
            span *= 16
        for d in range(16):
            a = base + d * span
            b = a + span - 1
            t[d] = self.target(k - 1, a, b, mode, high)
        self.digits(p, t)
        return p

    cdef int target(self, int k, long a, long b, int mode, long high) noexcept:
        """Where the values [a, b] (k digits still to come) lead, or -1."""
        cdef long lo, hi
        if mode == MODE_LOW:
            if b < 0xDC00 or a > 0xDFFF:
                return -1
            lo = 0x10000 + (high - 0xD800) * 0x400 + (a - 0xDC00)
            hi = lo + (b - a)
            if a >= 0xDC00 and b <= 0xDFFF and not self.used_in(lo, hi):
                return self.any_hex(k)
            if k == 0:
                return -1           # a used character
            return self.hex_node(k, a, mode, high)
        # the first \\u
        if b < 0xD800 or a > 0xDFFF:
            if not self.used_in(a, b):
                return self.any_hex(k)
            if k == 0:
                return -1
            return self.hex_node(k, a, mode, high)
        if a >= 0xDC00 and b <= 0xDFFF:
            return -1               # a low surrogate alone
        if a >= 0xD800 and b <= 0xDBFF:
            lo = 0x10000 + (a - 0xD800) * 0x400
            hi = 0x10000 + (b - 0xD800) * 0x400 + 0x3FF
            if not self.used_in(lo, hi):
                return self.any_low(k)
            if k == 0:
                return self.low_after(a)
            return self.hex_node(k, a, mode, high)
        return self.hex_node(k, a, mode, high)

    cdef int low_after(self, long high) noexcept:
        """`\\u` and a low surrogate completing a character no name uses after high."""
        cdef int p = self.new(), q = self.new()
        self.edge(p, BACKSLASH, BACKSLASH, q)
        self.edge(q, 0x75, 0x75, self.hex_node(4, 0, MODE_LOW, high))
        return p


def escape_positions(node, dict rule_index):
    """The positions of the ir.KeyEscape rule `node`, packed as Builder.add_positions reads
    them; rule_index maps the rule it calls to its number."""
    cdef _Escapes t = _Escapes()
    cdef int k, start, p, u
    t.reserve(64, 128)          # (the corpus's largest: 57 positions, 85 edges)
    t.body = _rule(rule_index, node.body)
    for a, b in node.used:
        t.u_lo.push_back(a)
        t.u_hi.push_back(b)
    for k in range(N_TAILS):
        t.tails[k] = -1
    for k in range(4):
        t.hex_tail[k] = -1
        t.low_tail[k] = -1
    t.low_any = -1
    start = t.new()
    t.end = t.new()
    t.finals[t.end] = 1
    p = t.new()
    t.edge(start, BACKSLASH, BACKSLASH, p)
    for k in range(8):
        if not t.used_in(SHORT_CP[k], SHORT_CP[k]):
            t.edge(p, SHORT_LETTER[k], SHORT_LETTER[k], t.tail(T_FREE))
    u = t.hex_node(4, 0, MODE_FIRST, 0)
    t.edge(p, 0x75, 0x75, u)
    return _packed(t)
