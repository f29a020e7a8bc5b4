# cython: language_level=3
# Design: a mask is the union, over the matcher's stacks, of what the token trie (_trie.pyx)
# allows from each. Walking the whole trie from the root for every mask would cost ~a
# millisecond, so per automaton position p (the top frame of a stack) TokenTables builds,
# lazily and once, p's table (_tables.pyx: accepted tokens, conditional tokens, suffix tries
# of the exits); fill ORs the tables in and walks only the exits' suffix tries with the real
# stack below p. Inside a JSON string nearly every token is accepted context-independently
# and the few that close the string continue in a suffix trie of a few hundred nodes, so a
# mask costs an OR of a 16 KB bitset plus a short walk. This module holds the walks (nogil
# kernels over the trie, the automaton stepping along) and the table builder. What keeps cold
# walks (a position's first visit) cheap:
#   * slices (llguidance's idea, made exact by a search over the automaton, _slices.pyx):
#     plain-string tokens of at most K bytes are ORed in when the position provably takes
#     any such run; else those of a narrower class (its first bytes, the bytes of a loop or
#     of a counted run: loop_class, chain_class), the same search proving it;
#   * whitespace runs: between JSON tokens whitespace loops back to the same state, so the
#     tokens that start with whitespace are walked as (run length, rest), each rest once per
#     run length, instead of every spelling of every run (walk_ws over TokenTrie.ws_split);
#   * a byte filter per trie frame (the bytes the state's positions have edges for) and a
#     byte -> child table on nodes with many children, so refused children cost nothing;
#   * pair tables: a short rule called once per count of a long run (a character of a
#     maxLength 2000 string) is tabled together with the run's position, and positions
#     farther than the longest token from the run's end share one table (horizon_key);
#   * character runs: a bounded string's character keeps its frame (ir.Rule.frame), so each
#     count is a (count, character) pair; when the count only closes with the quote, plain
#     tokens of the character's class are decided by their number of characters
#     (TokenTrie.char_slice), those with a raw control refused, and only the ~3k-node trie
#     of the tokens with a quote, a backslash or odd UTF-8 is walked (string_rest);
#   * string bodies: a position inside a string of any length (an unbounded string, an
#     open object's key), where the slice search closes (no plain run ever dies) and a
#     static pass over the automaton shows no control is taken after a run of non-quote
#     bytes (string_body), takes every plain token and refuses those with a control before
#     any quote or backslash: only the ~3k-node TokenTrie.string_rest is walked, not the
#     ~13k nodes beside the longest slice (an open object's key: ~240 -> ~80 µs);
#   * counter frames: where the run is a level of a length counter (a rule called again
#     right where its call returns) and a token can reach its end, the table takes the
#     frames below too, down to one that no token can pop (at most MAX_TABLE_FRAMES):
#     tokens that cross a level's end are decided by the table, not walked with the stack.
# A mask's suffix walks (the exits of a table continued with the real stack below) are joined
# per suffix trie: stacks with one top and different frames below (an ambiguous schema's
# alternatives) are walked once together, not once each (SuffixWalks; Github_medium---o25763:
# 45 such stacks, 5.7-7 ms a mask -> 1.4-2.7 ms); a table shared by several stacks is ORed in
# once, and a narrow position met by DIRECT_MAX_STACKS stacks at once gets its table on that
# first visit (one walk with all of them cost more than the table and the joined walks).
# TokenTables() itself is on the path to every grammar's first mask: it computes nothing per
# position (narrow positions are recognised where a mask meets them, the call facts come from
# one C pass over the calls), and a first visit's narrow stacks share one walk of the trie.
# Split across modules, hot calls stay direct: helpers are inline in .pxd files
# (_bitmask, _i32vec, _trie.set_tokens); only whole walks cross a module boundary.
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
cimport numpy as cnp
import threading
import time
import numpy as np

from cengine._automaton cimport FLAG_CONTAINER, Prog
from cengine._bitmask cimport allow_range, next_allowed, popcount64
from cengine._i32vec cimport I32Vec, i32_push
from cengine._matcher cimport (Entry, EntryVec, Store, Program, Matcher, vec_reserve,
                               vec_free, store_init, store_free, store_intern, step, expand, dedup,
                               NODE_ACCEPT, NODE_EXIT)
from cengine._slices cimport SliceMemo, memo_init, memo_free, slice_bfs, u8_state
from cengine._tables cimport PosTable, make_table
from cengine._trie cimport TokenTrie, TrieC, set_tokens
from cengine._tables import SHARED_TABLES, RuleSignatures
from cengine._trie import trie_of
from cengine._slices import bfs_capped

cnp.import_array()

cdef struct Frame:
    int32_t child           # next child node, or with a child table the next byte to try
    int32_t end
    int32_t st_start
    int32_t st_n
    const int32_t* tab      # the node's child table when the filter uses it, else NULL
    bint in_cls             # the path to here is in the walk's class (ClassPrune)
    uint64_t allow[4]       # bytes some entry of the frame has an edge for (a superset filter)
    bint ascii_end          # the path to here ends with an ASCII byte (or is empty)
    bint dhas               # EntryPrune: children whose subtree is in the class below hold
    uint64_t dcls[4]        # only accepted tokens (a byte set, see EntryClasses)

cdef enum:
    FILTER_MIN_SUBTREE = 48     # a frame whose subtree is smaller is not worth a byte filter


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


# printable ASCII without quote and backslash: the ASCII part of the plain class
cdef uint64_t PLAIN_ASCII_LO = 0xFFFFFFFB00000000u        # 0x20-0x3F without 0x22
cdef uint64_t PLAIN_ASCII_HI = 0x7FFFFFFFEFFFFFFFu        # 0x40-0x7E without 0x5C


cdef struct Succ:
    int32_t r               # the position a run of the bytes steps to (lone_step), or -1
    int32_t nu              # the UTF-8 state after them
    uint64_t bits[4]        # the bytes


cdef struct EntryClasses:
    # per automaton position, filled on first use (entry_class): the class of plain runs a
    # lone frame there provably takes for ever (bytes: ASCII, and the lead bytes of the
    # other characters with every continuation byte), or none
    uint64_t* cls           # 4 words per position (a 256-bit byte set)
    uint8_t* has            # whether it has one
    uint8_t* done
    # lone_step's cache: per position a row of 256 (bytes), made on first use
    int32_t* row            # per position: its row, or -1
    int32_t* rows
    int32_t n_rows
    int32_t rows_cap
    Store st                # lone_step's stacks (reset when large)
    EntryVec out
    # entry_class's search
    Succ* succ              # node_succ's successors
    int32_t succ_cap
    int32_t* queue          # ENTRY_MAX_STATES (position, UTF-8 state) nodes: position * 16 + u
    int32_t failures        # searches that found no class (ENTRY_MAX_FAILURES)
    uint8_t* mark           # per node, zero between searches


cdef struct EntryPrune:
    # a table walk's prune by the class of the entry it carries (see frame_entry_class):
    # where a frame's entry provably takes every run of its class, a child whose subtree is
    # all in the class (TokenTrie.class_prune) holds only accepted tokens and is not walked.
    # Not only the root's class (ClassPrune): the key state a first letter leads to, the
    # loop of a pattern's DFA state, wherever the walk meets them
    const TrieC* trie       # the trie the arrays describe (the vocabulary's whole trie)
    const uint64_t* sub
    const uint8_t* sub_plain
    EntryClasses* ec
    int32_t base_pm


cdef enum:
    ENTRY_MIN_SUBTREE = 8       # a frame with a smaller subtree does not look up its class,
    ENTRY_SEARCH_MIN = 4096     # one smaller than this looks it up only if known already
    ENTRY_CLASS_MIN = 16        # an entry class of fewer plain ASCII bytes is not kept
    ENTRY_MAX_ROUNDS = 6        # searches for one class at most, ...
    ENTRY_MAX_STATES = 256      # ... each over this many positions at most; after this many
    ENTRY_MAX_FAILURES = 64     # fruitless searches a grammar's tables search no more (the
                                # states of a length-counting DFA, a bounded email or date,
                                # never close and would each explore as much again)


cdef int32_t lone_step(const Prog* p, EntryClasses* ec, int32_t r, int32_t b) noexcept nogil:
    """The position a lone frame at r steps to on byte b while it stays one frame of the same
    level at no whitespace cost (a byte edge, or a tail call), else -1 (refused, or several
    stacks, a push or a pop); -2 on failure. Cached per (position, byte)."""
    cdef int32_t row, i, res = -1
    cdef int32_t* nr
    cdef Store* st = &ec.st
    cdef Entry e
    row = ec.row[r]
    if row < 0:
        if ec.n_rows == ec.rows_cap:
            ec.rows_cap = 2 * ec.rows_cap if ec.rows_cap else 64
            nr = <int32_t*> realloc(ec.rows, ec.rows_cap * 256 * sizeof(int32_t))
            if nr == NULL:
                return -2
            ec.rows = nr
        row = ec.row[r] = ec.n_rows
        ec.n_rows += 1
        for i in range(256):
            ec.rows[256 * row + i] = -3
    if ec.rows[256 * row + b] != -3:
        return ec.rows[256 * row + b]
    if st.n > 4096:
        store_free(st)
        if store_init(st, 256) != 0:
            return -2
    ec.out.n = 0
    e.node = store_intern(st, r, NODE_EXIT, 1 if p.pos_flags[r] & FLAG_CONTAINER else 0)
    e.ws = e.pmax = 0
    if e.node >= 0 and step(p, st, &e, 1, <uint8_t> b, 1 << 30, &ec.out) == 1 and \
            ec.out.data[0].node >= 0 and ec.out.data[0].ws == 0 and \
            st.parent[ec.out.data[0].node] == NODE_EXIT and ec.out.data[0].pmax <= \
            st.depth[ec.out.data[0].node]:
        res = st.pos[ec.out.data[0].node]
    if st.failed:
        st.failed = 0
        res = -2
    if res != -2:
        ec.rows[256 * row + b] = res
    return res


# the bytes where _u8_next's answer may change, for any state (_slices._U8_CUTS): between two
# of them every byte steps a UTF-8 state alike
cdef uint64_t U8_CUTS[4]
for _b in (0x20, 0x22, 0x23, 0x5C, 0x5D, 0x80, 0x81, 0x90, 0xA0, 0xA8, 0xAA, 0xC0, 0xC2, 0xE0,
           0xE1, 0xE2, 0xE3, 0xED, 0xEE, 0xF0, 0xF1, 0xF4, 0xF5):
    U8_CUTS[_b >> 6] |= (<uint64_t> 1) << (_b & 63)
del _b


cdef int32_t node_succ(const Prog* p, EntryClasses* ec, int32_t s, int32_t u,
                       const uint64_t* tried, bint* refused) noexcept nogil:
    """The successors of node (s, u) on the bytes `tried` (those valid in UTF-8 state u), into
    ec.succ grouped by (target, UTF-8 state): one lone_step per edge range and UTF-8 interval,
    since the bytes of one edge step alike. refused: whether some byte of `tried` has no edge.
    Returns how many, -1 on failure."""
    cdef int32_t k, lo, hi, b, e, r, nu, n = 0, i
    cdef uint64_t rng[4]
    cdef uint64_t covered[4]
    cdef Succ* ns
    covered[0] = covered[1] = covered[2] = covered[3] = 0
    for k in range(p.edge_off[s], p.edge_off[s + 1]):
        lo = p.edge_lo[k]
        hi = p.edge_hi[k]
        rng[0] = rng[1] = rng[2] = rng[3] = 0
        allow_range(rng, lo, hi)
        for i in range(4):
            covered[i] |= rng[i]
            rng[i] &= tried[i]
        b = next_allowed(rng, 0)
        if b == 256:
            continue
        r = lone_step(p, ec, s, b)
        if r == -2:
            return -1
        while b < 256:
            # the bytes of this edge up to the next UTF-8 cut: one UTF-8 state after them
            e = next_allowed(U8_CUTS, b + 1)
            nu = u8_state(u, b)
            if n == ec.succ_cap:
                ec.succ_cap = 2 * ec.succ_cap if ec.succ_cap else 64
                ns = <Succ*> realloc(ec.succ, ec.succ_cap * sizeof(Succ))
                if ns == NULL:
                    return -1
                ec.succ = ns
            ec.succ[n].r = r
            ec.succ[n].nu = nu
            ec.succ[n].bits[0] = ec.succ[n].bits[1] = ec.succ[n].bits[2] = 0
            ec.succ[n].bits[3] = 0
            allow_range(ec.succ[n].bits, b, (e if e < 256 else 256) - 1)
            for i in range(4):
                ec.succ[n].bits[i] &= rng[i]
            n += 1
            b = next_allowed(rng, e) if e < 256 else 256
    refused[0] = ((tried[0] & ~covered[0]) | (tried[1] & ~covered[1]) |
                  (tried[2] & ~covered[2]) | (tried[3] & ~covered[3])) != 0
    return n


cdef inline void _tried(const uint64_t* w, int32_t u, uint64_t* out) noexcept nogil:
    """The bytes a node in UTF-8 state u tries under the class w: the class's ASCII bytes and
    lead bytes between characters, the continuation bytes valid in u inside one."""
    cdef int32_t b
    out[0] = out[1] = out[2] = out[3] = 0
    if u == 0:
        out[0] = w[0]
        out[1] = w[1]
        out[3] = w[3]
        return
    for b in range(0x80, 0xC0):
        if u8_state(u, b) >= 0:
            out[2] |= (<uint64_t> 1) << (b & 63)


cdef inline bint _bad_target(const Prog* p, int32_t r, int32_t dq) noexcept nogil:
    """A successor that is not one frame of the root's level at no cost."""
    return r < 0 or (p.pos_flags[r] & FLAG_CONTAINER and not dq)


cdef int32_t entry_class(const Prog* p, EntryClasses* ec, int32_t q) noexcept nogil:
    """Whether a lone frame at q provably takes every run of a class of plain characters for
    ever (its bytes into ec at q); once per position. The search: from q, the nodes (position,
    UTF-8 state) that runs of the class reach as one frame of q's level (lone_step) are found,
    the class starting as every plain character. Where a node refuses a byte of the class,
    the bytes that lead into it from the nodes that take the whole class leave the class (a
    character's lead byte, when the node is part-way through it), the root's own refused
    bytes when it is the one, and the search goes again. What is left is closed: every run
    of it keeps one frame alive at no cost, for ever (a pattern DFA's characters without those
    that start an escape, a range or a quantifier, or without C1 controls; a key's characters
    without the letters that lead to a declared or pattern name)."""
    if ec.done[q]:
        return ec.has[q]
    if ec.failures >= ENTRY_MAX_FAILURES:
        return False
    cdef int32_t dq, n_s, i, j, n, s, u, node, rounds, pass_
    cdef uint64_t w[4]
    cdef uint64_t rm[4]
    cdef uint64_t gone[4]
    cdef uint64_t tr[4]
    cdef int32_t* queue = ec.queue
    cdef uint8_t* mark = ec.mark
    cdef bint bad_any, overflow, changed, refused, root_bad, found = False, failed = False
    # every plain character: printable ASCII but quote and backslash, the lead bytes of
    # valid UTF-8 and every continuation byte (_u8_next tells which sequences are plain)
    w[0] = PLAIN_ASCII_LO
    w[1] = PLAIN_ASCII_HI
    w[2] = ~(<uint64_t> 0)                  # 0x80-0xBF
    w[3] = 0x1FFFFFFFFFFFFCu                # 0xC2-0xF4
    gone[0] = gone[1] = gone[2] = gone[3] = 0
    dq = 1 if p.pos_flags[q] & FLAG_CONTAINER else 0
    for rounds in range(ENTRY_MAX_ROUNDS):
        # the nodes reached from (q, 0) by runs of the class; mark: 1 seen, 2 refuses some
        # byte, 3 part-way through a character that cannot end well (tainted)
        queue[0] = q * 16
        mark[q * 16] = 1
        n_s = 1
        i = 0
        bad_any = overflow = False
        while i < n_s and not (failed or overflow):
            s = queue[i] >> 4
            u = queue[i] & 15
            i += 1
            _tried(w, u, tr)
            n = node_succ(p, ec, s, u, tr, &refused)
            if n < 0:
                failed = True
                break
            if refused:
                mark[s * 16 + u] = 2
                bad_any = True
            for j in range(n):
                if _bad_target(p, ec.succ[j].r, dq):
                    mark[s * 16 + u] = 2
                    bad_any = True
                    continue
                node = ec.succ[j].r * 16 + ec.succ[j].nu
                if not mark[node]:
                    if n_s == ENTRY_MAX_STATES:
                        overflow = True
                        break
                    mark[node] = 1
                    queue[n_s] = node
                    n_s += 1
        rm[0] = rm[1] = rm[2] = rm[3] = 0
        if bad_any and not failed and not overflow:
            # a node part-way through a character is tainted when it, or a node the rest of
            # the character leads to, refuses
            pass_ = 0
            changed = True
            while changed and pass_ < 4 and not failed:
                changed = False
                pass_ += 1
                for i in range(n_s):
                    u = queue[i] & 15
                    if u == 0 or mark[queue[i]] != 1:
                        continue
                    _tried(w, u, tr)
                    n = node_succ(p, ec, queue[i] >> 4, u, tr, &refused)
                    if n < 0:
                        failed = True
                        break
                    for j in range(n):
                        if ec.succ[j].r >= 0 and mark[ec.succ[j].r * 16 + ec.succ[j].nu] >= 2:
                            mark[queue[i]] = 3
                            changed = True
                            break
            root_bad = mark[q * 16] == 2
            for i in range(n_s):
                # the root's own refused bytes when it refuses some; else, between
                # characters at a node that takes the whole class, the bytes (an ASCII
                # character, a lead byte) into a node that does not
                if failed or (queue[i] & 15) or (mark[queue[i]] != 1 and i > 0):
                    continue
                if i > 0 and root_bad:
                    break
                _tried(w, 0, tr)
                n = node_succ(p, ec, queue[i] >> 4, 0, tr, &refused)
                if n < 0:
                    failed = True
                    break
                if root_bad and refused:
                    # the bytes no edge takes
                    for j in range(n):
                        for u in range(4):
                            tr[u] &= ~ec.succ[j].bits[u]
                    for u in range(4):
                        rm[u] |= tr[u]
                for j in range(n):
                    if (_bad_target(p, ec.succ[j].r, dq) if root_bad else
                            mark[ec.succ[j].r * 16 + ec.succ[j].nu] >= 2):
                        for u in range(4):
                            rm[u] |= ec.succ[j].bits[u]
        if not bad_any and not failed and not overflow:
            found = True
            # the class holds for every position the search reached (they are closed under
            # it); those that cannot take the bytes left out either (refused, or leading out
            # of the nodes reached) would find the same class: they take it
            for i in range(1, n_s):
                if queue[i] & 15:
                    continue
                s = queue[i] >> 4
                if ec.done[s] or (p.pos_flags[s] & FLAG_CONTAINER != 0) != (dq != 0):
                    continue
                _tried(gone, 0, tr)
                n = node_succ(p, ec, s, 0, tr, &refused)
                for j in range(n):
                    if ec.succ[j].r >= 0 and mark[ec.succ[j].r * 16 + ec.succ[j].nu] == 1:
                        n = -1
                        break
                if n >= 0:
                    _set_class(ec, s, w)
        for i in range(n_s):
            mark[queue[i]] = 0
        if failed or overflow or found or (rm[0] | rm[1] | rm[2] | rm[3]) == 0:
            break
        for i in range(4):
            w[i] &= ~rm[i]
            gone[i] |= rm[i]
        if w[3] == 0:
            w[2] = 0                # no lead byte left: no continuation byte either
        if popcount64(w[0]) + popcount64(w[1]) < ENTRY_CLASS_MIN:
            break
    if found:
        _set_class(ec, q, w)
    else:
        ec.has[q] = 0
        ec.done[q] = 1
        ec.failures += 1
    return found


cdef inline void _set_class(EntryClasses* ec, int32_t q, const uint64_t* w) noexcept nogil:
    cdef int32_t i
    for i in range(4):
        ec.cls[4 * q + i] = w[i]
    ec.has[q] = 1
    ec.done[q] = 1


cdef inline void frame_entry_class(const Prog* p, const Store* s, const TrieC* t,
                                   const EntryPrune* ep, Frame* f, const Entry* st,
                                   int32_t x) noexcept nogil:
    """The class of the frame's first entry that takes runs of one at no cost (f.dcls, and
    f.dhas). Such an entry's top frame is never popped on those runs, so what lies below it
    does not matter; it costs nothing when it carries no whitespace and no push beyond the
    walk's base (the slice search's terms). A class is searched for only where the subtree is
    large enough to pay for it."""
    cdef int32_t i, q
    cdef const uint64_t* c
    f.dhas = False
    if ep == NULL or t.end[x] - x < ENTRY_MIN_SUBTREE:
        return
    for i in range(f.st_n):
        if st[i].node < 0 or st[i].ws != 0 or st[i].pmax > ep.base_pm or \
                s.depth[st[i].node] > ep.base_pm:
            continue
        q = s.pos[st[i].node]
        if not ep.ec.done[q] and t.end[x] - x < ENTRY_SEARCH_MIN:
            continue
        if not entry_class(p, ep.ec, q):
            continue
        c = ep.ec.cls + 4 * <int64_t> q
        f.dcls[0] = c[0]
        f.dcls[1] = c[1]
        f.dcls[2] = c[2]
        f.dcls[3] = c[3]
        f.dhas = True
        return


cdef struct StepCache:
    # what one entry becomes on one byte, per (stack node, byte): the entries after it as
    # (node, whitespace spent, deepest push), relative to an entry with nothing spent
    int64_t* keys            # node * 256 + byte, or -1 (open addressing)
    int32_t* off             # start of the key's results in pool (triples)
    int32_t* cnt             # how many results
    int32_t cap
    int32_t n
    int32_t* pool
    int32_t pool_n
    int32_t pool_cap
    Prog free_ws             # the program without a whitespace budget (applied on lookup)


cdef bint _use_step_cache = True


def use_step_cache(bint on):
    """Switch the walks' step cache (for benchmarks and the tests that compare both)."""
    global _use_step_cache
    _use_step_cache = on


cdef bint _use_character_runs = True
cdef bint _use_loop_class = True
cdef bint _use_entry_classes = True
cdef bint _use_string_bodies = True


def use_entry_classes(bint on):
    """Switch the entry-class prune of table walks (EntryPrune; for benchmarks and the tests
    that compare both)."""
    global _use_entry_classes
    _use_entry_classes = on


def use_loop_class(bint on):
    """Switch the loop-class and chain-class slice attempts (loop_class, chain_class; for
    benchmarks and tests)."""
    global _use_loop_class
    _use_loop_class = on


def use_string_bodies(bint on):
    """Switch the string-body tables (string_body: every plain token in, the string_rest
    trie walked; for the tests that compare them with the slice walk, and benchmarks)."""
    global _use_string_bodies
    _use_string_bodies = on


def use_character_runs(bint on):
    """Switch the character-run tables (TokenTables._character_run; for the tests that
    compare them with the walked ones, and benchmarks)."""
    global _use_character_runs
    _use_character_runs = on


cdef enum:
    STEP_MAX_STACKS = 1 << 16    # _matcher's MAX_STACKS: more stacks, the grammar is refused


cdef struct ClassPrune:
    # a class slice (TokenTrie.class_slice) taken by the walk's position: subtrees whose
    # every node is in the class and no deeper than max_len are in the slice, not walked
    uint64_t cls[4]         # ASCII class; cls[2]: mixed (other plain characters in too)
    int32_t max_len
    const uint64_t* sub     # TokenTrie.class_prune() of the trie walked
    const int32_t* sub_depth
    const uint8_t* sub_plain


cdef struct WalkBufs:
    const ClassPrune* cp
    const EntryPrune* ep
    Frame* frames
    int32_t n_frames
    EntryVec buf
    EntryVec tmp
    EntryVec one
    StepCache sc


cdef int bufs_init(WalkBufs* wb, int32_t max_len, const Prog* p) noexcept nogil:
    wb.buf.data = NULL
    wb.buf.n = wb.buf.cap = 0
    wb.tmp.data = NULL
    wb.tmp.n = wb.tmp.cap = 0
    wb.one.data = NULL
    wb.one.n = wb.one.cap = 0
    wb.n_frames = max_len + 2
    wb.frames = <Frame*> malloc(wb.n_frames * sizeof(Frame))
    wb.cp = NULL
    wb.ep = NULL
    wb.sc.cap = 1024
    wb.sc.n = 0
    wb.sc.keys = <int64_t*> malloc(wb.sc.cap * sizeof(int64_t))
    wb.sc.off = <int32_t*> malloc(wb.sc.cap * sizeof(int32_t))
    wb.sc.cnt = <int32_t*> malloc(wb.sc.cap * sizeof(int32_t))
    wb.sc.pool_cap = 4096
    wb.sc.pool_n = 0
    wb.sc.pool = <int32_t*> malloc(wb.sc.pool_cap * sizeof(int32_t))
    wb.sc.free_ws = p[0]
    wb.sc.free_ws.ws_budget = -1
    if wb.sc.keys != NULL:
        memset(wb.sc.keys, 0xFF, wb.sc.cap * sizeof(int64_t))
    return -1 if wb.frames == NULL or wb.sc.keys == NULL or wb.sc.off == NULL \
        or wb.sc.cnt == NULL or wb.sc.pool == NULL else 0


cdef void bufs_free(WalkBufs* wb) noexcept nogil:
    free(wb.frames)
    vec_free(&wb.buf)
    vec_free(&wb.tmp)
    vec_free(&wb.one)
    free(wb.sc.keys)
    free(wb.sc.off)
    free(wb.sc.cnt)
    free(wb.sc.pool)


cdef int64_t _sc_find(StepCache* c, int64_t key) noexcept nogil:
    """The slot of key, or of the empty slot where it goes."""
    cdef uint64_t mask = <uint64_t> (c.cap - 1)
    cdef uint64_t h = ((<uint64_t> key) * 11400714819323198485u >> 24) & mask
    while c.keys[h] >= 0 and c.keys[h] != key:
        h = (h + 1) & mask
    return <int64_t> h


cdef int _sc_grow(StepCache* c) noexcept nogil:
    cdef int64_t* ok = c.keys
    cdef int32_t* oo = c.off
    cdef int32_t* on = c.cnt
    cdef int32_t i, oc = c.cap
    cdef int64_t h
    c.cap *= 2
    c.keys = <int64_t*> malloc(c.cap * sizeof(int64_t))
    c.off = <int32_t*> malloc(c.cap * sizeof(int32_t))
    c.cnt = <int32_t*> malloc(c.cap * sizeof(int32_t))
    if c.keys == NULL or c.off == NULL or c.cnt == NULL:
        free(ok)
        free(oo)
        free(on)
        return -1
    memset(c.keys, 0xFF, c.cap * sizeof(int64_t))
    for i in range(oc):
        if ok[i] >= 0:
            h = _sc_find(c, ok[i])
            c.keys[h] = ok[i]
            c.off[h] = oo[i]
            c.cnt[h] = on[i]
    free(ok)
    free(oo)
    free(on)
    return 0


cdef int32_t cached_step(WalkBufs* wb, const Prog* p, Store* s, const Entry* src, int32_t n,
                         uint8_t b, int32_t max_depth, EntryVec* out) noexcept nogil:
    """step (the matcher's), with what each entry becomes on b cached for the walk: a trie
    walk steps the same stack node on the same byte again and again (every token through a
    string body), and a lookup is a fraction of a step's closure and interning. Exact: an
    entry's results depend on its node and b alone, up to the whitespace and push depth it
    carries, which are added on lookup (step adds the edge's whitespace to every result of
    an entry and takes the deepest push as a maximum); the budget is applied here too."""
    cdef StepCache* c = &wb.sc
    cdef int32_t i, k, node, start = out.n, o, cnt, w0
    cdef int64_t key, h
    cdef int32_t* np_
    cdef Entry* e
    cdef Entry one
    for i in range(n):
        node = src[i].node
        if node < 0:
            continue
        key = (<int64_t> node << 8) | b
        h = _sc_find(c, key)
        if c.keys[h] < 0:
            wb.one.n = 0
            one.node = node
            one.ws = 0
            one.pmax = 0
            cnt = step(&c.free_ws, s, &one, 1, b, max_depth, &wb.one)
            if s.failed:
                return 0
            if c.pool_n + 3 * cnt > c.pool_cap:
                c.pool_cap = 2 * (c.pool_n + 3 * cnt)
                np_ = <int32_t*> realloc(c.pool, c.pool_cap * sizeof(int32_t))
                if np_ == NULL:
                    s.failed = 1
                    return 0
                c.pool = np_
            for k in range(cnt):
                e = &wb.one.data[k]
                c.pool[c.pool_n + 3 * k] = e.node
                c.pool[c.pool_n + 3 * k + 1] = e.ws
                c.pool[c.pool_n + 3 * k + 2] = e.pmax
            if 2 * (c.n + 1) > c.cap:
                if _sc_grow(c) != 0:
                    s.failed = 1
                    return 0
                h = _sc_find(c, key)
            c.keys[h] = key
            c.off[h] = c.pool_n
            c.cnt[h] = cnt
            c.n += 1
            c.pool_n += 3 * cnt
        o = c.off[h]
        cnt = c.cnt[h]
        if cnt == 0:
            continue
        w0 = c.pool[o + 1]           # the edge's whitespace: the same for all of them
        if w0 > 0 and p.ws_budget >= 0 and src[i].ws + w0 > p.ws_budget:
            continue
        if vec_reserve(out, out.n + cnt) != 0:
            s.failed = 1
            return 0
        for k in range(cnt):
            e = &out.data[out.n]
            e.node = c.pool[o + 3 * k]
            e.ws = src[i].ws + w0
            e.pmax = c.pool[o + 3 * k + 2] if c.pool[o + 3 * k + 2] > src[i].pmax \
                else src[i].pmax
            out.n += 1
    if out.n - start > 1:
        dedup(out, start)
    if out.n - start > STEP_MAX_STACKS:
        s.failed = 2
    return out.n - start


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
              I32Vec* acc, const EntryPrune* ep=NULL) noexcept nogil:
    return walk_class(p, s, t, fb, start, init, n_init, max_depth, bits, local, base_pm, cond,
                      exits, acc, NULL, ep)


cdef int walk_class(const Prog* p, Store* s, const TrieC* t, FirstBytes* fb, int32_t start,
                    const Entry* init, int32_t n_init, int32_t max_depth, uint32_t* bits,
                    bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits,
                    I32Vec* acc, const ClassPrune* cp, const EntryPrune* ep=NULL) noexcept nogil:
    """walk, skipping the subtrees of a class slice (cp, from the root of the trie it was
    made for) when cp is not NULL, and those of the entries' classes (ep) when not NULL."""
    cdef WalkBufs wb
    cdef int rc
    if bufs_init(&wb, t.max_len, p) != 0:
        return -1
    wb.cp = cp
    wb.ep = ep
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
    cdef const ClassPrune* cp = wb.cp
    cdef const uint64_t* sub
    cdef bint in_cls
    cdef int32_t k, tok
    # entry classes: a table walk of the trie their arrays describe
    cdef const EntryPrune* ep = wb.ep if wb.ep != NULL and local and t == wb.ep.trie else NULL
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
    frames[0].in_cls = True
    frame_filter(p, s, t, fb, &frames[0], wb.buf.data, start)
    frames[0].ascii_end = start == 0
    frame_entry_class(p, s, t, ep, &frames[0], wb.buf.data, start)
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
        in_cls = False
        if cp != NULL and frames[top].in_cls and (
                (t.byte[x] < 128 and (cp.cls[t.byte[x] >> 6] >> (t.byte[x] & 63)) & 1)
                or (t.byte[x] >= 128 and cp.cls[2])):
            in_cls = True
            sub = cp.sub + 4 * <int64_t> x
            if cp.sub_depth[x] <= cp.max_len and (sub[0] & ~cp.cls[0]) == 0 and \
                    (sub[1] & ~cp.cls[1]) == 0 and \
                    ((cp.sub_plain[x] != 0) if cp.cls[2] else (sub[2] == 0 and sub[3] == 0)):
                continue         # every token below is in the class slice
        if frames[top].dhas:
            sub = ep.sub + 4 * <int64_t> x
            if (sub[0] & ~frames[top].dcls[0]) == 0 and (sub[1] & ~frames[top].dcls[1]) == 0 \
                    and (sub[2] & ~frames[top].dcls[2]) == 0 \
                    and (sub[3] & ~frames[top].dcls[3]) == 0 \
                    and ((sub[2] == 0 and sub[3] == 0) or
                         (frames[top].ascii_end and ep.sub_plain[x] != 0)):
                # every path below is a run of the frame's entry class, which that entry
                # takes at no cost: every token there is accepted (those with an exit too,
                # so their exits need no suffix walk)
                for k in range(t.tok_off[x], t.tok_off[t.end[x]]):
                    tok = t.tok_ids[k]
                    if acc != NULL:
                        i32_push(acc, tok)
                    else:
                        bits[tok >> 5] |= (<uint32_t> 1) << (tok & 31)
                continue
        wb.tmp.n = 0
        if _use_step_cache:
            got = cached_step(wb, p, s, wb.buf.data + frames[top].st_start, frames[top].st_n,
                              t.byte[x], max_depth, &wb.tmp)
        else:
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
            frames[top].in_cls = in_cls
            frame_filter(p, s, t, fb, &frames[top], wb.buf.data + mark, x)
            frames[top].ascii_end = t.byte[x] < 0x80
            frame_entry_class(p, s, t, ep, &frames[top], wb.buf.data + mark, x)
    return -1 if s.failed else 0


cdef int _walk_vocab(TokenTrie trie, const Prog* p, Store* s, FirstBytes* fb,
                     const Entry* init, int32_t n_init, int32_t max_depth, uint32_t* bits,
                     bint local, int32_t base_pm, I32Vec* cond, I32Vec* exits, I32Vec* acc,
                     bint whole=True, const EntryPrune* ep=NULL):
    """Walk the whole vocabulary from init: through its whitespace split (walk_ws) where
    whitespace loops in this state, else the whole trie. Returns 0 after the split, 1 after
    the whole trie (exits then are node ids of `trie`), -1 on failure; with whole=False,
    2 having done nothing where the split exists but does not apply."""
    cdef WalkBufs wb
    cdef int rc = 1
    cdef TokenTrie nows, runs
    split = trie.ws_split()
    if split is not None:
        nows, runs = split
        with nogil:
            if bufs_init(&wb, nows.c.max_len if nows.c.max_len > runs.c.max_len
                         else runs.c.max_len, p) != 0:
                return -1
            rc = walk_ws(&wb, p, s, &nows.c, &runs.c, fb, init, n_init, max_depth, bits,
                         local, base_pm, cond, exits, acc)
            bufs_free(&wb)
        if rc == 1 and not whole:
            return 2
    if rc == 1:
        with nogil:
            rc = walk(p, s, &trie.c, fb, 0, init, n_init, max_depth, bits, local, base_pm,
                      cond, exits, acc, ep)
        if rc == 0:
            rc = 1
    return rc


# when a list, every table built appends (key, seconds, slice depth (with whether the search
# hit its cap, when short), slice used (negative: a class slice), nodes of the walked trie,
# accepted, conditional, exit groups, (search, walk, packing) seconds): what cold masks cost,
# for profiling
TABLE_LOG = None

cdef enum:
    CLASS_BELOW = 8         # positions whose plain slice is shorter try a class slice ...
    CLASS_MIN_DEPTH = 2     # ... and take it when it proves more, and at least this much


NARROW_FIRST_BYTES = 16    # positions with fewer legal first bytes are walked directly ...
DIRECT_VISITS = 1          # ... this many times before their table is built
DIRECT_MAX_STACKS = 4      # ... unless this many stacks of one mask are there: one table and
                           # their joined suffix walks cost less than a walk with all of them


cdef enum:
    RULE_CALLED = 1         # some position calls the rule
    RULE_CALLS = 2          # some position of the rule calls a rule
    RULE_REPEATED = 4       # some call of it returns where the same rule is called again


cdef void _call_facts(int32_t n_pos, const int32_t* pos_rule, const int32_t* rule_start,
                      const int32_t* call_off, const int32_t* call_rule,
                      const int32_t* call_to, uint8_t* rule_flags,
                      uint8_t* pair_start) noexcept nogil:
    """rule_flags[r]: RULE_* bits; pair_start[p] = 1 when p starts a rule that calls nothing
    and one of whose calls returns where the same rule is called again. Two passes over
    the call edges."""
    cdef int32_t p, k, j, r, rule
    for p in range(n_pos):
        if call_off[p + 1] > call_off[p]:
            rule_flags[pos_rule[p]] |= RULE_CALLS
    for p in range(n_pos):
        for k in range(call_off[p], call_off[p + 1]):
            rule = call_rule[k]
            rule_flags[rule] |= RULE_CALLED
            r = call_to[k]
            if r < 0 or r >= n_pos:
                continue
            for j in range(call_off[r], call_off[r + 1]):
                if call_rule[j] == rule:
                    # a level of a length counter (a long counted run of calls): a token
                    # that pops such a frame goes on in a copy of the same rule
                    rule_flags[rule] |= RULE_REPEATED
                    if not rule_flags[rule] & RULE_CALLS:
                        # a repeated item kept as a call (ir.UNROLL_INLINE_MAX): its
                        # frames get pair tables with the frame below
                        pair_start[rule_start[rule]] = 1
                    break


cdef cnp.ndarray _int32_table(object table):
    """table itself when it is a contiguous 1-D int32 array (as the builder makes them), else
    a contiguous int32 copy: no numpy call on the path to the first mask."""
    if type(table) is np.ndarray and cnp.PyArray_NDIM(<cnp.ndarray> table) == 1 \
            and cnp.PyArray_TYPE(<cnp.ndarray> table) == cnp.NPY_INT32 \
            and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray> table):
        return <cnp.ndarray> table
    return np.ascontiguousarray(table, np.int32).reshape(-1)


cdef struct CallFacts:
    uint8_t* rule_flags         # per rule: RULE_* bits
    uint8_t* pair_start         # per position: starts a repeated call-free rule
    int32_t n_rules


cdef int call_facts_init(CallFacts* f, a) except -1:
    """_call_facts of automaton a into freshly allocated arrays (call_facts_free)."""
    cdef int32_t n_pos = a.n_positions
    cdef cnp.ndarray pos_rule = _int32_table(a.pos_rule)
    cdef cnp.ndarray rule_start = _int32_table(a.rule_start)
    cdef cnp.ndarray call_off = _int32_table(a.call_off)
    cdef cnp.ndarray call_rule = _int32_table(a.call_rule)
    cdef cnp.ndarray call_to = _int32_table(a.call_to)
    if cnp.PyArray_DIM(call_off, 0) < n_pos + 1 or cnp.PyArray_DIM(pos_rule, 0) < n_pos:
        raise ValueError("automaton tables shorter than its positions")
    f.n_rules = cnp.PyArray_DIM(rule_start, 0)
    f.rule_flags = <uint8_t*> calloc(max(1, f.n_rules), 1)
    f.pair_start = <uint8_t*> calloc(max(1, n_pos), 1)
    if f.rule_flags == NULL or f.pair_start == NULL:
        raise MemoryError()
    _call_facts(n_pos, <const int32_t*> cnp.PyArray_DATA(pos_rule),
                <const int32_t*> cnp.PyArray_DATA(rule_start),
                <const int32_t*> cnp.PyArray_DATA(call_off),
                <const int32_t*> cnp.PyArray_DATA(call_rule),
                <const int32_t*> cnp.PyArray_DATA(call_to), f.rule_flags, f.pair_start)
    return 0


cdef void call_facts_free(CallFacts* f) noexcept nogil:
    free(f.rule_flags)
    free(f.pair_start)
    f.rule_flags = NULL
    f.pair_start = NULL


def call_facts(a):
    """(rule_flags uint8[R], pair_start uint8[P]) of an automaton (_call_facts): what the
    tables need to know about its calls, in one pass over them (numpy set operations over
    the call edges cost more than the rest of a small grammar's first mask). For tests; the
    tables keep them as C arrays."""
    cdef CallFacts f
    f.rule_flags = f.pair_start = NULL
    try:
        call_facts_init(&f, a)
        n_pos = a.n_positions
        return (np.asarray(<uint8_t[:max(1, f.n_rules)]> f.rule_flags).copy(),
                np.asarray(<uint8_t[:max(1, n_pos)]> f.pair_start).copy())
    finally:
        call_facts_free(&f)


cdef enum:
    BODY_SCANNED = 1
    BODY_EXPANDED = 2
    BODY_BELOW = 4


cdef inline bint _body_byte(uint8_t lo, uint8_t hi) noexcept nogil:
    """Whether the byte range [lo, hi] holds a byte of a string body's plain prefix (see
    string_body): not a C0 control, the quote or the backslash."""
    return hi >= 0x20 and not (lo == hi and (lo == 0x22 or lo == 0x5C))


cdef int string_body(const Prog* p, int32_t q0) noexcept nogil:
    """Whether a lone frame at the byte position q0 reads like the inside of a JSON string:
    after any run of bytes other than C0 controls, the quote and the backslash, no
    configuration takes a C0 byte nor pops q0's frame. Then a token whose first byte among
    C0, quote and backslash is a control is refused from q0, which TokenTrie.string_rest
    leaves out of its trie. 1 if so, 0 if not shown, -1 on failure.

    A static over-approximation of the configurations, over (position, level): level 0 is
    q0's frame, level 1 a frame pushed on the way; a pushed frame that completes returns to
    any position ever pushed below a top (the positions of a closure's chain under its top),
    so the positions scanned include every top the matcher could reach."""
    cdef int32_t n2 = 2 * p.n_pos
    cdef uint8_t* mark = <uint8_t*> calloc(n2, 1)
    cdef I32Vec scan, todo, below
    cdef int32_t x, q, lvl, k, c, s0, e0, j, y, i
    cdef int ok = 1
    cdef bint popped = False
    scan.data = todo.data = below.data = NULL
    scan.n = scan.cap = todo.n = todo.cap = below.n = below.cap = 0
    if mark == NULL:
        return -1
    mark[2 * q0] = BODY_SCANNED
    if i32_push(&scan, 2 * q0) != 0:
        ok = -1
    while ok == 1 and (scan.n or todo.n):
        if todo.n:
            # a frame at x's position (not yet normalised) at x's level
            todo.n -= 1
            x = todo.data[todo.n]
            q = x >> 1
            lvl = x & 1
            for k in range(p.clo_off[q], p.clo_off[q + 1]):
                c = p.clo_chain[k]
                s0 = p.chain_off[c]
                e0 = p.chain_off[c + 1]
                y = 2 * p.chain_pos[s0] + (lvl if e0 - s0 == 1 else 1)
                if not mark[y] & BODY_SCANNED:
                    mark[y] |= BODY_SCANNED
                    if i32_push(&scan, y) != 0:
                        ok = -1
                for j in range(s0 + 1, e0):
                    # the frames under the top: the chain's bottom takes the frame's place
                    y = 2 * p.chain_pos[j] + (lvl if j == e0 - 1 else 1)
                    if mark[y] & BODY_BELOW:
                        continue
                    mark[y] |= BODY_BELOW
                    if i32_push(&below, y) != 0:
                        ok = -1
                    if popped and not mark[y] & BODY_EXPANDED:
                        mark[y] |= BODY_EXPANDED
                        if i32_push(&todo, y) != 0:
                            ok = -1
            if p.clo_pop[q]:
                if lvl == 0:
                    ok = 0           # q0's frame may end inside the run
                elif not popped:
                    popped = True
                    for i in range(below.n):
                        y = below.data[i]
                        if not mark[y] & BODY_EXPANDED:
                            mark[y] |= BODY_EXPANDED
                            if i32_push(&todo, y) != 0:
                                ok = -1
        else:
            # a top: its edges
            scan.n -= 1
            x = scan.data[scan.n]
            q = x >> 1
            lvl = x & 1
            for k in range(p.edge_off[q], p.edge_off[q + 1]):
                if p.edge_lo[k] < 0x20:
                    ok = 0           # a control is taken
                    break
                if not _body_byte(p.edge_lo[k], p.edge_hi[k]):
                    continue
                y = 2 * p.edge_to[k] + lvl
                if not mark[y] & BODY_EXPANDED:
                    mark[y] |= BODY_EXPANDED
                    if i32_push(&todo, y) != 0:
                        ok = -1
    free(mark)
    free(scan.data)
    free(todo.data)
    free(below.data)
    return ok


cdef inline bint _narrow_at(const Prog* p, int32_t q, int32_t below) noexcept nogil:
    """Whether position q's edges take fewer than `below` bytes (structural positions: a
    quote, a brace, a key's first letters)."""
    cdef int32_t k, n = 0
    for k in range(p.edge_off[q], p.edge_off[q + 1]):
        n += p.edge_hi[k] - p.edge_lo[k] + 1
        if n >= below:
            return False
    return True


cdef enum:
    LOOP_CLASS_MIN = 16     # a loop class of fewer plain ASCII bytes is not tried


cdef inline int32_t _edge_on(const Prog* p, int32_t q, int32_t b) noexcept nogil:
    """The target of q's edge on byte b, or -1."""
    cdef int32_t k
    for k in range(p.edge_off[q], p.edge_off[q + 1]):
        if p.edge_lo[k] <= b <= p.edge_hi[k]:
            return p.edge_to[k]
    return -1


cdef void loop_class(const Prog* p, int32_t q, uint64_t* out) noexcept nogil:
    """Into out[0..1]: the plain ASCII bytes on which q steps to the position t that most of
    them reach, among those on which t steps back to t (a class whose runs provably stay in
    t once there; the slice search still proves it from q)."""
    cdef int32_t k, b, t, best_n = 0, n
    cdef uint64_t w[2]
    out[0] = out[1] = 0
    for k in range(p.edge_off[q], p.edge_off[q + 1]):
        t = p.edge_to[k]
        w[0] = w[1] = 0
        n = 0
        for b in range(0x20, 0x7F):
            if b == 0x22 or b == 0x5C:
                continue
            if _edge_on(p, q, b) == t and _edge_on(p, t, b) == t:
                w[b >> 6] |= (<uint64_t> 1) << (b & 63)
                n += 1
        if n > best_n:
            best_n = n
            out[0] = w[0]
            out[1] = w[1]



cdef bint _takes(const Prog* p, int32_t t, int32_t b) noexcept nogil:
    """Whether t has an edge on b, itself or at the top of one of its closure chains (the
    rule a length counter's level calls)."""
    cdef int32_t k
    if _edge_on(p, t, b) >= 0:
        return True
    for k in range(p.clo_off[t], p.clo_off[t + 1]):
        if _edge_on(p, p.chain_pos[p.chain_off[p.clo_chain[k]]], b) >= 0:
            return True
    return False


cdef void chain_class(const Prog* p, int32_t q, uint64_t* out) noexcept nogil:
    """Into out[0..1]: the plain ASCII bytes on which q steps to a position that takes the
    same byte again (the characters of a counted run, `[a-z]{1,64}`, whose every count is a
    new position, so that loop_class finds nothing), without the bytes that end the run (a
    separator such as an email's '.' or '@', on which the slice search would stop at once).
    The slice search still proves the class from q."""
    cdef int32_t b, t
    out[0] = out[1] = 0
    for b in range(0x20, 0x7F):
        if b == 0x22 or b == 0x5C:
            continue
        t = _edge_on(p, q, b)
        if t >= 0 and _takes(p, t, b):
            out[b >> 6] |= (<uint64_t> 1) << (b & 63)


# frames at most in one table: the top one and the counter frames below it (a counter of
# 2^20 characters has 4 levels)
MAX_TABLE_FRAMES = 8


cdef inline int32_t _frame_depth(const Prog* p, int32_t q) noexcept nogil:
    return 1 if q >= 0 and p.pos_flags[q] & FLAG_CONTAINER else 0


cdef int32_t _intern_frames(const Prog* p, Store* s, tuple frames):
    """The stack a local walk starts from: frames at the positions `frames` (bottom first,
    the top last) on the walk's base (NODE_EXIT)."""
    cdef int32_t d = 0
    cdef int32_t node = NODE_EXIT
    for f in frames:
        d += _frame_depth(p, f)
        node = store_intern(s, f, node, d)
    return node


cdef int32_t _frames_depth(const Prog* p, tuple frames):
    cdef int32_t d = 0
    for f in frames:
        d += _frame_depth(p, f)
    return d


cdef class TokenTables:
    """Mask tables of one grammar over one vocabulary (built lazily per position)."""
    cdef Program program
    cdef readonly TokenTrie trie
    cdef readonly dict tables
    cdef object automaton
    cdef object lock
    cdef object _signatures      # RuleSignatures, made when the first table is built
    cdef object seen_once
    cdef int32_t _narrow_below   # NARROW_FIRST_BYTES when the tables were made
    cdef CallFacts calls
    cdef const uint8_t* _rule_flags
    cdef const uint8_t* _pair_start
    cdef object _pos_rule_arr
    cdef const int32_t* _pos_rule
    cdef FirstBytes fb
    cdef SliceMemo memo          # slice depths of lone frames, for the slice search
    cdef EntryClasses ec         # classes of lone frames, for the walks (EntryPrune)
    cdef object _last_depth, _last_slice, _last_walked, _last_times

    def __init__(self, automaton, vocab, Program program=None):
        # everything here is on the path to the first mask: per-position facts are worked
        # out where a mask needs them (_narrow_at, first_bytes), per-call facts in one C pass
        self.automaton = automaton
        self.program = program if program is not None else Program(automaton)
        self.trie = trie_of(vocab)
        self.tables = {}
        self.lock = threading.Lock()
        self._signatures = None
        self.seen_once = {}
        self._narrow_below = NARROW_FIRST_BYTES
        n_pos = automaton.n_positions
        self.fb.bits = <uint64_t*> malloc(max(1, n_pos) * 4 * sizeof(uint64_t))
        self.fb.done = <uint8_t*> calloc(max(1, n_pos), 1)
        if self.fb.bits == NULL or self.fb.done == NULL:
            raise MemoryError()
        sizes = self.trie.slice_sizes()
        if memo_init(&self.memo, sizes[len(sizes) - 1]) != 0:
            raise MemoryError()
        call_facts_init(&self.calls, automaton)
        self._rule_flags = self.calls.rule_flags
        self._pair_start = self.calls.pair_start
        self._pos_rule_arr = _int32_table(automaton.pos_rule)
        self._pos_rule = <const int32_t*> cnp.PyArray_DATA(self._pos_rule_arr)

    @property
    def shared_keys(self):
        """RuleSignatures of the automaton (structural keys of its small rules)."""
        if self._signatures is None:
            self._signatures = RuleSignatures(self.automaton)
        return self._signatures

    cdef EntryClasses* _entry_classes(self) except NULL:
        """The per-position entry classes, allocated when a table build first needs them
        (not on the path to a narrow first mask)."""
        cdef int32_t n_pos
        if self.ec.done == NULL:
            n_pos = max(1, self.automaton.n_positions)
            self.ec.cls = <uint64_t*> malloc(n_pos * 4 * sizeof(uint64_t))
            self.ec.has = <uint8_t*> malloc(n_pos)
            self.ec.row = <int32_t*> malloc(n_pos * sizeof(int32_t))
            self.ec.queue = <int32_t*> malloc(ENTRY_MAX_STATES * sizeof(int32_t))
            self.ec.mark = <uint8_t*> calloc(n_pos * 16, 1)
            if self.ec.cls == NULL or self.ec.has == NULL or self.ec.row == NULL or \
                    self.ec.queue == NULL or self.ec.mark == NULL or \
                    store_init(&self.ec.st, 256) != 0:
                raise MemoryError()
            memset(self.ec.row, 0xFF, n_pos * sizeof(int32_t))
            self.ec.failures = 0
            self.ec.done = <uint8_t*> calloc(n_pos, 1)
            if self.ec.done == NULL:
                raise MemoryError()
        return &self.ec

    def __dealloc__(self):
        free(self.fb.bits)
        free(self.fb.done)
        free(self.ec.cls)
        free(self.ec.has)
        free(self.ec.done)
        free(self.ec.row)
        free(self.ec.rows)
        free(self.ec.queue)
        free(self.ec.mark)
        store_free(&self.ec.st)
        vec_free(&self.ec.out)
        free(self.ec.succ)
        memo_free(&self.memo)
        call_facts_free(&self.calls)

    def shared_positions(self):
        """Positions whose tables are shared across grammars (small self-contained rules)."""
        return self.shared_keys.positions()

    def table(self, int p):
        """The table of a frame at p (built on first need, shared across grammars when p's
        rule is small and self-contained)."""
        t = self.tables.get(p)
        return t if t is not None else self._table(p, (p,))

    def pair_table(self, int q, int p):
        """The table of a frame at p sitting on a frame at q, for p a position of a short rule
        called once per count of a long counted run (a character of a long bounded string, at
        its start or part-way through its bytes):
        alone, nearly every token would leave that rule, and its table would hand almost the
        whole vocabulary to a suffix walk at every mask. Keyed (q, p) in `tables`."""
        key = (q, p)
        t = self.tables.get(key)
        return t if t is not None else self._table(key, key)

    def frames_table(self, tuple frames):
        """The table of frames at the positions `frames` (bottom first, the top last; more
        than two: a pair whose frame is a counter level near its end, with the frames below
        it, see fill). Keyed by `frames` in `tables`."""
        t = self.tables.get(frames)
        return t if t is not None else self._table(frames, frames)

    cdef PosTable _table(self, key, tuple frames):
        cdef PosTable t
        cdef int32_t p = frames[len(frames) - 1]
        with self.lock:
            t = self.tables.get(key)
            if t is not None:
                return t
            skey = self.shared_keys.get(p)
            if skey is not None:
                if len(frames) == 1:
                    skey = (self.trie.node_byte.shape[0], id(self.trie), skey)
                else:
                    # positions of a long counted run farther than the longest token from
                    # its end see the same structure: one table serves them all, across
                    # grammars too (and so do the frames below a counter level's end)
                    horizon = self.trie.c.max_len
                    skey = (self.trie.node_byte.shape[0], id(self.trie), "pair",
                            tuple([self.shared_keys.horizon_key(f, horizon)
                                   for f in frames[:len(frames) - 1]]), skey,
                            self._called(frames[0]))
                t = SHARED_TABLES.get(skey)
            if t is None:
                t = self._compute(frames)
                if skey is not None:
                    t = SHARED_TABLES.put(skey, t)
            self.tables[key] = t
            return t

    cdef int32_t _slice_depth(self, tuple frames, int32_t base_pm,
                              int32_t limit, const uint64_t* cls=NULL,
                              bint* closed=NULL) except -1:
        """Largest d <= limit such that from the frames (bottom first) every sequence of
        plain string characters of at most d bytes keeps the base frame alive with no
        whitespace or depth cost (exact BFS over the automaton configurations, slice_bfs;
        gives up, conservatively, past SLICE_MAX_CONFIGS of them)."""
        cdef Prog prog = self.program.c
        cdef Store store
        cdef int32_t d, start
        prog.ws_budget = -1
        prog.max_depth = 1 << 30
        if store_init(&store, 256) != 0:
            raise MemoryError()
        start = _intern_frames(&prog, &store, frames)
        with nogil:
            d = slice_bfs(&prog, &store, start, base_pm, limit, &self.memo, cls, closed)
        store_free(&store)
        if d < 0:
            raise MemoryError()
        return d

    cdef int32_t _try_class(self, tuple frames, int32_t base_pm, int32_t limit, uint64_t* lc,
                            ClassPrune* cp, int32_t cls_depth) except -1:
        """The ASCII class lc (lc[0..1]) as the frames' class slice when the slice search
        proves it deeper than cls_depth (mixed first: other plain characters in too, else
        ASCII alone), into cp; returns the depth of the class cp holds then."""
        cdef int32_t d2
        if popcount64(lc[0]) + popcount64(lc[1]) < LOOP_CLASS_MIN or \
                (lc[0] == cp.cls[0] and lc[1] == cp.cls[1]):
            return cls_depth
        lc[2] = 1
        lc[3] = 0
        d2 = self._slice_depth(frames, base_pm, limit, lc)
        if d2 < CLASS_MIN_DEPTH:
            lc[2] = 0
            d2 = self._slice_depth(frames, base_pm, limit, lc)
        if d2 <= cls_depth:
            return cls_depth
        cp.cls[0] = lc[0]
        cp.cls[1] = lc[1]
        cp.cls[2] = lc[2]
        cp.cls[3] = 0
        return d2

    def class_depth(self, int p, lo, hi, bint mixed=False):
        """How many bytes of runs over the ASCII class (lo, hi) (mixed: and other plain
        characters) position p provably accepts (tests)."""
        cdef uint64_t cls[4]
        cls[0] = lo
        cls[1] = hi
        cls[2] = mixed
        cls[3] = 0
        sizes = self.trie.slice_sizes()
        base_pm = 1 if self.program.c.pos_flags[p] & FLAG_CONTAINER else 0
        return self._slice_depth((p,), base_pm, sizes[len(sizes) - 1], cls)

    def string_body(self, int q):
        """string_body at position q (tests)."""
        if not 0 <= q < self.automaton.n_positions:
            raise IndexError(q)
        r = string_body(&self.program.c, q)
        if r < 0:
            raise MemoryError()
        return r == 1

    def slice_depth(self, int p):
        """How many bytes of plain string characters position p provably accepts (tests)."""
        sizes = self.trie.slice_sizes()
        base_pm = 1 if self.program.c.pos_flags[p] & FLAG_CONTAINER else 0
        return self._slice_depth((p,), base_pm, sizes[len(sizes) - 1])

    def entry_class(self, int q):
        """The byte set (four 64-bit words) of the class of plain runs a lone frame at q
        provably takes for ever (entry_class; the walks' EntryPrune), or None (tests)."""
        cdef Prog prog = self.program.c
        cdef bint found
        if not 0 <= q < self.automaton.n_positions:
            raise IndexError(q)
        prog.ws_budget = -1
        prog.max_depth = 1 << 30
        with self.lock:
            found = entry_class(&prog, self._entry_classes(), q)
            c = tuple(int(self.ec.cls[4 * q + i]) for i in range(4))
        return c if found else None

    def character_run(self, tuple frames):
        """_character_run (tests): the characters a (count, character) pair takes at most,
        or -1 where its table is walked the general way."""
        return self._character_run(frames)

    cdef int32_t _character_run(self, tuple frames):
        """For frames (counter levels..., q, p) whose top p starts a string character of a
        class (char_in, its frame kept: RuleSignatures.character_class), called along a run of
        q's rule that only closes with the quote (a bounded string's count): how many
        characters the frames take at most (capped at the longest plain token), else -1."""
        cdef Py_ssize_t nf = len(frames)
        if not _use_character_runs or nf < 2:
            return -1
        cdef int32_t q = frames[nf - 2], p = frames[nf - 1]
        cdef int32_t r = self._pos_rule[p]
        if p != self.program.c.rule_start[r] or self.shared_keys.character_class(r) is None:
            return -1
        cdef int32_t cap = self.trie.longest_plain_chars()
        cdef int32_t n = self.shared_keys.character_run(frames[:nf - 2], q, r, cap)
        return -1 if n < 0 else min(cap, n + 1)      # the character p starts, then n more

    cdef PosTable _compute(self, tuple frames):
        """The table of frames at the positions `frames` (bottom first, the top last)."""
        if TABLE_LOG is None:
            return self._compute_table(frames)
        t0 = time.perf_counter()
        t = self._compute_table(frames)
        TABLE_LOG.append((frames, time.perf_counter() - t0,
                          (self._last_depth, bfs_capped()) if self._last_depth < 32 else self._last_depth,
                          self._last_slice,
                          self._last_walked, t.n_accepted, t.n_cond, t.n_groups,
                          self._last_times))
        return t

    cdef PosTable _compute_table(self, tuple frames):
        cdef PosTable t
        cdef int32_t p = frames[len(frames) - 1]
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
        base_pm = _frames_depth(&prog, frames)
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
        # the frames sit on the walk's base (NODE_EXIT): popping the bottom one is an exit
        init.data[0].node = _intern_frames(&prog, &store, frames)
        init.data[0].ws = 0
        init.data[0].pmax = 0
        init.n = 1
        # a frame that is always the bottom of the stack (a root nobody calls) has no frame
        # below it to continue in: its exits are never walked, so don't record them
        cdef I32Vec* exits_p = &exits if self._called(frames[0]) else NULL
        # slices (llguidance's idea, made exact): when p provably accepts every run of plain
        # string characters up to K bytes, all such tokens are in without a walk, and only the
        # trie of the other tokens is walked
        cdef TokenTrie walked = self.trie
        sizes = self.trie.slice_sizes()
        # a narrow position (few first bytes) never admits the ~90 plain first bytes
        t_0 = time.perf_counter()
        cdef bint narrow = _narrow_at(&prog, p, self._narrow_below)
        # a bounded string's character: plain tokens are decided by their character count,
        # controls refused, and only the trie of the others (quotes, escapes) is walked
        cdef int32_t run = -1 if narrow else self._character_run(frames)
        cdef bint closed = False, body = False
        depth = 0
        if not narrow and run < 0:
            depth = self._slice_depth(frames, base_pm, sizes[len(sizes) - 1], NULL, &closed)
        # inside a string of any length (an unbounded string, an open object's key): every
        # plain token is in, those with a control before any quote or backslash out, and only
        # the ~3k-node trie of the others is walked (string_rest), not the ~13k nodes left
        # beside the longest slice
        if _use_string_bodies and closed and len(frames) == 1 and \
                depth == sizes[len(sizes) - 1]:
            rc = string_body(&prog, p)
            if rc < 0:
                raise MemoryError()
            body = rc == 1
        t_1 = time.perf_counter()
        fitting = [k for k in sizes if k <= depth]
        self._last_depth = depth
        self._last_slice = fitting[len(fitting) - 1] if fitting else 0
        self._last_walked = self.trie.slice(self._last_slice)[1].n_nodes if fitting \
            else self.trie.n_nodes
        cdef TokenTrie runs = None
        cdef ClassPrune cp
        cdef const uint64_t* fbp
        cdef int32_t cls_depth = 0
        cdef uint64_t lc[4]
        cdef cnp.ndarray sub, sub_depth, sub_plain
        cdef EntryPrune ep
        cdef EntryPrune* ep_p = NULL
        cdef bint plain_class = False
        if _use_entry_classes and run < 0 and not narrow and not body:
            sub, sub_depth, sub_plain = self.trie.class_prune()
            ep.trie = &self.trie.c
            ep.sub = <const uint64_t*> cnp.PyArray_DATA(sub)
            ep.sub_plain = <const uint8_t*> cnp.PyArray_DATA(sub_plain)
            ep.ec = self._entry_classes()
            ep.base_pm = base_pm
            ep_p = &ep
        if run < 0 and not narrow and not body and \
                (not fitting or fitting[len(fitting) - 1] < CLASS_BELOW):
            # class slices: a string of a restricted ASCII class (a pattern such as
            # `^[a-z0-9.-]+$` or `^[^,]+$`) takes no plain slice; try its first bytes' class
            fbp = first_bytes(&prog, &self.fb, p)
            cp.cls[0] = fbp[0] & PLAIN_ASCII_LO
            cp.cls[1] = fbp[1] & PLAIN_ASCII_HI
            cp.cls[2] = cp.cls[3] = 0
            if cp.cls[0] or cp.cls[1]:
                # mixed first (`[^,]`: other characters in too), else ASCII alone (`\\S`
                # refuses some non-ASCII spaces); every plain ASCII byte with the others in
                # is the plain slice, which failed: then ASCII alone (a key's first character
                # of printable ASCII, the rest called)
                full = cp.cls[0] == PLAIN_ASCII_LO and cp.cls[1] == PLAIN_ASCII_HI
                if not full:
                    cp.cls[2] = 1
                    cls_depth = self._slice_depth(frames, base_pm, sizes[len(sizes) - 1],
                                                  cp.cls)
                if full or cls_depth < CLASS_MIN_DEPTH:
                    cp.cls[2] = 0
                    cls_depth = self._slice_depth(frames, base_pm, sizes[len(sizes) - 1], cp.cls)
            if cls_depth < CLASS_BELOW and _use_loop_class:
                # the bytes on which p steps into a state that loops on them (the literal
                # characters of a regex-syntax or pattern DFA, whose first bytes also take
                # the characters that change state): without a class such a state's first
                # visit walks the whole trie
                loop_class(&prog, p, lc)
                cls_depth = self._try_class(frames, base_pm, sizes[len(sizes) - 1], lc, &cp,
                                            cls_depth)
            if cls_depth < CLASS_BELOW and _use_loop_class:
                # the bytes on which p steps to a position that takes them again (a counted
                # run's characters, each count a new position: an email's local part)
                chain_class(&prog, p, lc)
                cls_depth = self._try_class(frames, base_pm, sizes[len(sizes) - 1], lc, &cp,
                                            cls_depth)
        if ep_p != NULL and fitting and fitting[len(fitting) - 1] < CLASS_BELOW and \
                not (cls_depth > depth and cls_depth >= CLASS_MIN_DEPTH):
            # a short plain slice leaves nearly the whole trie to walk: walk the whole trie
            # with the slice as a class slice (the same tokens but DEL's), where the entry
            # classes apply (their arrays describe the whole trie)
            plain_class = True
            cp.cls[0] = PLAIN_ASCII_LO
            cp.cls[1] = PLAIN_ASCII_HI
            cp.cls[2] = 1
            cp.cls[3] = 0
            cls_depth = fitting[len(fitting) - 1]
        if run >= 0:
            bits = self.trie.char_slice(
                run, *self.shared_keys.character_class(self._pos_rule[p])).copy()
            bits_p = <uint32_t*> cnp.PyArray_DATA(bits)
            acc_p = NULL
            walked = self.trie.string_rest()
            self._last_slice = ("chars", run)
            self._last_walked = walked.n_nodes
            with nogil:
                rc = walk(&prog, &store, &walked.c, &self.fb, 0, init.data, 1, 1 << 30, bits_p,
                          True, base_pm, &cond, exits_p, acc_p)
        elif body:
            bits = self.trie.char_slice(self.trie.longest_plain_chars()).copy()
            bits_p = <uint32_t*> cnp.PyArray_DATA(bits)
            acc_p = NULL
            walked = self.trie.string_rest()
            self._last_slice = ("body",)
            self._last_walked = walked.n_nodes
            with nogil:
                rc = walk(&prog, &store, &walked.c, &self.fb, 0, init.data, 1, 1 << 30, bits_p,
                          True, base_pm, &cond, exits_p, acc_p)
        elif plain_class or (cls_depth > depth and cls_depth >= CLASS_MIN_DEPTH):
            bits = self.trie.class_slice(cp.cls[0], cp.cls[1], cls_depth, cp.cls[2] != 0).copy()
            bits_p = <uint32_t*> cnp.PyArray_DATA(bits)
            acc_p = NULL
            sub, sub_depth, sub_plain = self.trie.class_prune()
            cp.sub = <const uint64_t*> cnp.PyArray_DATA(sub)
            cp.sub_depth = <const int32_t*> cnp.PyArray_DATA(sub_depth)
            cp.sub_plain = <const uint8_t*> cnp.PyArray_DATA(sub_plain)
            cp.max_len = cls_depth
            self._last_slice = -cls_depth
            with nogil:
                rc = walk_class(&prog, &store, &self.trie.c, &self.fb, 0, init.data, 1, 1 << 30,
                                bits_p, True, base_pm, &cond, exits_p, acc_p, &cp, ep_p)
        elif fitting:
            slice_bits, walked = self.trie.slice(fitting[len(fitting) - 1])
            bits = slice_bits.copy()
            bits_p = <uint32_t*> cnp.PyArray_DATA(bits)
            acc_p = NULL
            with nogil:
                rc = walk(&prog, &store, &walked.c, &self.fb, 0, init.data, 1, 1 << 30, bits_p,
                          True, base_pm, &cond, exits_p, acc_p)
        else:
            rc = _walk_vocab(self.trie, &prog, &store, &self.fb, init.data, 1, 1 << 30, bits_p,
                             True, base_pm, &cond, exits_p, acc_p, True, ep_p)
            if rc == 0:                  # through the whitespace split: exits in both tries
                walked, runs = self.trie.ws_split()
            elif rc == 1:                # the whole trie
                rc = 0
        store_free(&store)
        vec_free(&init)
        t_2 = time.perf_counter()
        try:
            if rc != 0:
                raise MemoryError("mask table computation failed")
            t = make_table(walked, bits, &acc, &cond, &exits, n_words, runs)
            self._last_times = (t_1 - t_0, t_2 - t_1, time.perf_counter() - t_2)
            t.n_frames = len(frames)
            return t
        finally:
            free(acc.data)
            free(cond.data)
            free(exits.data)

    cdef inline bint _called(self, int32_t q) noexcept:
        """Whether some position calls q's rule (else its frame is always a stack's bottom)."""
        return (self._rule_flags[self._pos_rule[q]] & RULE_CALLED) != 0

    cdef inline bint _repeated(self, int32_t q) noexcept:
        """Whether q's rule is a counter level (RULE_REPEATED)."""
        return (self._rule_flags[self._pos_rule[q]] & RULE_REPEATED) != 0

    cdef tuple _counter_frames(self, Matcher m, int32_t below, int32_t p):
        """The positions of the frames from `below` down while a token can pop them and
        they are counter levels (at most MAX_TABLE_FRAMES with p), bottom first, then p."""
        cdef int32_t node = below, q
        cdef const int64_t* short_len = self.program.c.short_len
        cdef int64_t spent = short_len[p]     # at most 8 INF lengths: no overflow
        out = [p]
        while True:
            q = m.store.pos[node]
            out.append(q)
            spent += short_len[q]
            node = m.store.parent[node]
            if node < 0 or spent > self.trie.c.max_len or not self._repeated(q) \
                    or len(out) >= MAX_TABLE_FRAMES:
                break
        out.reverse()
        return tuple(out)

    def fill(self, Matcher m, out):
        cdef cnp.ndarray arr = out
        # C-level checks: numpy's dtype comparison and flags objects cost more than a
        # first mask's walk when their code is out of the caches
        if cnp.PyArray_TYPE(arr) != cnp.NPY_INT32 or not cnp.PyArray_ISNOTSWAPPED(arr) \
                or cnp.PyArray_NDIM(arr) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(arr) \
                or not cnp.PyArray_ISWRITEABLE(arr):
            raise TypeError("fill_mask needs a writable contiguous 1-D numpy int32 array")
        if cnp.PyArray_DIM(arr, 0) < self.trie.n_words:
            raise ValueError(f"mask needs at least {self.trie.n_words} int32 words, got {arr.shape[0]}")
        cdef int32_t n = m.cur.n
        cdef int32_t i, node
        if m.terminated:             # after EOS nothing may follow
            memset(cnp.PyArray_DATA(arr), 0, cnp.PyArray_DIM(arr, 0) * sizeof(uint32_t))
            return
        tabs = []
        cdef int32_t p, q
        cdef const int64_t* short_len = self.program.c.short_len
        crowded = None
        if n >= DIRECT_MAX_STACKS:
            # the tops several stacks share (an ambiguous schema's alternatives)
            crowded = {}
            for i in range(n):
                node = m.cur.data[i].node
                if node >= 0:
                    p = m.store.pos[node]
                    crowded[p] = crowded.get(p, 0) + 1
        for i in range(n):
            node = m.cur.data[i].node
            if node < 0:
                tabs.append(None)
                continue
            p = m.store.pos[node]
            # a frame anywhere in a pair rule (mid-character too: alone its table would hand
            # every token that completes the character to a suffix walk with the stack)
            if self._pair_start[self.program.c.rule_start[self._pos_rule[p]]] and \
                    m.store.parent[node] >= 0:
                below = m.store.parent[node]
                q = m.store.pos[below]
                if self._repeated(q) and \
                        short_len[p] + short_len[q] <= self.trie.c.max_len:
                    # a counter level that a token can leave: the frames below go in too
                    t = self.tables.get(self._counter_frames(m, below, p))
                    tabs.append(t if t is not None else
                                self.frames_table(self._counter_frames(m, below, p)))
                    continue
                t = self.tables.get((q, p))
                tabs.append(t if t is not None else self.pair_table(q, p))
                continue
            t = self.tables.get(p)
            if t is None and _narrow_at(&self.program.c, p, self._narrow_below) and \
                    (crowded is None or crowded[p] < DIRECT_MAX_STACKS):
                # a position with few first bytes: walking the trie directly costs ~10x less
                # than building its table, so the table comes only once it has been visited
                # DIRECT_VISITS times (or met by DIRECT_MAX_STACKS stacks at once)
                seen = self.seen_once.get(p, 0)
                if seen < DIRECT_VISITS:
                    self.seen_once[p] = seen + 1
                    tabs.append(False)
                    continue
            tabs.append(t if t is not None else self.table(p))
        _fill(self, m, tabs, <uint32_t*> cnp.PyArray_DATA(arr), cnp.PyArray_DIM(arr, 0))


cdef struct SuffixWalks:
    # the exit groups' suffix walks of one mask, one per suffix trie: the stacks that reach
    # the same trie (the same table's group: stacks with one top and different frames below,
    # as an ambiguous schema leaves) are walked together, their entries joined
    const TrieC** tries
    EntryVec* entries
    int32_t n
    int32_t cap


cdef EntryVec* suffix_entries(SuffixWalks* sw, const TrieC* trie) noexcept nogil:
    """The entries pending for trie's walk (a new empty set the first time), NULL on
    allocation failure."""
    cdef int32_t k, cap
    cdef const TrieC** nt
    cdef EntryVec* ne
    for k in range(sw.n):
        if sw.tries[k] == trie:
            return &sw.entries[k]
    if sw.n == sw.cap:
        cap = 2 * sw.cap if sw.cap else 8
        nt = <const TrieC**> realloc(sw.tries, cap * sizeof(TrieC*))
        if nt == NULL:
            return NULL
        sw.tries = nt
        ne = <EntryVec*> realloc(sw.entries, cap * sizeof(EntryVec))
        if ne == NULL:
            return NULL
        sw.entries = ne
        sw.cap = cap
    sw.tries[sw.n] = trie
    sw.entries[sw.n].data = NULL
    sw.entries[sw.n].n = sw.entries[sw.n].cap = 0
    sw.n += 1
    return &sw.entries[sw.n - 1]


cdef enum:
    SUFFIX_DEDUP_MAX = 512      # joined entries past this are walked without deduplication


cdef _fill(TokenTables tt, Matcher m, list tabs, uint32_t* out, Py_ssize_t n_out_words):
    cdef const Prog* p = &m.program.c
    cdef int32_t n = m.cur.n
    cdef int32_t i, g, k, node, parent, headroom, remaining, q, base, ws
    cdef int32_t n_words = tt.trie.n_words
    cdef bint accepting = False
    cdef PosTable t
    cdef EntryVec direct
    cdef EntryVec* pend
    cdef SuffixWalks sw
    cdef int rc = 0
    cdef int32_t tok
    cdef const int32_t* eos_p
    direct.data = NULL
    direct.n = direct.cap = 0
    sw.tries = NULL
    sw.entries = NULL
    sw.n = sw.cap = 0
    cdef bint fresh
    ored = None
    memset(out, 0, n_out_words * sizeof(uint32_t))
    for i in range(n):
        node = m.cur.data[i].node
        if node < 0:
            accepting = True
            continue
        if tabs[i] is False:
            # walked below, together with the other stacks walked directly
            if vec_reserve(&direct, direct.n + 1) != 0:
                rc = -1
                break
            direct.data[direct.n] = m.cur.data[i]
            direct.n += 1
            continue
        t = <PosTable> tabs[i]
        parent = m.store.parent[node]
        for k in range(t.n_frames - 1):     # a pair's (or counter's) exits go on below all
            parent = m.store.parent[parent]
        headroom = p.max_depth - (m.store.depth[parent] if parent >= 0 else 0)
        remaining = (p.ws_budget - m.cur.data[i].ws) if p.ws_budget >= 0 else (1 << 30)
        # a table's unconditional tokens once per mask, however many stacks share it
        fresh = True
        if n > 1:
            if ored is None:
                ored = set()
            fresh = id(t) not in ored
            ored.add(id(t))
        with nogil:
            if not fresh:
                pass
            elif t.bits_p != NULL:
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
                    pend = suffix_entries(&sw, &t.g_trie[g])
                    if pend == NULL:
                        rc = -1
                        break
                    ws = m.cur.data[i].ws + t.g_ws[g]
                    expand(p, &m.store, m.store.pos[parent], m.store.parent[parent], ws, 0,
                           p.max_depth, pend)
                    if m.store.failed:
                        rc = -1
                        break
        if rc != 0:
            break
    # the suffix walks, one per trie with the entries of every stack that reached it (a real
    # walk sets the bits of the tokens some entry takes: the union of the stacks' walks)
    for k in range(sw.n):
        if rc == 0 and sw.entries[k].n:
            with nogil:
                if sw.entries[k].n <= SUFFIX_DEDUP_MAX:
                    dedup(&sw.entries[k], 0)
                rc = walk(p, &m.store, sw.tries[k], &tt.fb, 0, sw.entries[k].data,
                          sw.entries[k].n, p.max_depth, out, False, 0, NULL, NULL, NULL)
        vec_free(&sw.entries[k])
    free(sw.tries)
    free(sw.entries)
    if rc == 0 and direct.n:
        # one walk of the vocabulary from all of them (the union of their masks), not one
        # per stack: a document's first mask has several stacks at narrow positions (the
        # leading whitespace, the value's first bytes), and most tokens die at the first byte
        # for all of them alike. Unless whitespace loops in the union (it does where it loops
        # for each), one walk each: a stack whose whitespace loops walks the rests of the
        # whitespace-led tokens once per run length, and the whole trie would walk every run
        rc = _walk_vocab(tt.trie, p, &m.store, &tt.fb, direct.data, direct.n, p.max_depth, out,
                         False, 0, NULL, NULL, NULL, direct.n == 1)
        if rc == 2:
            rc = 0
            for i in range(direct.n):
                rc = _walk_vocab(tt.trie, p, &m.store, &tt.fb, &direct.data[i], 1, p.max_depth,
                                 out, False, 0, NULL, NULL, NULL)
                if rc == 1:
                    rc = 0
                if rc != 0:
                    break
        if rc == 1:
            rc = 0
    vec_free(&direct)
    if rc != 0 or m.store.failed:
        m.store.failed = 0
        raise MemoryError("mask computation failed")
    if accepting:
        eos = <cnp.ndarray> tt.trie.eos_ids
        eos_p = <const int32_t*> cnp.PyArray_DATA(eos)
        for k in range(cnp.PyArray_DIM(eos, 0)):
            tok = eos_p[k]
            out[tok >> 5] |= (<uint32_t> 1) << (tok & 31)
