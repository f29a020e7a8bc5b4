# cython: language_level=3
# Design: the mask table of an automaton position p (the top frame of a stack) holds what does
# not depend on the frames below it (xgrammar's adaptive cache, made exact):
#   * accepted tokens: every token whose bytes are consumed while p's frame is still on the
#     stack; kept as a bitset or an id list, whichever is smaller. Tokens whose acceptance
#     needs whitespace budget or container depth go in a short conditional list.
#   * exits: trie nodes where p's frame is popped (its rule ended inside the token). Their
#     remaining suffixes are merged into one small suffix trie per (whitespace, depth)
#     class; at run time only that suffix trie is walked, with the real stack below p.
# Tables of small self-contained rules (string bodies, numbers) are keyed by the rule's
# structure (RuleSignatures: an exact serialisation, no hash) and shared across grammars in
# SHARED_TABLES, a byte-bounded LRU (cengine.lru). The walks that fill tables are in _mask.pyx.
from libc.stdlib cimport malloc, calloc, free, qsort
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
cimport numpy as cnp
import itertools
import numpy as np

from cengine._bitmask cimport ctz32, popcount32
from cengine._trie cimport trie_from_arrays
from cengine.lru import ByteLRU

cnp.import_array()


cdef class PosTable:
    """The mask table of one position (or of a pair of frames; fields in _tables.pxd)."""

    def __dealloc__(self):
        free(self.g_ws)
        free(self.g_pm)
        free(self.g_trie)

    def nbytes(self):
        n = 0
        for a in (self.bits, self.ids, self.cond):
            if a is not None:
                n += a.nbytes
        for _, _, arrs in self.groups:
            n += sum(x.nbytes for x in arrs[:4]) + arrs[6].nbytes + arrs[7].nbytes
        return n



cdef int _exit_order(const void* a, const void* b) noexcept nogil:
    # exit triples (node, ws, pm) by cost (ws, pm), then node
    cdef const int32_t* x = <const int32_t*> a
    cdef const int32_t* y = <const int32_t*> b
    if x[1] != y[1]:
        return -1 if x[1] < y[1] else 1
    if x[2] != y[2]:
        return -1 if x[2] < y[2] else 1
    if x[0] != y[0]:
        return -1 if x[0] < y[0] else 1
    return 0


cdef int _exit_groups(PosTable t, TokenTrie trie, const I32Vec* exits, TokenTrie runs) except -1:
    """The suffix tries of the exits, one per cost (ws, pm) in ascending order, each over its
    nodes sorted and distinct, into t.groups. In C: a number's start exits at a thousand
    nodes, and grouping them in Python (or numpy) cost more than the rest of its table; the
    walk records them mostly in order already."""
    cdef int32_t n_ex = exits.n // 3, k = 0, m, ws, pm
    cdef int32_t* buf = <int32_t*> malloc(max(1, exits.n) * sizeof(int32_t))
    cdef int32_t* nodes = <int32_t*> malloc(max(1, n_ex) * sizeof(int32_t))
    try:
        if buf == NULL or nodes == NULL:
            raise MemoryError()
        memcpy(buf, exits.data, exits.n * sizeof(int32_t))
        for k in range(1, n_ex):
            if _exit_order(buf + 3 * (k - 1), buf + 3 * k) > 0:
                qsort(buf, n_ex, 3 * sizeof(int32_t), _exit_order)
                break
        k = 0
        while k < n_ex:
            ws = buf[3 * k + 1]
            pm = buf[3 * k + 2]
            m = 0
            while k < n_ex and buf[3 * k + 1] == ws and buf[3 * k + 2] == pm:
                if m == 0 or nodes[m - 1] != buf[3 * k]:
                    nodes[m] = buf[3 * k]
                    m += 1
                k += 1
            # node ids past the trie's own are in the whitespace-run trie (see walk_ws)
            arrs = trie.suffix_trie(PyBytes_FromStringAndSize(<char*> nodes,
                                                              m * sizeof(int32_t)), runs)
            if arrs is not None:
                t.groups.append((ws, pm, arrs))
    finally:
        free(buf)
        free(nodes)
    return 0


cdef PosTable make_table(TokenTrie trie, cnp.ndarray bits, const I32Vec* acc,
                         const I32Vec* cond, const I32Vec* exits, int32_t n_words,
                         TokenTrie runs=None):
    """Pack one position's walk results: the accepted tokens as a bitset or an id list
    (whichever is smaller), the conditional triples, and the suffix tries of its exits."""
    cdef PosTable t = PosTable.__new__(PosTable)
    cdef int32_t k, n_acc = 0, n
    cdef uint32_t w
    cdef const uint32_t* bp
    cdef int32_t* ip
    cdef cnp.ndarray ids
    if bits is None:
        n_acc = acc.n
    else:
        bp = <const uint32_t*> cnp.PyArray_DATA(bits)
        for k in range(n_words):
            n_acc += popcount32(bp[k])
    t.n_accepted = n_acc
    if n_acc * 2 < n_words:
        # few tokens: an id list is smaller than the bitset
        ids = np.empty(n_acc, np.int32)
        ip = <int32_t*> cnp.PyArray_DATA(ids)
        if bits is None:
            if n_acc:
                memcpy(ip, acc.data, n_acc * sizeof(int32_t))
        else:
            n = 0
            for k in range(n_words):
                w = bp[k]
                while w:
                    ip[n] = k * 32 + ctz32(w)
                    n += 1
                    w &= w - 1
        t.ids = ids
        t.bits = None
        t.bits_p = NULL
        t.ids_p = <const int32_t*> ip if n_acc else NULL
        t.n_ids = n_acc
    else:
        if bits is None:
            bits = np.zeros(n_words, np.uint32)
            ip = <int32_t*> cnp.PyArray_DATA(bits)
            for k in range(n_acc):
                (<uint32_t*> ip)[acc.data[k] >> 5] |= (<uint32_t> 1) << (acc.data[k] & 31)
        t.bits = bits
        t.ids = None
        t.bits_p = <const uint32_t*> cnp.PyArray_DATA(bits)
        t.ids_p = NULL
        t.n_ids = 0
    t.cond = np.empty((cond.n // 3, 3), np.int32)
    if cond.n:
        memcpy(cnp.PyArray_DATA(t.cond), cond.data, cond.n * sizeof(int32_t))
    t.n_cond = cond.n // 3
    t.cond_p = <const int32_t*> cnp.PyArray_DATA(t.cond) if t.n_cond else NULL
    t.groups = []
    if exits.n:
        _exit_groups(t, trie, exits, runs)
    t.n_groups = len(t.groups)
    t.g_ws = <int32_t*> malloc(max(1, t.n_groups) * sizeof(int32_t))
    t.g_pm = <int32_t*> malloc(max(1, t.n_groups) * sizeof(int32_t))
    t.g_trie = <TrieC*> malloc(max(1, t.n_groups) * sizeof(TrieC))
    if t.g_ws == NULL or t.g_pm == NULL or t.g_trie == NULL:
        raise MemoryError()
    for g, (ws, pm, arrs) in enumerate(t.groups):
        t.g_ws[g] = ws
        t.g_pm[g] = pm
        trie_from_arrays(&t.g_trie[g], arrs)
    return t



# tables of small self-contained rules, shared across grammars (key: rule structure), least
# recently used first out once they hold more than max_bytes
SHARED_MAX_BYTES = 256 << 20
SHARED_TABLES = ByteLRU(SHARED_MAX_BYTES)


def shared_tables_nbytes():
    """Bytes held by the tables shared across grammars."""
    return SHARED_TABLES.nbytes()


cdef enum:
    SIG_MAX_RULES = 8          # a shared rule calls at most this many rules (itself included) ...
    SIG_MAX_POSITIONS = 512    # ... with at most this many positions in all


_SIGNATURE_IDS = itertools.count()


# the serialisations of char_in rules by class (character_body)
_CLASS_BODIES = {}


def character_body(ranges):
    """The serialisation (RuleSignatures, header off) of json_grammar.char_in(ranges) as a rule
    of its own with its frame kept (a bounded string's character), from a reference grammar
    built once per class; None if the build keeps no such rule."""
    body = _CLASS_BODIES.get(ranges, False)
    if body is False:
        from cengine import ir
        from cengine.automaton import build
        from cengine.schema import json_grammar
        g = ir.GrammarIR()
        ch = g.add("character", json_grammar.char_in(ranges), frame=True)
        g.add("root", ir.seq(ir.lit('"'), ir.repeat(ch, 0, 40), ir.lit('"')))
        a = build(g)
        names = list(a.rule_names)
        body = None
        if "character" in names:
            sig = RuleSignatures(a)
            d = sig.rule_digest(names.index("character"))
            body = None if d is None else d[len(sig.header):]
        if len(_CLASS_BODIES) >= 256:
            _CLASS_BODIES.clear()
        _CLASS_BODIES[ranges] = body
    return body


def any_character_body():
    """character_body of every code point: json_grammar.string_char's rule."""
    from cengine import ir
    return character_body(((0, ir.MAX_UNICODE),))


def _json_spelling(int cp):
    """A JSON string spelling of code point cp (an escape where raw bytes are not allowed)."""
    if cp < 0x20 or cp == 0x22 or cp == 0x5C:
        return b"\\u%04x" % cp
    if 0xD800 <= cp <= 0xDFFF:
        return None
    return chr(cp).encode("utf-8")


cdef class RuleSignatures:
    """Structural keys of positions whose rule (with everything it calls) is small, so their
    tables can be shared across grammars. A key is the exact serialisation of the rules'
    tables with positions made relative (no hash, so two keys are equal only when the rules
    are). Computed per rule on first need: a big grammar pays only for the rules its
    documents reach."""
    cdef const int32_t[::1] rule_start, pos_rule, edge_off, edge_to, call_off, call_rule, call_to
    cdef const uint8_t[::1] edge_lo, edge_hi, edge_ws, pos_flags
    cdef const int64_t[::1] short_len
    cdef int32_t n_rules, n_pos
    cdef dict by_rule
    cdef dict by_class
    cdef bytes header
    cdef object token

    def __init__(self, a):
        self.rule_start = a.rule_start
        self.pos_rule = a.pos_rule
        self.edge_off = a.edge_off
        self.edge_to = a.edge_to
        self.edge_lo = a.edge_lo
        self.edge_hi = a.edge_hi
        self.edge_ws = a.edge_ws
        self.pos_flags = a.pos_flags
        self.call_off = a.call_off
        self.call_rule = a.call_rule
        self.call_to = a.call_to
        self.short_len = a.short_len
        self.n_rules = a.rule_start.shape[0]
        self.n_pos = a.n_positions
        self.by_rule = {}
        self.by_class = {}
        self.token = next(_SIGNATURE_IDS)     # unique for the life of the process
        # tables record whitespace and depth costs; whether limits exist at all is part of it
        self.header = repr((a.max_depth >= (1 << 30), a.whitespace_budget >= 0)).encode()

    cdef inline int32_t _end(self, int32_t r) noexcept:
        return self.rule_start[r + 1] if r + 1 < self.n_rules else self.n_pos

    cdef object _key(self, int32_t r):
        cdef int32_t order[SIG_MAX_RULES]
        cdef int32_t n = 1, i = 0, j, k, c, q, lo, hi, total = 0, size = 0, w = 0
        cdef bint seen
        cdef int32_t* buf
        order[0] = r
        # the rule and its callees, in discovery order (the renaming of rule ids)
        while i < n:
            lo = self.rule_start[order[i]]
            hi = self._end(order[i])
            for k in range(self.call_off[lo], self.call_off[hi]):
                c = self.call_rule[k]
                seen = False
                for j in range(n):
                    if order[j] == c:
                        seen = True
                        break
                if not seen:
                    if n == SIG_MAX_RULES:
                        return None
                    order[n] = c
                    n += 1
            i += 1
        for i in range(n):
            lo = self.rule_start[order[i]]
            hi = self._end(order[i])
            total += hi - lo
            size += 4 * (hi - lo) + 2 * (self.edge_off[hi] - self.edge_off[lo]) \
                + 2 * (self.call_off[hi] - self.call_off[lo]) + 2
        if total > SIG_MAX_POSITIONS:
            return None
        buf = <int32_t*> malloc(max(size, 1) * sizeof(int32_t))
        if buf == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                lo = self.rule_start[order[i]]
                hi = self._end(order[i])
                for q in range(lo, hi):
                    buf[w] = q - lo
                    buf[w + 1] = self.pos_flags[q]
                    buf[w + 2] = self.edge_off[q + 1] - self.edge_off[q]
                    buf[w + 3] = self.call_off[q + 1] - self.call_off[q]
                    w += 4
                    for k in range(self.edge_off[q], self.edge_off[q + 1]):
                        buf[w] = self.edge_lo[k] | (self.edge_hi[k] << 8) | (self.edge_ws[k] << 16)
                        buf[w + 1] = self.edge_to[k] - lo
                        w += 2
                    for k in range(self.call_off[q], self.call_off[q + 1]):
                        c = self.call_rule[k]
                        for j in range(n):
                            if order[j] == c:
                                buf[w] = j
                                break
                        buf[w + 1] = self.call_to[k] - lo
                        w += 2
                # rule boundary: positions restart at 0, so mark it
                buf[w] = -1
                buf[w + 1] = -1
                w += 2
            return self.header + (<char*> buf)[:w * sizeof(int32_t)]
        finally:
            free(buf)

    def rule_digest(self, int32_t r):
        d = self.by_rule.get(r, False)
        if d is False:
            d = self.by_rule[r] = self._key(r)
        return d

    def _spells(self, int32_t r, bytes data):
        """Whether rule r, alone, matches exactly `data` (its byte edges followed from its
        start; None when the rule calls others or is not deterministic there)."""
        cdef int32_t v = self.rule_start[r], k, to
        for b in data:
            if self.call_off[v + 1] > self.call_off[v]:
                return None
            to = -1
            for k in range(self.edge_off[v], self.edge_off[v + 1]):
                if self.edge_lo[k] <= b <= self.edge_hi[k]:
                    if to >= 0:
                        return None
                    to = self.edge_to[k]
            if to < 0:
                return False
            v = to
        return bool(self.pos_flags[v] & 1)

    def character_class(self, int32_t r):
        """When rule r is exactly one JSON string character of a class (json_grammar.char_in
        with its frame kept) whose non-ASCII part is all or nothing (U+2028 and U+2029 aside):
        (ASCII code points as lo and hi 64-bit words, whether the non-ASCII ones are in).
        Else None. The class is guessed from what the rule spells and then proved: the rule's
        serialisation must equal that of char_in(the guessed class)."""
        got = self.by_class.get(r, False)
        if got is not False:
            return got
        from cengine import ir
        got = None
        d = self.rule_digest(r)
        if d is not None:
            ascii_in = [cp for cp in range(128) if self._spells(r, _json_spelling(cp))]
            probes = [self._spells(r, _json_spelling(cp))
                      for cp in (0x80, 0x7FF, 0x800, 0x2027, 0x202A, 0xFFFF, 0x10000, 0x10FFFF)]
            if all(x is not None for x in probes) and (all(probes) or not any(probes)):
                ranges = [(cp, cp) for cp in ascii_in]
                if probes[0]:
                    # every non-ASCII code point, less U+2028 / U+2029 where the rule refuses
                    # them (a regex `.`)
                    for lo, hi in ((0x80, 0x2027), (0x2028, 0x2028), (0x2029, 0x2029),
                                   (0x202A, 0x10FFFF)):
                        if lo != hi or self._spells(r, _json_spelling(lo)):
                            ranges.append((lo, hi))
                if character_body(ir.normalize_ranges(ranges)) == d[len(self.header):]:
                    # (no plain token holds a C0 control, a quote, a backslash, U+2028 or
                    # U+2029: the ASCII bits and the non-ASCII flag decide them all)
                    bits = 0
                    for cp in ascii_in:
                        bits |= 1 << cp
                    got = (bits & 0xFFFFFFFFFFFFFFFF, bits >> 64, bool(probes[0]))
        self.by_class[r] = got
        return got

    def character_run(self, tuple below, int32_t q, int32_t rule, int32_t cap):
        """How many more calls of `rule` a frame at q (on the frames `below`, bottom first: a
        length counter's levels, or none) can make before its string closes, when every
        position on the way calls nothing else but rules it follows into (a counter's
        levels), takes no byte but the quote, and ends its rule only where the frame below
        returns; cap when it reaches cap (a loop is unbounded); -1 when some position breaks
        that, the run would pop the bottom frame (beyond the table), or it nests past 16
        frames. Then a run of n characters is taken from q exactly when n <= the answer,
        whatever follows the quote."""
        cdef int32_t depth = 0, v, k, n
        cdef set frontier = {below + (q,)}, nxt, visited
        cdef list todo
        cdef tuple cfg
        while True:
            nxt = set()
            visited = set()
            todo = list(frontier)
            while todo:
                cfg = todo.pop()
                if cfg in visited:
                    continue
                visited.add(cfg)
                n = len(cfg)
                v = cfg[n - 1]
                if self.pos_flags[v] & 1:           # FLAG_FINAL: on where the frame below returns
                    if n == 1:
                        return -1
                    todo.append(cfg[:n - 1])
                for k in range(self.edge_off[v], self.edge_off[v + 1]):
                    if self.edge_lo[k] != 0x22 or self.edge_hi[k] != 0x22:
                        return -1
                for k in range(self.call_off[v], self.call_off[v + 1]):
                    if self.call_rule[k] == rule:
                        nxt.add(cfg[:n - 1] + (self.call_to[k],))
                    elif n >= 16:
                        return -1
                    else:
                        todo.append(cfg[:n - 1] + (self.call_to[k],
                                                   self.rule_start[self.call_rule[k]]))
            if not nxt:
                return depth
            depth += 1
            if depth >= cap:
                return cap
            frontier = nxt

    def get(self, int32_t p):
        cdef int32_t r = self.pos_rule[p]
        d = self.rule_digest(r)
        return None if d is None else (d, p - self.rule_start[r])

    def horizon_key(self, int32_t q, int32_t horizon):
        """The structure a local walk from position q can see within `horizon` bytes (no
        token is longer), as an exact key (a tuple of bytes).

        Positions of q's rule are searched in order of the fewest bytes that reach them (a
        call costs the callee's shortest match); each one found within the horizon is
        written with its flags, byte edges and calls, targets renumbered in the order found
        and -1 past the horizon, callees by their rule keys (by identity within the grammar
        when too big to key). Two positions with equal keys have equal tables: in a string
        of maxLength 2000 every position more than a token's length from the end shares one."""
        cdef int32_t r = self.pos_rule[q]
        cdef int32_t lo = self.rule_start[r], hi = self._end(r), n = hi - lo
        cdef int32_t v, w, k, i, j, best, found = 0, size = 0, c, n_front
        cdef int64_t dv, dw
        cdef int64_t* dist
        cdef int32_t* order
        cdef int32_t* index
        cdef int32_t* buf
        cdef char* done
        dist = <int64_t*> malloc(n * sizeof(int64_t))
        order = <int32_t*> malloc(n * sizeof(int32_t))
        index = <int32_t*> malloc(n * sizeof(int32_t))
        done = <char*> calloc(n, 1)
        buf = NULL
        if dist == NULL or order == NULL or index == NULL or done == NULL:
            free(dist); free(order); free(index); free(done)
            raise MemoryError()
        try:
            for i in range(n):
                dist[i] = -1
                index[i] = -1
            dist[q - lo] = 0
            # Dijkstra over the rule's positions; the frontier (positions reached, not yet
            # done) lives in `order` past `found`: few are within the horizon
            order[0] = q - lo
            n_front = 1
            while n_front > found:
                best = -1
                for i in range(found, n_front):
                    if best < 0 or dist[order[i]] < dist[order[best]]:
                        best = i
                v = order[best]
                if dist[v] > horizon:
                    break
                order[best] = order[found]
                best = v
                done[best] = 1
                index[best] = found
                order[found] = best
                found += 1
                v = best + lo
                dv = dist[best]
                for k in range(self.edge_off[v], self.edge_off[v + 1]):
                    w = self.edge_to[k] - lo
                    if dist[w] < 0:
                        order[n_front] = w
                        n_front += 1
                        dist[w] = dv + 1
                    elif dv + 1 < dist[w]:
                        dist[w] = dv + 1
                for k in range(self.call_off[v], self.call_off[v + 1]):
                    w = self.call_to[k] - lo
                    dw = dv + self.short_len[self.rule_start[self.call_rule[k]]]
                    if dw < 0:
                        continue
                    if dist[w] < 0:
                        order[n_front] = w
                        n_front += 1
                        dist[w] = dw
                    elif dw < dist[w]:
                        dist[w] = dw
                size += 4 + 2 * (self.edge_off[v + 1] - self.edge_off[v]) \
                    + 2 * (self.call_off[v + 1] - self.call_off[v])
            buf = <int32_t*> malloc(max(size, 1) * sizeof(int32_t))
            if buf == NULL:
                raise MemoryError()
            callees = []
            j = 0
            for i in range(found):
                v = order[i] + lo
                buf[j] = self.pos_flags[v]
                buf[j + 1] = self.edge_off[v + 1] - self.edge_off[v]
                buf[j + 2] = self.call_off[v + 1] - self.call_off[v]
                buf[j + 3] = 1 if v == q else 0
                j += 4
                for k in range(self.edge_off[v], self.edge_off[v + 1]):
                    buf[j] = self.edge_lo[k] | (self.edge_hi[k] << 8) | (self.edge_ws[k] << 16)
                    buf[j + 1] = index[self.edge_to[k] - lo]
                    j += 2
                for k in range(self.call_off[v], self.call_off[v + 1]):
                    c = self.call_rule[k]
                    d = self.rule_digest(c)
                    if d is None:
                        # too big to key by structure: by identity, within this grammar
                        d = (self.token, c)
                    buf[j] = len(callees)
                    callees.append(d)
                    buf[j + 1] = index[self.call_to[k] - lo]
                    j += 2
            return (self.header, (<char*> buf)[:j * sizeof(int32_t)]) + tuple(callees)
        finally:
            free(dist); free(order); free(index); free(done); free(buf)

    def positions(self):
        out = []
        for r in range(self.n_rules):
            if self.rule_digest(r) is not None:
                out.extend(range(self.rule_start[r], self._end(r)))
        return out
