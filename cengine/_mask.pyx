# cython: language_level=3
# Design: the vocabulary is a flat token trie in depth-first order (byte, subtree end,
# tokens ending here), so refusing a byte skips a whole subtree with one index jump.
# Walking the trie from the root for every mask would cost ~a millisecond, so per automaton
# position p (the top frame of a stack) we precompute, lazily and once, what does not depend
# on the frames below it (xgrammar's adaptive cache, made exact):
#   * accepted tokens: every token whose bytes are consumed while p's frame is still on the
#     stack; kept as a bitset or an id list, whichever is smaller. Tokens whose acceptance
#     needs whitespace budget or container depth go in a short conditional list.
#   * exits: trie nodes where p's frame is popped (its rule ended inside the token). Their
#     remaining suffixes are merged into one small "suffix trie" per (whitespace, depth)
#     class; at run time only that suffix trie is walked, with the real stack below p.
# Inside a JSON string nearly every token is accepted context-independently and the few
# that close the string continue in a suffix trie of a few hundred nodes, so a mask costs an
# OR of a 16 KB bitset plus a short walk. Tables of small self-contained rules (string
# bodies, numbers) are keyed by the rule's structure and shared across grammars.
# What keeps cold walks (a position's first visit) cheap:
#   * slices (llguidance's idea, made exact by a search over the automaton): plain-string
#     tokens of at most K bytes are ORed in when the position provably takes any such run;
#   * whitespace runs: between JSON tokens whitespace loops back to the same state, so the
#     tokens that start with whitespace are walked as (run length, rest), each rest once per
#     run length, instead of every spelling of every run (ws_split);
#   * a byte filter per trie frame (the bytes the state's positions have edges for) and a
#     byte -> child table on nodes with many children, so refused children cost nothing;
#   * pair tables: a short rule called once per count of a long run (a character of a
#     maxLength 2000 string) is tabled together with the run's position, and positions
#     farther than the longest token from the run's end share one table (horizon_key).
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
cimport numpy as cnp
import itertools
import threading
import numpy as np
cimport cython

from cengine._matcher cimport (Prog, Entry, EntryVec, Store, Program, Matcher, vec_reserve,
                               vec_free, store_init, store_free, store_intern, step, expand, dedup,
                               NODE_ACCEPT, NODE_EXIT, FLAG_CONTAINER)
from cengine._matcher import program_of

cnp.import_array()

cdef struct TrieC:
    const uint8_t* byte
    const int32_t* end
    const int32_t* tok_off
    const int32_t* tok_ids
    const int32_t* big          # per node: row of its child table, or -1 (few children)
    const int32_t* child_tab    # rows of 256: the child reached by each byte, or -1
    int32_t n_nodes
    int32_t max_len

cdef struct Frame:
    int32_t child           # next child node, or with a child table the next byte to try
    int32_t end
    int32_t st_start
    int32_t st_n
    const int32_t* tab      # the node's child table when the filter uses it, else NULL
    uint64_t allow[4]       # bytes some entry of the frame has an edge for (a superset filter)

cdef enum:
    FILTER_MIN_SUBTREE = 48     # a frame whose subtree is smaller is not worth a byte filter
    TABLE_MIN_CHILDREN = 16     # nodes with this many children get a byte -> child table

cdef struct I32Vec:
    int32_t* data
    int32_t n
    int32_t cap

cdef int i32_push(I32Vec* v, int32_t x) noexcept nogil:
    cdef int32_t cap
    cdef int32_t* d
    if v.n >= v.cap:
        cap = v.cap * 2 if v.cap else 64
        d = <int32_t*> realloc(v.data, cap * sizeof(int32_t))
        if d == NULL:
            return -1
        v.data = d
        v.cap = cap
    v.data[v.n] = x
    v.n += 1
    return 0


cdef int _u8_next(int u, int b) noexcept nogil:
    """Next state of the UTF-8 automaton of plain JSON string characters (no quote, backslash
    or C0 control), or -1. States: 0 between characters, 1-3 continuation bytes still needed,
    4-7 the restricted second byte after E0, ED, F0, F4."""
    if u == 0:
        if b < 0x20 or b == 0x22 or b == 0x5C:
            return -1
        if b < 0x80:
            return 0
        if 0xC2 <= b <= 0xDF:
            return 1
        if b == 0xE0:
            return 4
        if 0xE1 <= b <= 0xEC or 0xEE <= b <= 0xEF:
            return 2
        if b == 0xED:
            return 5
        if b == 0xF0:
            return 6
        if 0xF1 <= b <= 0xF3:
            return 3
        if b == 0xF4:
            return 7
        return -1
    if u <= 3:
        return u - 1 if 0x80 <= b <= 0xBF else -1
    if u == 4:
        return 1 if 0xA0 <= b <= 0xBF else -1
    if u == 5:
        return 1 if 0x80 <= b <= 0x9F else -1
    if u == 6:
        return 2 if 0x90 <= b <= 0xBF else -1
    return 2 if 0x80 <= b <= 0x8F else -1


WS_BYTES = frozenset(b" \t\n\r")

# every byte where _u8_next's answer may change, for any state
_U8_CUTS = (0, 0x20, 0x22, 0x23, 0x5C, 0x5D, 0x80, 0x90, 0xA0, 0xC0, 0xC2, 0xE0, 0xE1, 0xED,
            0xEE, 0xF0, 0xF1, 0xF4, 0xF5)


cdef inline void set_tokens(const TrieC* t, int32_t x, uint32_t* bits, I32Vec* ids) noexcept nogil:
    cdef int32_t k, tok
    for k in range(t.tok_off[x], t.tok_off[x + 1]):
        tok = t.tok_ids[k]
        if ids != NULL:
            i32_push(ids, tok)
        else:
            bits[tok >> 5] |= (<uint32_t> 1) << (tok & 31)


cdef inline void allow_range(uint64_t* a, int32_t lo, int32_t hi) noexcept nogil:
    cdef int32_t w, a0, a1
    for w in range(lo >> 6, (hi >> 6) + 1):
        a0 = lo - 64 * w if lo > 64 * w else 0
        a1 = hi - 64 * w if hi < 64 * w + 63 else 63
        a[w] |= (~(<uint64_t> 0) >> (63 - a1 + a0)) << a0


cdef struct FirstBytes:
    # per automaton position, filled on first use: the bytes its edges accept
    uint64_t* bits          # 4 words per position
    uint8_t* done


cdef extern from *:
    void thread_fence "__atomic_thread_fence"(int) nogil
    int ATOMIC_ACQUIRE "__ATOMIC_ACQUIRE"
    int ATOMIC_RELEASE "__ATOMIC_RELEASE"


cdef inline const uint64_t* first_bytes(const Prog* p, FirstBytes* fb, int32_t q) noexcept nogil:
    cdef uint64_t* a = fb.bits + 4 * <int64_t> q
    cdef uint64_t w[4]
    cdef int32_t k
    if fb.done[q]:
        thread_fence(ATOMIC_ACQUIRE)     # the words were written before the flag
        return a
    # threads masking with the same grammar may fill the same entry: each writes the same
    # words, and publishes them before the flag
    w[0] = w[1] = w[2] = w[3] = 0
    for k in range(p.edge_off[q], p.edge_off[q + 1]):
        allow_range(w, p.edge_lo[k], p.edge_hi[k])
    a[0] = w[0]
    a[1] = w[1]
    a[2] = w[2]
    a[3] = w[3]
    thread_fence(ATOMIC_RELEASE)
    fb.done[q] = 1
    return a


cdef inline void frame_filter(const Prog* p, const Store* s, const TrieC* t, FirstBytes* fb,
                              Frame* f, const Entry* st, int32_t x) noexcept nogil:
    """Bytes any entry of the frame can step on: children outside are skipped without a
    step. A node with many children is then visited through its child table, one allowed
    byte at a time, instead of child by child (whitespace runs have hundreds of children)."""
    cdef int32_t i
    f.tab = NULL
    if t.end[x] - x < FILTER_MIN_SUBTREE:
        f.allow[0] = f.allow[1] = f.allow[2] = f.allow[3] = ~(<uint64_t> 0)
        return
    cdef const uint64_t* a
    f.allow[0] = f.allow[1] = f.allow[2] = f.allow[3] = 0
    for i in range(f.st_n):
        if st[i].node < 0:
            continue
        a = first_bytes(p, fb, s.pos[st[i].node])
        f.allow[0] |= a[0]
        f.allow[1] |= a[1]
        f.allow[2] |= a[2]
        f.allow[3] |= a[3]
    if t.big[x] >= 0:
        f.tab = t.child_tab + 256 * <int64_t> t.big[x]
        f.child = 0


cdef extern from *:
    int ctz64 "__builtin_ctzll"(unsigned long long) nogil


cdef inline int32_t next_allowed(const uint64_t* a, int32_t b) noexcept nogil:
    """The smallest byte >= b in the set a, or 256."""
    cdef int32_t w = b >> 6
    cdef uint64_t m
    if w >= 4:
        return 256
    m = a[w] & (~(<uint64_t> 0) << (b & 63))
    while m == 0:
        w += 1
        if w == 4:
            return 256
        m = a[w]
    return 64 * w + ctz64(m)


cdef struct WalkBufs:
    Frame* frames
    int32_t n_frames
    EntryVec buf
    EntryVec tmp


cdef int bufs_init(WalkBufs* wb, int32_t max_len) noexcept nogil:
    wb.buf.data = NULL
    wb.buf.n = wb.buf.cap = 0
    wb.tmp.data = NULL
    wb.tmp.n = wb.tmp.cap = 0
    wb.n_frames = max_len + 2
    wb.frames = <Frame*> malloc(wb.n_frames * sizeof(Frame))
    return -1 if wb.frames == NULL else 0


cdef void bufs_free(WalkBufs* wb) noexcept nogil:
    free(wb.frames)
    vec_free(&wb.buf)
    vec_free(&wb.tmp)


cdef bint record(const TrieC* t, int32_t x, const Entry* st, int32_t got, uint32_t* bits,
                 bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits,
                 I32Vec* acc) noexcept nogil:
    """The tokens ending at trie node x, whose bytes led to the entries st[0:got] (got > 0):
    real mode sets their bits; local mode classifies them and records exits. Returns whether
    some entry can still consume bytes."""
    cdef int32_t i, j, k, tok
    cdef bint live = False, uncond, dominated
    for i in range(got):
        if st[i].node >= 0:
            live = True
            break
    if not local:
        set_tokens(t, x, bits, NULL)
        return live
    uncond = False
    for i in range(got):
        if st[i].ws == 0 and st[i].pmax <= base_pm:
            uncond = True
            break
    if uncond:
        set_tokens(t, x, bits, acc)
    else:
        # Pareto-minimal (ws, pmax) outcomes for the tokens ending here
        for i in range(got):
            dominated = False
            for j in range(got):
                if j != i and st[j].ws <= st[i].ws and st[j].pmax <= st[i].pmax and \
                        (st[j].ws < st[i].ws or st[j].pmax < st[i].pmax or j < i):
                    dominated = True
                    break
            if dominated:
                continue
            for k in range(t.tok_off[x], t.tok_off[x + 1]):
                tok = t.tok_ids[k]
                i32_push(cond, tok)
                i32_push(cond, st[i].ws)
                i32_push(cond, st[i].pmax)
    for i in range(got):
        if st[i].node == NODE_EXIT and exits != NULL:
            i32_push(exits, x)
            i32_push(exits, st[i].ws)
            i32_push(exits, st[i].pmax)
    return live


cdef bint same_entries(const EntryVec* a, const EntryVec* b, int32_t dws) noexcept nogil:
    """b holds exactly a's entries with dws more whitespace (both deduplicated)."""
    cdef int32_t i, j
    cdef bint found
    if a.n != b.n:
        return False
    for i in range(b.n):
        found = False
        for j in range(a.n):
            if a.data[j].node == b.data[i].node and a.data[j].pmax == b.data[i].pmax \
                    and a.data[j].ws + dws == b.data[i].ws:
                found = True
                break
        if not found:
            return False
    return True


cdef int32_t ws_invariant(const Prog* p, Store* s, const Entry* init, int32_t n_init,
                          int32_t max_depth, bint local, EntryVec* s1, EntryVec* tmp) noexcept nogil:
    """Whether whitespace leaves the state where it is: every whitespace byte takes `init` to
    the same entries s1, and every whitespace byte takes s1 back to s1 with the same extra
    cost c. Returns c (0 or 1), or -1 when not (or when a local walk's frame may pop inside
    the run: exits there would need the rest of the run)."""
    cdef int32_t i, c = -1
    cdef uint8_t wsb[4]
    wsb[0] = 0x20
    wsb[1] = 0x09
    wsb[2] = 0x0A
    wsb[3] = 0x0D
    s1.n = 0
    if step(p, s, init, n_init, 0x20, max_depth, s1) == 0 or s.failed:
        return -1
    if local:
        for i in range(s1.n):
            if s1.data[i].node == NODE_EXIT:
                return -1
    for i in range(1, 4):
        tmp.n = 0
        step(p, s, init, n_init, wsb[i], max_depth, tmp)
        if s.failed or not same_entries(s1, tmp, 0):
            return -1
    for i in range(4):
        tmp.n = 0
        step(p, s, s1.data, s1.n, wsb[i], max_depth, tmp)
        if s.failed:
            return -1
        if c < 0:
            if same_entries(s1, tmp, 1):
                c = 1
            elif same_entries(s1, tmp, 0):
                c = 0
            else:
                return -1
        elif not same_entries(s1, tmp, c):
            return -1
    return c


cdef int walk_ws(WalkBufs* wb, const Prog* p, Store* s, const TrieC* nows, const TrieC* runs,
                 FirstBytes* fb, const Entry* init, int32_t n_init, int32_t max_depth,
                 uint32_t* bits, bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits,
                 I32Vec* acc) noexcept nogil:
    """walk_in over the whole vocabulary when whitespace is a loop in this state (between
    JSON tokens): the tokens without leading whitespace in `nows`, then for each leading
    run length d the rests of the tokens in `runs`, from the state after the run.
    Returns 1, having done nothing, when the state is not whitespace-invariant."""
    cdef EntryVec s1, ed
    cdef int32_t c, x, d, i, k, n_ex, rc = 0
    cdef bint live
    s1.data = NULL
    s1.n = s1.cap = 0
    ed.data = NULL
    ed.n = ed.cap = 0
    c = ws_invariant(p, s, init, n_init, max_depth, local, &s1, &wb.tmp)
    if c < 0:
        vec_free(&s1)
        if s.failed:
            return -1
        return 1
    rc = walk_in(wb, p, s, nows, fb, 0, init, n_init, max_depth, bits, local, base_pm, cond,
                 exits, acc)
    x = 1
    while rc == 0 and x < runs.end[0]:
        d = runs.byte[x]
        ed.n = 0
        if vec_reserve(&ed, s1.n) != 0:
            rc = -1
            break
        for i in range(s1.n):
            if p.ws_budget >= 0 and s1.data[i].ws + (d - 1) * c > p.ws_budget:
                continue
            ed.data[ed.n] = s1.data[i]
            ed.data[ed.n].ws += (d - 1) * c
            ed.n += 1
        if ed.n == 0:
            break                 # runs come in increasing length: longer ones cost more
        live = record(runs, x, ed.data, ed.n, bits, local, base_pm, cond, exits, acc)
        if live and runs.end[x] > x + 1:
            n_ex = exits.n if exits != NULL else 0
            rc = walk_in(wb, p, s, runs, fb, x, ed.data, ed.n, max_depth, bits, local, base_pm,
                         cond, exits, acc)
            if exits != NULL:
                # exits inside the run trie: node ids after the other trie's
                for k in range(n_ex, exits.n, 3):
                    exits.data[k] += nows.n_nodes
        x = runs.end[x]
    vec_free(&s1)
    vec_free(&ed)
    return rc


cdef int walk(const Prog* p, Store* s, const TrieC* t, FirstBytes* fb, int32_t start, const Entry* init,
              int32_t n_init, int32_t max_depth, uint32_t* bits,
              bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits,
              I32Vec* acc) noexcept nogil:
    cdef WalkBufs wb
    cdef int rc
    if bufs_init(&wb, t.max_len) != 0:
        return -1
    rc = walk_in(&wb, p, s, t, fb, start, init, n_init, max_depth, bits, local, base_pm, cond,
                 exits, acc)
    bufs_free(&wb)
    return rc


cdef int walk_in(WalkBufs* wb, const Prog* p, Store* s, const TrieC* t, FirstBytes* fb,
                 int32_t start, const Entry* init, int32_t n_init, int32_t max_depth,
                 uint32_t* bits, bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits,
                 I32Vec* acc) noexcept nogil:
    """Depth-first walk of the trie below node `start` (the tokens at `start` itself are
    not looked at), the automaton state following.

    Real mode (local=False): set the bits of every token whose bytes are legal.
    Local mode: classify tokens (unconditional -> bits, or the id list `acc` when given;
    conditional -> cond triples) and record exits (node, ws, pmax) where the walk's base
    frame was popped.
    """
    cdef Frame* frames = wb.frames
    cdef int32_t top, x, mark, got, b
    cdef bint live
    cdef Entry* st
    if t.max_len + 2 > wb.n_frames:
        return -1
    wb.buf.n = 0
    if vec_reserve(&wb.buf, n_init + 64) != 0:
        return -1
    memcpy(wb.buf.data, init, n_init * sizeof(Entry))
    wb.buf.n = n_init
    top = 0
    frames[0].child = start + 1
    frames[0].end = t.end[start]
    frames[0].st_start = 0
    frames[0].st_n = n_init
    frame_filter(p, s, t, fb, &frames[0], wb.buf.data, start)
    while top >= 0:
        if frames[top].tab != NULL:
            b = next_allowed(frames[top].allow, frames[top].child)
            if b == 256:
                wb.buf.n = frames[top].st_start
                top -= 1
                continue
            frames[top].child = b + 1
            x = frames[top].tab[b]
            if x < 0:
                continue
        else:
            if frames[top].child >= frames[top].end:
                wb.buf.n = frames[top].st_start
                top -= 1
                continue
            x = frames[top].child
            frames[top].child = t.end[x]
            if not (frames[top].allow[t.byte[x] >> 6] >> (t.byte[x] & 63)) & 1:
                continue
        wb.tmp.n = 0
        got = step(p, s, wb.buf.data + frames[top].st_start, frames[top].st_n, t.byte[x],
                   max_depth, &wb.tmp)
        if s.failed:
            break
        if got == 0:
            continue
        st = wb.tmp.data
        live = record(t, x, st, got, bits, local, base_pm, cond, exits, acc)
        if live and t.end[x] > x + 1:
            mark = wb.buf.n
            if vec_reserve(&wb.buf, wb.buf.n + got) != 0:
                s.failed = 1
                break
            memcpy(wb.buf.data + mark, wb.tmp.data, got * sizeof(Entry))
            wb.buf.n += got
            top += 1
            frames[top].child = x + 1
            frames[top].end = t.end[x]
            frames[top].st_start = mark
            frames[top].st_n = got
            frame_filter(p, s, t, fb, &frames[top], wb.buf.data + mark, x)
    return -1 if s.failed else 0


# ---------------------------------------------------------------------------------------
# the token trie of a vocabulary

@cython.wraparound(True)
@cython.boundscheck(True)
def _build_trie_arrays(items):
    """items: sorted list of (bytes, [token ids]) with unique non-empty byte strings."""
    node_byte = [0]
    node_depth = [0]
    node_parent = [-1]
    node_tokens = [[]]
    path = [0]            # trie node of each prefix length of the previous token
    prev = b""
    for data, ids in items:
        lcp = 0
        m = min(len(prev), len(data))
        while lcp < m and prev[lcp] == data[lcp]:
            lcp += 1
        del path[lcp + 1:]
        for d in range(lcp, len(data)):
            node_byte.append(data[d])
            node_depth.append(d + 1)
            node_parent.append(path[d])
            node_tokens.append([])
            path.append(len(node_byte) - 1)
        node_tokens[path[len(data)]].extend(ids)
        prev = data
    n = len(node_byte)
    depth = np.asarray(node_depth, np.int32)
    end = np.empty(n, np.int32)
    # subtree end: the next node whose depth is <= this node's depth
    stack = []
    for i in range(n):
        d = node_depth[i]
        while stack and node_depth[stack[-1]] >= d:
            end[stack.pop()] = i
        stack.append(i)
    for i in stack:
        end[i] = n
    tok_off = np.zeros(n + 1, np.int32)
    tok_off[1:] = np.cumsum([len(ts) for ts in node_tokens])
    tok_ids = np.asarray([tk for ts in node_tokens for tk in ts] or [0], np.int32)
    byte = np.asarray(node_byte, np.uint8)
    big, child_tab = _child_tables(byte, np.asarray(node_parent, np.int64))
    return (byte, end, tok_off, tok_ids, depth, int(depth.max()) if n else 0, big, child_tab)


def _child_tables(byte, parent):
    """byte -> child tables of the nodes with many children (parent[0] = -1, the root)."""
    n = byte.shape[0]
    n_children = np.bincount(parent[1:], minlength=n)
    big_nodes = np.flatnonzero(n_children >= TABLE_MIN_CHILDREN)
    big = np.full(n, -1, np.int32)
    big[big_nodes] = np.arange(big_nodes.shape[0], dtype=np.int32)
    child_tab = np.full(max(1, big_nodes.shape[0]) * 256, -1, np.int32)
    kids = np.flatnonzero(big[parent[1:]] >= 0) + 1
    child_tab[big[parent[kids]].astype(np.int64) * 256 + byte[kids]] = kids
    return big, child_tab


cdef class TokenTrie:
    """Flat DFS token trie of one vocabulary (shared by every grammar)."""
    cdef TrieC c
    cdef readonly object node_byte, node_end, tok_off, tok_ids, node_depth, node_big, child_tab
    cdef readonly int32_t n_words, vocab_size
    cdef readonly object eos_ids

    cdef readonly object tokens
    cdef object _slices
    cdef object _plain_len
    cdef object _slice_sizes
    cdef object _suffix_memo
    cdef object _ws_split

    def __init__(self, tokens, eos_ids, keep=None, items=None):
        """The trie of the tokens (those with keep[i], when given), or of ready `items`
        (sorted (bytes, [ids]) pairs; the whitespace-run trie uses that)."""
        self.tokens = tokens
        self._slices = {}
        self._plain_len = None
        self._slice_sizes = None
        self._suffix_memo = {}
        self._ws_split = False
        if items is None:
            groups = {}
            for i, data in enumerate(tokens):
                if data and (keep is None or keep[i]):
                    groups.setdefault(bytes(data), []).append(i)
            items = sorted(groups.items())
        (self.node_byte, self.node_end, self.tok_off, self.tok_ids, self.node_depth,
         max_len, self.node_big, self.child_tab) = _build_trie_arrays(items)
        self.c.byte = <const uint8_t*> cnp.PyArray_DATA(self.node_byte)
        self.c.end = <const int32_t*> cnp.PyArray_DATA(self.node_end)
        self.c.tok_off = <const int32_t*> cnp.PyArray_DATA(self.tok_off)
        self.c.tok_ids = <const int32_t*> cnp.PyArray_DATA(self.tok_ids)
        self.c.big = <const int32_t*> cnp.PyArray_DATA(self.node_big)
        self.c.child_tab = <const int32_t*> cnp.PyArray_DATA(self.child_tab)
        self.c.n_nodes = self.node_byte.shape[0]
        self.c.max_len = max_len
        self.vocab_size = len(tokens)
        self.n_words = (len(tokens) + 31) // 32
        self.eos_ids = np.asarray(sorted(eos_ids), np.int32)

    @property
    def n_nodes(self):
        return self.c.n_nodes

    def suffix_trie(self, tuple exit_nodes, TokenTrie runs=None):
        """_suffix_trie, memoised: the same exit sets recur across positions and grammars
        (every object-closing position exits at the same `}` nodes). Node ids from
        n_nodes on are nodes of `runs` (the whitespace-run trie of ws_split())."""
        arrs = self._suffix_memo.get(exit_nodes, False)
        if arrs is False:
            n = self.c.n_nodes
            sources = [(self, [x for x in exit_nodes if x < n])]
            if runs is not None:
                sources.append((runs, [x - n for x in exit_nodes if x >= n]))
            arrs = _suffix_trie(sources)
            if len(self._suffix_memo) > 65536:
                self._suffix_memo.clear()
            self._suffix_memo[exit_nodes] = arrs
        return arrs

    def plain_lengths(self):
        """Per token: its byte length if it is only plain string characters (valid UTF-8, no
        quote, backslash or control character), else -1."""
        if self._plain_len is None:
            out = np.full(len(self.tokens), -1, np.int32)
            for i, data in enumerate(self.tokens):
                if not data:
                    continue
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if '"' in text or "\\" in text or any(ord(ch) < 0x20 for ch in text):
                    continue
                out[i] = len(data)
            self._plain_len = out
        return self._plain_len

    def slice_sizes(self):
        """Byte lengths K of the slices kept: tokens of plain characters of at most K bytes.

        Capped at 32: longer plain tokens are rare (the trie of the others is ~14k nodes at
        K=32 against ~12k at K=128 for llama-bpe), while proving a position accepts longer runs
        costs a BFS level per byte wherever a counter (maxLength) is involved. The sizes
        between serve bounded strings near their end (for llama-bpe the trie of the others
        has 145k nodes at K=8, 55k at K=12, 27k at K=16, 16k at K=24)."""
        if self._slice_sizes is None:
            longest = int(self.plain_lengths().max())
            self._slice_sizes = [k for k in (8, 12, 16, 24, 32) if k <= longest] \
                or [max(longest, 1)]
        return self._slice_sizes

    def slice(self, int k):
        """(bitset of the plain tokens of at most k bytes, trie of every other token)."""
        s = self._slices.get(k)
        if s is None:
            plain = self.plain_lengths()
            inside = (plain > 0) & (plain <= k)
            if self.eos_ids.shape[0]:
                inside[self.eos_ids] = False
            bits = np.packbits(np.concatenate([inside, np.zeros(self.n_words * 32 - inside.shape[0], bool)]),
                               bitorder="little").view(np.uint32).copy()
            rest = TokenTrie(self.tokens, self.eos_ids.tolist(), keep=~inside)
            s = self._slices[k] = (bits, rest)
        return s

    def ws_split(self):
        """(trie of the tokens that do not start with JSON whitespace, whitespace-run trie),
        or None when the vocabulary has no such tokens.

        The run trie holds every token that starts with whitespace as the byte d (the length
        of its leading run of space, tab, CR, LF) followed by the rest of the token: a
        position where whitespace loops back to the same state (everywhere between JSON
        tokens) walks each rest once per run length instead of every run spelling (llama-bpe
        has 760 trie nodes of pure whitespace, and 59k tokens below them)."""
        if self._ws_split is False:
            runs = {}
            keep = np.ones(len(self.tokens), bool)
            for i, data in enumerate(self.tokens):
                if not data or data[0] not in WS_BYTES:
                    continue
                d = 1
                while d < len(data) and data[d] in WS_BYTES:
                    d += 1
                if d > 255:
                    continue         # stays in the other trie, walked byte by byte
                keep[i] = False
                runs.setdefault(bytes((d,)) + bytes(data[d:]), []).append(i)
            if not runs:
                self._ws_split = None
            else:
                self._ws_split = (TokenTrie(self.tokens, self.eos_ids.tolist(), keep=keep),
                                  TokenTrie(self.tokens, self.eos_ids.tolist(),
                                            items=sorted(runs.items())))
        return self._ws_split

    def nbytes(self):
        return sum(a.nbytes for a in (self.node_byte, self.node_end, self.tok_off, self.tok_ids,
                                      self.node_depth, self.node_big, self.child_tab))


_TRIES = {}
_TRIES_LOCK = threading.Lock()


def trie_of(vocab):
    key = vocab.fingerprint
    t = _TRIES.get(key)
    if t is None:
        with _TRIES_LOCK:
            t = _TRIES.get(key)
            if t is None:
                t = TokenTrie(vocab.tokens, vocab.eos_ids)
                _TRIES[key] = t
    return t


# ---------------------------------------------------------------------------------------
# per-position tables

NARROW_FIRST_BYTES = 16    # positions with fewer legal first bytes are walked directly ...
DIRECT_VISITS = 1          # ... this many times before their table is built

cdef class PosTable:
    cdef readonly object bits          # uint32[n_words] or None
    cdef readonly object ids           # int32 ids when the list is smaller than the bitset
    cdef readonly object cond          # int32[k, 3] (token, ws, pmax)
    cdef readonly object groups        # list of (ws, pmax, trie arrays)
    cdef const uint32_t* bits_p
    cdef const int32_t* ids_p
    cdef int32_t n_ids
    cdef const int32_t* cond_p
    cdef int32_t n_cond
    cdef int32_t n_groups
    cdef int32_t* g_ws
    cdef int32_t* g_pm
    cdef TrieC* g_trie
    cdef readonly int32_t n_accepted
    cdef readonly int32_t n_frames     # 2 for a pair table (see TokenTables.pair_table)

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


cdef struct SuffixOut:
    I32Vec byte
    I32Vec parent
    I32Vec depth
    I32Vec end
    I32Vec tok_off
    I32Vec tok_ids


cdef int _merge_children(SuffixOut* o, const TrieC* tries, const int32_t* nodes, int32_t n,
                         int32_t parent, int32_t depth) noexcept nogil:
    """Append, in depth-first order, the merged children of the (trie, node) pairs in
    nodes[0:2n]: one merged node per byte, holding the tokens of every original child with
    that byte, its own children merged the same way."""
    cdef int32_t counts[257]
    cdef int32_t i, k, c, b, src, x, total = 0, me, pos
    cdef int32_t* kids
    cdef const TrieC* t
    memset(counts, 0, sizeof(counts))
    for i in range(n):
        t = &tries[nodes[2 * i]]
        x = nodes[2 * i + 1]
        c = x + 1
        while c < t.end[x]:
            counts[t.byte[c] + 1] += 1
            total += 1
            c = t.end[c]
    if total == 0:
        return 0
    for b in range(256):
        counts[b + 1] += counts[b]
    # counting sort of the children by byte (pairs: trie, node)
    kids = <int32_t*> malloc(2 * total * sizeof(int32_t))
    if kids == NULL:
        return -1
    for i in range(n):
        src = nodes[2 * i]
        t = &tries[src]
        x = nodes[2 * i + 1]
        c = x + 1
        while c < t.end[x]:
            pos = counts[t.byte[c]]
            counts[t.byte[c]] += 1
            kids[2 * pos] = src
            kids[2 * pos + 1] = c
            c = t.end[c]
    # counts[b] is now the end of byte b's run; runs start at the previous byte's end
    i = 0
    while i < total:
        b = tries[kids[2 * i]].byte[kids[2 * i + 1]]
        k = i
        while k < total and tries[kids[2 * k]].byte[kids[2 * k + 1]] == b:
            k += 1
        me = o.byte.n
        if i32_push(&o.byte, b) or i32_push(&o.parent, parent) or \
                i32_push(&o.depth, depth + 1) or i32_push(&o.end, 0):
            free(kids)
            return -1
        for c in range(i, k):
            t = &tries[kids[2 * c]]
            x = kids[2 * c + 1]
            for pos in range(t.tok_off[x], t.tok_off[x + 1]):
                if i32_push(&o.tok_ids, t.tok_ids[pos]):
                    free(kids)
                    return -1
        if i32_push(&o.tok_off, o.tok_ids.n):
            free(kids)
            return -1
        if _merge_children(o, tries, kids + 2 * i, k - i, me, depth + 1) != 0:
            free(kids)
            return -1
        o.end.data[me] = o.byte.n
        i = k
    free(kids)
    return 0


cdef object _vec_array(I32Vec* v, dtype):
    return np.array(<int32_t[:v.n]> v.data, dtype=dtype) if v.n else np.zeros(0, dtype)


def _suffix_trie(sources):
    """Merge the subtrees below the exit nodes into one trie keyed by the remaining bytes
    (the trie arrays, or None when no token goes on past an exit).
    sources: (TokenTrie, exit nodes of that trie) pairs."""
    cdef SuffixOut o
    cdef TrieC tries[2]
    cdef int32_t* nodes
    cdef int32_t n = 0, i, rc
    cdef TokenTrie tr
    cdef I32Vec* vecs[6]
    if len(sources) > 2:
        raise ValueError("at most two tries")
    total = sum(len(x) for _, x in sources)
    nodes = <int32_t*> malloc(max(1, 2 * total) * sizeof(int32_t))
    if nodes == NULL:
        raise MemoryError()
    for i, (tr, exit_nodes) in enumerate(sources):
        tries[i] = tr.c
        for x in exit_nodes:
            nodes[2 * n] = i
            nodes[2 * n + 1] = x
            n += 1
    vecs[0], vecs[1], vecs[2] = &o.byte, &o.parent, &o.depth
    vecs[3], vecs[4], vecs[5] = &o.end, &o.tok_off, &o.tok_ids
    for i in range(6):
        vecs[i].data = NULL
        vecs[i].n = vecs[i].cap = 0
    # the root: no tokens (those ending at an exit node were decided by the walk)
    rc = i32_push(&o.byte, 0) or i32_push(&o.parent, -1) or i32_push(&o.depth, 0) or \
        i32_push(&o.end, 0) or i32_push(&o.tok_off, 0) or i32_push(&o.tok_off, 0)
    if rc == 0:
        with nogil:
            rc = _merge_children(&o, tries, nodes, n, 0, 0)
    free(nodes)
    try:
        if rc != 0:
            raise MemoryError()
        if o.byte.n == 1:
            return None
        o.end.data[0] = o.byte.n
        byte = _vec_array(&o.byte, np.uint8)
        end = _vec_array(&o.end, np.int32)
        tok_off = _vec_array(&o.tok_off, np.int32)
        tok_ids = _vec_array(&o.tok_ids, np.int32) if o.tok_ids.n else np.zeros(1, np.int32)
        depth = _vec_array(&o.depth, np.int32)
        big, child_tab = _child_tables(byte, _vec_array(&o.parent, np.int64))
        return (byte, end, tok_off, tok_ids, depth, int(depth.max()), big, child_tab)
    finally:
        for i in range(6):
            free(vecs[i].data)


cdef enum:
    SLICE_MAX_CONFIGS = 4096


cdef struct ConfigSet:
    # configurations (u, n, node0, pmax0, node1, pmax1, ...) back to back in `data`;
    # an open-addressing table of their offsets
    int32_t* data
    int64_t n
    int64_t cap
    int32_t* table
    int32_t tmask
    int32_t count


cdef inline uint64_t config_hash(const int32_t* c) noexcept nogil:
    cdef uint64_t h = 1469598103934665603u
    cdef int32_t i
    for i in range(2 + 2 * c[1]):
        h = (h ^ <uint32_t> c[i]) * 1099511628211u
    return h


cdef int32_t config_add(ConfigSet* cs, const int32_t* c) noexcept nogil:
    """Offset of a new configuration, -2 when already there, -1 on allocation failure."""
    cdef int32_t size = 2 + 2 * c[1], i, off
    cdef uint64_t h = config_hash(c) & <uint64_t> cs.tmask
    cdef int32_t* nd
    cdef bint same
    while cs.table[h] >= 0:
        off = cs.table[h]
        if cs.data[off + 1] == c[1]:
            same = True
            for i in range(size):
                if cs.data[off + i] != c[i]:
                    same = False
                    break
            if same:
                return -2
        h = (h + 1) & <uint64_t> cs.tmask
    if cs.n + size > cs.cap:
        cs.cap = 2 * (cs.n + size)
        nd = <int32_t*> realloc(cs.data, cs.cap * sizeof(int32_t))
        if nd == NULL:
            return -1
        cs.data = nd
    off = <int32_t> cs.n
    memcpy(cs.data + off, c, size * sizeof(int32_t))
    cs.n += size
    cs.table[h] = off
    cs.count += 1
    return off


# _U8_CUTS as a bitmap (bit 256 set by edge ranges ending at 0xFF, ignored)
cdef uint64_t U8_CUT_BITS[5]
for _b in _U8_CUTS:
    U8_CUT_BITS[_b >> 6] |= (<uint64_t> 1) << (_b & 63)


cdef struct BfsBufs:
    ConfigSet cs
    EntryVec src
    EntryVec tmp
    int32_t* frontier
    int32_t* nxt
    int32_t* cfg
    int32_t cfg_cap


cdef int32_t slice_bfs(const Prog* prog, Store* store, int32_t start, int32_t base_pm,
                       int32_t limit) noexcept nogil:
    """Breadth-first search over (entries, UTF-8 state) configurations from the single entry
    `start`, one byte per level; bytes between two cut points (edge range ends of the
    entries' positions, UTF-8 class boundaries) step alike, so one byte per interval is
    tried. Returns the depth reached (limit if every path survives), -1 on failure."""
    cdef BfsBufs w
    cdef int32_t result = -1, tsize = 4 * SLICE_MAX_CONFIGS
    w.src.data = NULL
    w.src.n = w.src.cap = 0
    w.tmp.data = NULL
    w.tmp.n = w.tmp.cap = 0
    w.cs.data = NULL
    w.cs.n = w.cs.cap = 0
    w.cs.count = 0
    w.cs.tmask = tsize - 1
    w.cs.table = <int32_t*> malloc(tsize * sizeof(int32_t))
    w.frontier = <int32_t*> malloc((SLICE_MAX_CONFIGS + 1) * sizeof(int32_t))
    w.nxt = <int32_t*> malloc((SLICE_MAX_CONFIGS + 1) * sizeof(int32_t))
    w.cfg_cap = 64
    w.cfg = <int32_t*> malloc(w.cfg_cap * sizeof(int32_t))
    if w.cs.table != NULL and w.frontier != NULL and w.nxt != NULL and w.cfg != NULL:
        memset(w.cs.table, 0xFF, tsize * sizeof(int32_t))
        result = _slice_bfs_run(&w, prog, store, start, base_pm, limit)
    free(w.cs.data)
    free(w.cs.table)
    free(w.frontier)
    free(w.nxt)
    free(w.cfg)
    vec_free(&w.src)
    vec_free(&w.tmp)
    return result


cdef int32_t _slice_bfs_run(BfsBufs* w, const Prog* prog, Store* store, int32_t start,
                            int32_t base_pm, int32_t limit) noexcept nogil:
    cdef int32_t* swap
    cdef int32_t n_front, n_next, depth = 0
    cdef int32_t f, off, u, nu, i, j, k, qq, b, n_kept, n_cfg
    cdef uint64_t cuts[5]
    cdef Entry e
    cdef int32_t* nc
    w.cfg[0] = 0
    w.cfg[1] = 1
    w.cfg[2] = start
    w.cfg[3] = 0
    off = config_add(&w.cs, w.cfg)
    if off < 0:
        return -1
    w.frontier[0] = off
    n_front = 1
    while n_front > 0 and depth < limit:
        n_next = 0
        for f in range(n_front):
            off = w.frontier[f]
            u = w.cs.data[off]
            n_cfg = w.cs.data[off + 1]
            w.src.n = 0
            if vec_reserve(&w.src, n_cfg) != 0:
                return -1
            for i in range(n_cfg):
                w.src.data[i].node = w.cs.data[off + 2 + 2 * i]
                w.src.data[i].ws = 0
                w.src.data[i].pmax = w.cs.data[off + 3 + 2 * i]
            w.src.n = n_cfg
            # cut points: UTF-8 class boundaries and the ends of every edge range
            for i in range(5):
                cuts[i] = U8_CUT_BITS[i]
            for i in range(w.src.n):
                qq = store.pos[w.src.data[i].node]
                for k in range(prog.edge_off[qq], prog.edge_off[qq + 1]):
                    b = prog.edge_lo[k]
                    cuts[b >> 6] |= (<uint64_t> 1) << (b & 63)
                    b = prog.edge_hi[k] + 1
                    cuts[b >> 6] |= (<uint64_t> 1) << (b & 63)
            b = next_allowed(cuts, 0)
            while b < 256:
                nu = _u8_next(u, b)
                if nu >= 0:
                    w.tmp.n = 0
                    step(prog, store, w.src.data, w.src.n, <uint8_t> b, 1 << 30, &w.tmp)
                    if store.failed:
                        return -1
                    # the surviving entries, sorted (node, pmax): the configuration's key
                    n_kept = 0
                    for k in range(w.tmp.n):
                        e = w.tmp.data[k]
                        if e.node >= 0 and e.ws == 0 and e.pmax <= base_pm:
                            j = n_kept
                            while j > 0 and (w.tmp.data[j - 1].node > e.node or
                                             (w.tmp.data[j - 1].node == e.node and
                                              w.tmp.data[j - 1].pmax > e.pmax)):
                                w.tmp.data[j] = w.tmp.data[j - 1]
                                j -= 1
                            w.tmp.data[j] = e
                            n_kept += 1
                    if n_kept == 0:
                        return depth
                    if 2 + 2 * n_kept > w.cfg_cap:
                        w.cfg_cap = 2 * (2 + 2 * n_kept)
                        nc = <int32_t*> realloc(w.cfg, w.cfg_cap * sizeof(int32_t))
                        if nc == NULL:
                            return -1
                        w.cfg = nc
                    w.cfg[0] = nu
                    w.cfg[1] = n_kept
                    for k in range(n_kept):
                        w.cfg[2 + 2 * k] = w.tmp.data[k].node
                        w.cfg[3 + 2 * k] = w.tmp.data[k].pmax
                    off = config_add(&w.cs, w.cfg)
                    if off == -1:
                        return -1
                    if off >= 0:
                        if w.cs.count > SLICE_MAX_CONFIGS:
                            return depth
                        w.nxt[n_next] = off
                        n_next += 1
                b = next_allowed(cuts, b + 1)
        swap = w.frontier
        w.frontier = w.nxt
        w.nxt = swap
        n_front = n_next
        depth += 1
    # every level survived up to the limit, or no configuration is new: nothing can die
    return limit


cdef int _walk_vocab(TokenTrie trie, const Prog* p, Store* s, FirstBytes* fb,
                     const Entry* init, int32_t n_init, int32_t max_depth, uint32_t* bits,
                     bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits, I32Vec* acc):
    """Walk the whole vocabulary from init: through its whitespace split (walk_ws) where
    whitespace loops in this state, else the whole trie. Returns 0 after the split, 1 after
    the whole trie (exits then are node ids of `trie`), -1 on failure."""
    cdef WalkBufs wb
    cdef int rc = 1
    cdef TokenTrie nows, runs
    split = trie.ws_split()
    if split is not None:
        nows, runs = split
        with nogil:
            if bufs_init(&wb, nows.c.max_len if nows.c.max_len > runs.c.max_len
                         else runs.c.max_len) != 0:
                return -1
            rc = walk_ws(&wb, p, s, &nows.c, &runs.c, fb, init, n_init, max_depth, bits,
                         local, base_pm, cond, exits, acc)
            bufs_free(&wb)
    if rc == 1:
        with nogil:
            rc = walk(p, s, &trie.c, fb, 0, init, n_init, max_depth, bits, local, base_pm,
                      cond, exits, acc)
        if rc == 0:
            rc = 1
    return rc


def _pair_starts(a):
    """Per position: whether it starts a rule that calls nothing and is called again right
    where one of its calls returns (a repeated item kept as a call, see
    _build.UNROLL_INLINE_MAX); such frames get pair tables with the frame below."""
    n_pos = a.n_positions
    out = np.zeros(n_pos, bool)
    if a.call_rule.shape[0] == 0:
        return out.tolist()
    sites = np.repeat(np.arange(n_pos), np.diff(a.call_off[:n_pos + 1]))
    callers = np.zeros(len(a.rule_start), bool)
    callers[a.pos_rule[sites]] = True
    n_rules = len(a.rule_start)
    site_rule = set((sites.astype(np.int64) * n_rules + a.call_rule).tolist())
    again = a.call_to.astype(np.int64) * n_rules + a.call_rule
    for k in np.flatnonzero(~callers[a.call_rule]).tolist():
        if int(again[k]) in site_rule:
            out[a.rule_start[a.call_rule[k]]] = True
    return out.tolist()


cdef inline int32_t _frame_depth(const Prog* p, int32_t q) noexcept nogil:
    return 1 if q >= 0 and p.flags[q] & FLAG_CONTAINER else 0


cdef int32_t _intern_base(const Prog* p, Store* s, int32_t q, int32_t top):
    """The stack a local walk starts from: a frame at top, on a frame at q when q >= 0,
    on the walk's base (NODE_EXIT)."""
    cdef int32_t d = _frame_depth(p, q)
    cdef int32_t below = NODE_EXIT
    if q >= 0:
        below = store_intern(s, q, NODE_EXIT, d)
    return store_intern(s, top, below, d + _frame_depth(p, top))


cdef class TokenTables:
    """Mask tables of one grammar over one vocabulary (built lazily per position)."""
    cdef Program program
    cdef readonly TokenTrie trie
    cdef readonly dict tables
    cdef object automaton
    cdef object lock
    cdef object shared_keys
    cdef object called_rules
    cdef object seen_once
    cdef object _narrow
    cdef object _pair_start
    cdef FirstBytes fb

    def __init__(self, automaton, vocab):
        self.automaton = automaton
        self.program = Program(automaton)
        self.trie = trie_of(vocab)
        self.tables = {}
        self.lock = threading.Lock()
        self.shared_keys = _Signatures(automaton)
        self.called_rules = frozenset(int(r) for r in automaton.call_rule)
        self.seen_once = {}
        n_pos = automaton.n_positions
        self.fb.bits = <uint64_t*> malloc(max(1, n_pos) * 4 * sizeof(uint64_t))
        self.fb.done = <uint8_t*> calloc(max(1, n_pos), 1)
        if self.fb.bits == NULL or self.fb.done == NULL:
            raise MemoryError()
        # positions whose first byte is one of few (structural: a quote, a brace, a key)
        widths = automaton.edge_hi.astype(np.int64) - automaton.edge_lo.astype(np.int64) + 1
        cum = np.concatenate([np.zeros(1, np.int64), np.cumsum(widths)])
        per_pos = cum[automaton.edge_off[1:n_pos + 1]] - cum[automaton.edge_off[0:n_pos]]
        self._narrow = (per_pos < NARROW_FIRST_BYTES).tolist()
        self._pair_start = _pair_starts(automaton)

    def __dealloc__(self):
        free(self.fb.bits)
        free(self.fb.done)

    def shared_positions(self):
        """Positions whose tables are shared across grammars (small self-contained rules)."""
        return self.shared_keys.positions()

    def table(self, int p):
        """The table of a frame at p (built on first need, shared across grammars when p's
        rule is small and self-contained)."""
        t = self.tables.get(p)
        return t if t is not None else self._table(p, -1, p)

    def pair_table(self, int q, int p):
        """The table of a frame at p sitting on a frame at q, for p the start of a short rule
        called once per count of a long counted run (a character of a long bounded string):
        alone, nearly every token would leave that rule, and its table would hand almost the
        whole vocabulary to a suffix walk at every mask. Keyed (q, p) in `tables`."""
        key = (q, p)
        t = self.tables.get(key)
        return t if t is not None else self._table(key, q, p)

    cdef PosTable _table(self, key, int32_t q, int32_t p):
        cdef PosTable t
        with self.lock:
            t = self.tables.get(key)
            if t is not None:
                return t
            skey = self.shared_keys.get(p)
            if skey is not None:
                if q < 0:
                    skey = (self.trie.node_byte.shape[0], id(self.trie), skey)
                else:
                    # positions of a long counted run farther than the longest token from
                    # its end see the same structure: one table serves them all, across
                    # grammars too
                    skey = (self.trie.node_byte.shape[0], id(self.trie), "pair",
                            self.shared_keys.horizon_key(q, self.trie.c.max_len), skey,
                            self.automaton.pos_rule[q] in self.called_rules)
                t = _shared_get(skey)
            if t is None:
                t = self._compute(q, p)
                if skey is not None:
                    _shared_put(skey, t)
            self.tables[key] = t
            return t

    cdef int32_t _slice_depth(self, int32_t q, int32_t p, int32_t base_pm,
                              int32_t limit) except -1:
        """Largest d <= limit such that from p (on a frame at q, when q >= 0) every sequence
        of plain string characters of at most d bytes keeps the base frame alive with no
        whitespace or depth cost (exact BFS over the automaton configurations, slice_bfs;
        gives up, conservatively, past SLICE_MAX_CONFIGS of them)."""
        cdef Prog prog = self.program.c
        cdef Store store
        cdef int32_t d, start
        prog.ws_budget = -1
        prog.max_depth = 1 << 30
        if store_init(&store, 256) != 0:
            raise MemoryError()
        start = _intern_base(&prog, &store, q, p)
        with nogil:
            d = slice_bfs(&prog, &store, start, base_pm, limit)
        store_free(&store)
        if d < 0:
            raise MemoryError()
        return d

    def slice_depth(self, int p):
        """How many bytes of plain string characters position p provably accepts (tests)."""
        sizes = self.trie.slice_sizes()
        base_pm = 1 if self.program.c.flags[p] & FLAG_CONTAINER else 0
        return self._slice_depth(-1, p, base_pm, sizes[len(sizes) - 1])

    cdef PosTable _compute(self, int32_t q, int32_t p):
        """The table of a frame at p (sitting on a frame at q when q >= 0: a pair table)."""
        cdef PosTable t
        cdef Prog prog = self.program.c
        cdef Store store
        cdef EntryVec init
        cdef I32Vec cond, exits
        cdef int rc
        cdef int32_t base_pm
        cdef int32_t n_words = self.trie.n_words
        cdef cnp.ndarray bits = None
        cdef uint32_t* bits_p = NULL
        cdef I32Vec acc              # accepted ids, when no slice bitset is involved
        cdef I32Vec* acc_p = &acc
        acc.data = NULL
        acc.n = acc.cap = 0
        prog.ws_budget = -1          # budgets are applied at run time from the recorded costs
        prog.max_depth = 1 << 30
        base_pm = _frame_depth(&prog, q) + _frame_depth(&prog, p)
        cond.data = NULL
        cond.n = cond.cap = 0
        exits.data = NULL
        exits.n = exits.cap = 0
        init.data = NULL
        init.n = init.cap = 0
        if store_init(&store, 256) != 0:
            raise MemoryError()
        if vec_reserve(&init, 1) != 0:
            raise MemoryError()
        # the frame at p (or the pair q, p) sits on the walk's base (NODE_EXIT): popping the
        # bottom one is an exit
        init.data[0].node = _intern_base(&prog, &store, q, p)
        init.data[0].ws = 0
        init.data[0].pmax = 0
        init.n = 1
        # a frame that is always the bottom of the stack (a root nobody calls) has no frame
        # below it to continue in: its exits are never walked, so don't record them
        cdef I32Vec* exits_p = &exits \
            if self.automaton.pos_rule[p if q < 0 else q] in self.called_rules else NULL
        # slices (llguidance's idea, made exact): when p provably accepts every run of plain
        # string characters up to K bytes, all such tokens are in without a walk, and only the
        # trie of the other tokens is walked
        cdef TokenTrie walked = self.trie
        sizes = self.trie.slice_sizes()
        # a narrow position (few first bytes) never admits the ~90 plain first bytes
        depth = 0 if self._narrow[p] else self._slice_depth(q, p, base_pm, sizes[len(sizes) - 1])
        fitting = [k for k in sizes if k <= depth]
        cdef TokenTrie runs = None
        if fitting:
            slice_bits, walked = self.trie.slice(fitting[len(fitting) - 1])
            bits = slice_bits.copy()
            bits_p = <uint32_t*> cnp.PyArray_DATA(bits)
            acc_p = NULL
            with nogil:
                rc = walk(&prog, &store, &walked.c, &self.fb, 0, init.data, 1, 1 << 30, bits_p,
                          True, base_pm, &cond, exits_p, acc_p)
        else:
            rc = _walk_vocab(self.trie, &prog, &store, &self.fb, init.data, 1, 1 << 30, bits_p,
                             True, base_pm, &cond, exits_p, acc_p)
            if rc == 0:                  # through the whitespace split: exits in both tries
                walked, runs = self.trie.ws_split()
            elif rc == 1:                # the whole trie
                rc = 0
        store_free(&store)
        vec_free(&init)
        try:
            if rc != 0:
                raise MemoryError("mask table computation failed")
            t = _make_table(walked, bits, &acc, &cond, &exits, n_words, runs)
            t.n_frames = 1 if q < 0 else 2
            return t
        finally:
            free(acc.data)
            free(cond.data)
            free(exits.data)

    def fill(self, Matcher m, out):
        cdef cnp.ndarray arr = out
        if arr.dtype != np.int32 or arr.ndim != 1 or not arr.flags["C_CONTIGUOUS"] \
                or not arr.flags["WRITEABLE"]:
            raise TypeError("fill_mask needs a writable contiguous 1-D numpy int32 array")
        if arr.shape[0] < self.trie.n_words:
            raise ValueError(f"mask needs at least {self.trie.n_words} int32 words, got {arr.shape[0]}")
        cdef int32_t n = m.cur.n
        cdef int32_t i, node
        if m.terminated:             # after EOS nothing may follow
            arr[:] = 0
            return
        tabs = []
        cdef int32_t p, q
        for i in range(n):
            node = m.cur.data[i].node
            if node < 0:
                tabs.append(None)
                continue
            p = m.store.pos[node]
            if self._pair_start[p] and m.store.parent[node] >= 0:
                q = m.store.pos[m.store.parent[node]]
                t = self.tables.get((q, p))
                tabs.append(t if t is not None else self.pair_table(q, p))
                continue
            t = self.tables.get(p)
            if t is None and self._narrow[p]:
                # a position with few first bytes: walking the trie directly costs ~10x less
                # than building its table, so the table comes only once it has been visited
                # DIRECT_VISITS times
                seen = self.seen_once.get(p, 0)
                if seen < DIRECT_VISITS:
                    self.seen_once[p] = seen + 1
                    tabs.append(False)
                    continue
            tabs.append(t if t is not None else self.table(p))
        _fill(self, m, tabs, <uint32_t*> cnp.PyArray_DATA(arr), arr.shape[0])


cdef _fill(TokenTables tt, Matcher m, list tabs, uint32_t* out, Py_ssize_t n_out_words):
    cdef const Prog* p = &m.program.c
    cdef int32_t n = m.cur.n
    cdef int32_t i, g, k, node, parent, headroom, remaining, q, base, ws
    cdef int32_t n_words = tt.trie.n_words
    cdef bint accepting = False
    cdef PosTable t
    cdef EntryVec st0
    cdef int rc = 0
    cdef int32_t tok
    st0.data = NULL
    st0.n = st0.cap = 0
    memset(out, 0, n_out_words * sizeof(uint32_t))
    for i in range(n):
        node = m.cur.data[i].node
        if node < 0:
            accepting = True
            continue
        if tabs[i] is False:
            rc = _walk_vocab(tt.trie, p, &m.store, &tt.fb, &m.cur.data[i], 1, p.max_depth, out,
                             False, 0, NULL, NULL, NULL)
            if rc == 1:
                rc = 0
            if rc != 0:
                break
            continue
        t = <PosTable> tabs[i]
        parent = m.store.parent[node]
        if t.n_frames == 2:          # a pair table: its exits continue below both frames
            parent = m.store.parent[parent]
        headroom = p.max_depth - (m.store.depth[parent] if parent >= 0 else 0)
        remaining = (p.ws_budget - m.cur.data[i].ws) if p.ws_budget >= 0 else (1 << 30)
        with nogil:
            if t.bits_p != NULL:
                for k in range(n_words):
                    out[k] |= t.bits_p[k]
            else:
                for k in range(t.n_ids):
                    out[t.ids_p[k] >> 5] |= (<uint32_t> 1) << (t.ids_p[k] & 31)
            for k in range(t.n_cond):
                if t.cond_p[3 * k + 1] <= remaining and t.cond_p[3 * k + 2] <= headroom:
                    out[t.cond_p[3 * k] >> 5] |= (<uint32_t> 1) << (t.cond_p[3 * k] & 31)
            if parent >= 0:
                for g in range(t.n_groups):
                    if t.g_ws[g] > remaining or t.g_pm[g] > headroom:
                        continue
                    st0.n = 0
                    ws = m.cur.data[i].ws + t.g_ws[g]
                    expand(p, &m.store, m.store.pos[parent], m.store.parent[parent], ws, 0,
                           p.max_depth, &st0)
                    if st0.n == 0:
                        continue
                    dedup(&st0, 0)
                    rc = walk(p, &m.store, &t.g_trie[g], &tt.fb, 0, st0.data, st0.n, p.max_depth, out,
                              False, 0, NULL, NULL, NULL)
                    if rc != 0:
                        break
        if rc != 0:
            break
    vec_free(&st0)
    if rc != 0 or m.store.failed:
        m.store.failed = 0
        raise MemoryError("mask computation failed")
    if accepting:
        for tok in tt.trie.eos_ids:
            out[tok >> 5] |= (<uint32_t> 1) << (tok & 31)


cdef extern from *:
    int popcount32 "__builtin_popcount"(unsigned int) nogil
    int ctz32 "__builtin_ctz"(unsigned int) nogil


cdef PosTable _make_table(TokenTrie trie, cnp.ndarray bits, const I32Vec* acc,
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
    groups = {}
    for k in range(0, exits.n, 3):
        groups.setdefault((exits.data[k + 1], exits.data[k + 2]), set()).add(exits.data[k])
    t.groups = []
    for (ws, pm), nodes in sorted(groups.items()):
        # node ids past the trie's own are in the whitespace-run trie (see walk_ws)
        arrs = trie.suffix_trie(tuple(sorted(nodes)), runs)
        if arrs is not None:
            t.groups.append((ws, pm, arrs))
    t.n_groups = len(t.groups)
    t.g_ws = <int32_t*> malloc(max(1, t.n_groups) * sizeof(int32_t))
    t.g_pm = <int32_t*> malloc(max(1, t.n_groups) * sizeof(int32_t))
    t.g_trie = <TrieC*> malloc(max(1, t.n_groups) * sizeof(TrieC))
    if t.g_ws == NULL or t.g_pm == NULL or t.g_trie == NULL:
        raise MemoryError()
    for g, (ws, pm, arrs) in enumerate(t.groups):
        t.g_ws[g] = ws
        t.g_pm[g] = pm
        nb, end, toff, tids, depth, max_len, big, ctab = arrs
        t.g_trie[g].byte = <const uint8_t*> cnp.PyArray_DATA(nb)
        t.g_trie[g].end = <const int32_t*> cnp.PyArray_DATA(end)
        t.g_trie[g].tok_off = <const int32_t*> cnp.PyArray_DATA(toff)
        t.g_trie[g].tok_ids = <const int32_t*> cnp.PyArray_DATA(tids)
        t.g_trie[g].big = <const int32_t*> cnp.PyArray_DATA(big)
        t.g_trie[g].child_tab = <const int32_t*> cnp.PyArray_DATA(ctab)
        t.g_trie[g].n_nodes = nb.shape[0]
        t.g_trie[g].max_len = max_len
    return t


# tables of small self-contained rules, shared across grammars (key: rule structure),
# least recently used first out once they hold more than SHARED_MAX_BYTES
from collections import OrderedDict
SHARED_MAX_BYTES = 256 << 20
_SHARED = OrderedDict()
_SHARED_BYTES = [0]
_SHARED_LOCK = threading.Lock()


def _shared_get(key):
    with _SHARED_LOCK:
        t = _SHARED.get(key)
        if t is not None:
            _SHARED.move_to_end(key)
        return t


def _shared_put(key, t):
    with _SHARED_LOCK:
        if key in _SHARED:
            return
        _SHARED[key] = t
        _SHARED_BYTES[0] += t.nbytes()
        while _SHARED_BYTES[0] > SHARED_MAX_BYTES and len(_SHARED) > 1:
            _, old = _SHARED.popitem(last=False)
            _SHARED_BYTES[0] -= old.nbytes()


def shared_tables_nbytes():
    """Bytes held by the tables shared across grammars."""
    return _SHARED_BYTES[0]


cdef enum:
    SIG_MAX_RULES = 8          # a shared rule calls at most this many rules (itself included) ...
    SIG_MAX_POSITIONS = 512    # ... with at most this many positions in all


_SIGNATURE_IDS = itertools.count()


cdef class _Signatures:
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


def apply_mask(logits, mask) -> None:
    """Set logits[i] = -inf in place wherever bit i of the int32 mask is 0 (GIL released)."""
    cdef float[::1] lg = logits
    cdef const int32_t[::1] mk = mask
    cdef Py_ssize_t n = lg.shape[0], i
    cdef float neg = -np.inf
    if mk.shape[0] * 32 < n:
        raise ValueError(f"mask has {mk.shape[0]} words, logits need {(n + 31) // 32}")
    with nogil:
        for i in range(n):
            if not ((<uint32_t> mk[i >> 5]) >> (i & 31)) & 1:
                lg[i] = neg
