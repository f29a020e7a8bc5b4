# cython: language_level=3
# Design: slices are llguidance's idea (the plain-string tokens of at most K bytes, allowed
# together without a walk), made exact here: a position takes a slice only when a
# breadth-first search over (automaton entries, UTF-8 state) configurations proves that every
# run of plain JSON string characters of up to K bytes keeps its frame alive at no whitespace
# or depth cost. Bytes between two cut points (edge range ends, UTF-8 class boundaries) step
# alike, so one byte per interval is tried; past SLICE_MAX_CONFIGS configurations the search
# gives up, conservatively (the walk then does the work). Two things keep the search small: a
# configuration holding a called frame that alone takes every remaining run is not searched
# further, and a search that closes records its lone frames as taking runs of any length
# (SliceMemo, per grammar). The same search proves class slices (a set of ASCII bytes, with
# or without the other plain characters) for pattern strings. The trie side of slices (the
# bitsets and the tries of the other tokens) is TokenTrie.slice and class_slice in _trie.pyx.
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from cengine._bitmask cimport next_allowed
from cengine._automaton cimport FLAG_CONTAINER
from cengine._matcher cimport (Entry, EntryVec, Store, vec_reserve, vec_free, step, store_init,
                               store_free, store_intern, NODE_EXIT)


cdef int _u8_next(int u, int b) noexcept nogil:
    """Next state of the UTF-8 automaton of plain JSON string characters (no quote, backslash
    or C0 control, and not U+2028 or U+2029, E2 80 A8-A9: TokenTrie.plain_lengths), or -1.
    States: 0 between characters, 1-3 continuation bytes still needed, 4-7 the restricted
    second byte after E0, ED, F0, F4, 8 the second byte after E2, 9 the third after E2 80."""
    if u == 0:
        if b < 0x20 or b == 0x22 or b == 0x5C:
            return -1
        if b < 0x80:
            return 0
        if 0xC2 <= b <= 0xDF:
            return 1
        if b == 0xE0:
            return 4
        if b == 0xE2:
            return 8
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
    if u == 7:
        return 2 if 0x80 <= b <= 0x8F else -1
    if u == 8:
        if b == 0x80:
            return 9
        return 1 if 0x81 <= b <= 0xBF else -1
    return 0 if 0x80 <= b <= 0xBF and b != 0xA8 and b != 0xA9 else -1


cdef int u8_state(int u, int b) noexcept nogil:
    return _u8_next(u, b)


def u8_next(int u, int b):
    """_u8_next, for tests."""
    return _u8_next(u, b)


# every byte where _u8_next's answer may change, for any state
_U8_CUTS = (0, 0x20, 0x22, 0x23, 0x5C, 0x5D, 0x80, 0x81, 0x90, 0xA0, 0xA8, 0xAA, 0xC0, 0xC2,
            0xE0, 0xE1, 0xE2, 0xE3, 0xED, 0xEE, 0xF0, 0xF1, 0xF4, 0xF5)


cdef enum:
    SLICE_MAX_CONFIGS = 4096
    SLICE_FOREVER = 1 << 29     # memo: the lone frame takes plain runs of any length


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
del _b


cdef struct BfsBufs:
    ConfigSet cs
    EntryVec src
    EntryVec tmp
    int32_t* frontier
    int32_t* nxt
    int32_t* cfg
    int32_t cfg_cap
    bint closed              # the search ended with no new configuration: none ever dies


cdef int memo_init(SliceMemo* m, int32_t limit) noexcept nogil:
    m.cap = 256
    m.n = 0
    m.limit = limit
    m.keys = <int64_t*> malloc(m.cap * sizeof(int64_t))
    m.vals = <int32_t*> malloc(m.cap * sizeof(int32_t))
    if m.keys == NULL or m.vals == NULL:
        return -1
    memset(m.keys, 0xFF, m.cap * sizeof(int64_t))
    return 0


cdef void memo_free(SliceMemo* m) noexcept nogil:
    free(m.keys)
    free(m.vals)
    m.keys = NULL
    m.vals = NULL


cdef int32_t* _memo_slot(SliceMemo* m, int64_t key) noexcept nogil:
    """The value slot of key (set to -2 when new), NULL on allocation failure."""
    cdef uint64_t h, mask
    cdef int64_t* ok
    cdef int32_t* ov
    cdef int32_t i, oc
    if 2 * (m.n + 1) > m.cap:
        ok = m.keys
        ov = m.vals
        oc = m.cap
        m.cap *= 2
        m.keys = <int64_t*> malloc(m.cap * sizeof(int64_t))
        m.vals = <int32_t*> malloc(m.cap * sizeof(int32_t))
        if m.keys == NULL or m.vals == NULL:
            free(ok)
            free(ov)
            return NULL
        memset(m.keys, 0xFF, m.cap * sizeof(int64_t))
        m.n = 0
        for i in range(oc):
            if ok[i] >= 0:
                _memo_slot(m, ok[i])[0] = ov[i]
        free(ok)
        free(ov)
    mask = <uint64_t> (m.cap - 1)
    h = (<uint64_t> key * 11400714819323198485u) >> 20 & mask
    while m.keys[h] >= 0 and m.keys[h] != key:
        h = (h + 1) & mask
    if m.keys[h] < 0:
        m.keys[h] = key
        m.vals[h] = -2
        m.n += 1
    return &m.vals[h]


cdef int32_t _memo_get(const SliceMemo* m, int64_t key) noexcept nogil:
    """The value of key, or -2 when it has none."""
    cdef uint64_t mask = <uint64_t> (m.cap - 1)
    cdef uint64_t h = (<uint64_t> key * 11400714819323198485u) >> 20 & mask
    while m.keys[h] >= 0:
        if m.keys[h] == key:
            return m.vals[h]
        h = (h + 1) & mask
    return -2


cdef int32_t _plain_depth_alone(const Prog* prog, SliceMemo* memo, int32_t q,
                                int u) noexcept nogil:
    """slice_bfs from a lone frame at q in UTF-8 state u (up to memo.limit), memoised; -1 on
    failure."""
    cdef int32_t* slot = _memo_slot(memo, <int64_t> q * 16 + u)
    cdef Store st
    cdef int32_t d, node
    cdef bint closed = False
    if slot == NULL:
        return -1
    if slot[0] != -2:
        return slot[0]
    if store_init(&st, 64) != 0:
        return -1
    d = 1 if prog.pos_flags[q] & FLAG_CONTAINER else 0
    node = store_intern(&st, q, NODE_EXIT, d)
    if node < 0:
        d = -1
    else:
        d = _slice_bfs(prog, &st, node, d, memo.limit, u, NULL, NULL, &closed)
        if d == memo.limit and closed:
            d = SLICE_FOREVER
    store_free(&st)
    slot = _memo_slot(memo, <int64_t> q * 16 + u)    # the table may have grown
    if slot == NULL:
        return -1
    slot[0] = d
    return d


cdef int32_t slice_bfs(const Prog* prog, Store* store, int32_t start, int32_t base_pm,
                       int32_t limit, SliceMemo* memo, const uint64_t* cls,
                       bint* closed=NULL) noexcept nogil:
    """Breadth-first search over (entries, UTF-8 state) configurations from the single entry
    `start`, one byte per level; bytes between two cut points (edge range ends of the
    entries' positions, UTF-8 class boundaries) step alike, so one byte per interval is
    tried. Returns the depth reached (limit if every path survives), -1 on failure.

    With a memo, a configuration holding an entry whose top frame was called during the
    search (not a frame of the start's level) and which alone provably takes the remaining
    plain runs (_plain_depth_alone) is not searched further: that frame is never popped
    nor costed on such runs, whatever is below it, so the configuration survives them. An
    open object's key (a trie of the declared names beside a call of the generic string)
    otherwise makes one configuration per (name prefix, string state) and hits the cap.

    With cls (words 0-1: a set of ASCII bytes; word 2: mixed), the runs searched are those
    of bytes in cls (mixed: and of the other plain characters) instead of plain characters (class slices: a pattern string such as `^[a-z0-9.-]+$` or
    `^[^,]+$`); the memo, which is about plain runs, is not used then.

    closed, when given, is set to whether the search ended with no new configuration (and
    every one it skipped takes runs of any length): then no plain run of any length dies."""
    return _slice_bfs(prog, store, start, base_pm, limit, 0, memo if cls == NULL else NULL, cls,
                      closed)


cdef int32_t _slice_bfs(const Prog* prog, Store* store, int32_t start, int32_t base_pm,
                        int32_t limit, int u0, SliceMemo* memo,
                        const uint64_t* cls, bint* closed=NULL) noexcept nogil:
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
        w.closed = False
        result = _slice_bfs_run(&w, prog, store, start, base_pm, limit, u0, memo, cls)
        if closed != NULL:
            closed[0] = w.closed
    free(w.cs.data)
    free(w.cs.table)
    free(w.frontier)
    free(w.nxt)
    free(w.cfg)
    vec_free(&w.src)
    vec_free(&w.tmp)
    return result


cdef int32_t last_capped = 0


def bfs_capped():
    """Whether the last slice search gave up at SLICE_MAX_CONFIGS (profiling)."""
    return bool(last_capped)


cdef int32_t _slice_bfs_run(BfsBufs* w, const Prog* prog, Store* store, int32_t start,
                            int32_t base_pm, int32_t limit, int u0,
                            SliceMemo* memo, const uint64_t* cls) noexcept nogil:
    global last_capped
    if memo != NULL:
        last_capped = 0
    cdef int32_t* swap
    cdef int32_t n_front, n_next, depth = 0
    cdef int32_t f, off, u, nu, i, j, k, qq, b, n_kept, n_cfg, alone
    cdef int32_t base_parent = store.parent[start]
    cdef bint safe, finite_safe = False
    cdef uint64_t cuts[5]
    cdef Entry e
    cdef int32_t* nc
    w.cfg[0] = u0
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
            if cls != NULL:
                # where class membership changes
                for b in range(1, 129):
                    if ((cls[(b - 1) >> 6] >> ((b - 1) & 63)) & 1) != \
                            (((cls[b >> 6] >> (b & 63)) & 1) if b < 128 else 0):
                        cuts[b >> 6] |= (<uint64_t> 1) << (b & 63)
            for i in range(w.src.n):
                qq = store.pos[w.src.data[i].node]
                for k in range(prog.edge_off[qq], prog.edge_off[qq + 1]):
                    b = prog.edge_lo[k]
                    cuts[b >> 6] |= (<uint64_t> 1) << (b & 63)
                    b = prog.edge_hi[k] + 1
                    cuts[b >> 6] |= (<uint64_t> 1) << (b & 63)
            b = next_allowed(cuts, 0)
            while b < 256:
                if cls == NULL:
                    nu = _u8_next(u, b)
                elif cls[2]:             # mixed: ASCII in the class, other plain characters
                    nu = _u8_next(u, b) if u != 0 or b >= 128 or (cls[b >> 6] >> (b & 63)) & 1 \
                        else -1
                else:
                    nu = 0 if b < 128 and (cls[b >> 6] >> (b & 63)) & 1 else -1
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
                    safe = False
                    if memo != NULL and limit - depth - 1 > 0:
                        for k in range(n_kept):
                            if store.parent[w.tmp.data[k].node] == base_parent:
                                # a frame of the start's level: only what is known already
                                # (from an earlier search that closed, below)
                                alone = _memo_get(memo, <int64_t> store.pos[
                                    w.tmp.data[k].node] * 16 + nu)
                                if alone >= limit - depth - 1:
                                    safe = True
                                    finite_safe |= alone < SLICE_FOREVER
                                    break
                                continue
                            alone = _plain_depth_alone(prog, memo,
                                                       store.pos[w.tmp.data[k].node], nu)
                            if alone < 0:
                                return -1
                            if alone >= limit - depth - 1:
                                safe = True
                                finite_safe |= alone < SLICE_FOREVER
                                break
                    if safe:
                        b = next_allowed(cuts, b + 1)
                        continue
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
                            if memo != NULL:
                                last_capped = 1
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
    w.closed = n_front == 0 and not finite_safe
    if w.closed and memo != NULL and base_parent == NODE_EXIT:
        # closed, and every configuration left out survives runs of any length: so does
        # every configuration seen, and one of a lone frame (the start's level over the
        # walk's base) tells that frame's answer alone; the searches from the next
        # positions of an open object's key stop there at once
        off = 0
        while off < w.cs.n:
            n_cfg = w.cs.data[off + 1]
            if n_cfg == 1 and store.parent[w.cs.data[off + 2]] == NODE_EXIT:
                nc = _memo_slot(memo, <int64_t> store.pos[w.cs.data[off + 2]] * 16
                                + w.cs.data[off])
                if nc == NULL:
                    return -1
                nc[0] = SLICE_FOREVER
            off += 2 + 2 * n_cfg
    return limit
