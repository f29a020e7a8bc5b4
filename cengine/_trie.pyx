# cython: language_level=3
# Design: the vocabulary is a flat token trie in depth-first order (byte, subtree end,
# tokens ending here), so refusing a byte skips a whole subtree with one index jump; nodes
# with many children also carry a byte -> child table. One trie per vocabulary (trie_of),
# shared by every grammar, with what the mask derives from the vocabulary alone:
#   * suffix tries: the subtrees below a set of nodes merged into one trie keyed by the
#     remaining bytes (where a position's frame pops inside tokens, see _tables.pyx);
#     memoised, since the same exit sets recur across positions and grammars;
#   * slices (llguidance's idea): the plain-string tokens of at most K bytes as a bitset, and
#     the trie of every other token; _mask.pyx proves which positions take such runs;
#   * class slices: the tokens of a set of ASCII bytes (TokenTrie.class_slice), and per node
#     the bytes below it (class_prune), so a walk skips subtrees wholly in such a slice;
#   * the whitespace split: tokens that start with JSON whitespace as (run length, rest), so
#     a state where whitespace loops walks each rest once per run length (ws_split).
# Building is Python and numpy (once per vocabulary); the suffix-trie merge is a nogil kernel.
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t
cimport numpy as cnp
import threading
import numpy as np
cimport cython

cnp.import_array()

WS_BYTES = frozenset(b" \t\n\r")


# a 64-bit word of ASCII code points, all in (TokenTrie.char_slice's default class)
ALL_ASCII_WORD = (1 << 64) - 1


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


cdef int trie_from_arrays(TrieC* t, tuple arrs) except -1:
    """Point t at trie arrays (byte, end, tok_off, tok_ids, depth, max_len, big, child_tab),
    the tuple _build_trie_arrays and _suffix_trie return; the caller keeps them alive."""
    byte, end, tok_off, tok_ids, _, max_len, big, child_tab = arrs
    t.byte = <const uint8_t*> cnp.PyArray_DATA(byte)
    t.end = <const int32_t*> cnp.PyArray_DATA(end)
    t.tok_off = <const int32_t*> cnp.PyArray_DATA(tok_off)
    t.tok_ids = <const int32_t*> cnp.PyArray_DATA(tok_ids)
    t.big = <const int32_t*> cnp.PyArray_DATA(big)
    t.child_tab = <const int32_t*> cnp.PyArray_DATA(child_tab)
    t.n_nodes = byte.shape[0]
    t.max_len = max_len
    return 0


cdef class TokenTrie:
    """Flat DFS token trie of one vocabulary (shared by every grammar; fields in _trie.pxd)."""

    def __init__(self, tokens, eos_ids, keep=None, items=None):
        """The trie of the tokens (those with keep[i], when given), or of ready `items`
        (sorted (bytes, [ids]) pairs; the whitespace-run trie uses that)."""
        self.tokens = tokens
        self._slices = {}
        self._plain_len = None
        self._slice_sizes = None
        self._suffix_memo = {}
        self._ws_split = False
        self._prune = None
        self._ascii = None
        self._class_slices = {}
        self._plain_chars = None
        self._longest_chars = -1
        self._char_slices = {}
        self._char_all = None
        self._string_rest = None
        if items is None:
            groups = {}
            for i, data in enumerate(tokens):
                if data and (keep is None or keep[i]):
                    groups.setdefault(bytes(data), []).append(i)
            items = sorted(groups.items())
        arrs = _build_trie_arrays(items)
        (self.node_byte, self.node_end, self.tok_off, self.tok_ids, self.node_depth,
         _, self.node_big, self.child_tab) = arrs
        trie_from_arrays(&self.c, arrs)
        self.vocab_size = len(tokens)
        self.n_words = (len(tokens) + 31) // 32
        self.eos_ids = np.asarray(sorted(eos_ids), np.int32)

    @property
    def n_nodes(self):
        return self.c.n_nodes

    def suffix_trie(self, bytes exit_nodes, TokenTrie runs=None):
        """_suffix_trie, memoised: the same exit sets recur across positions and grammars
        (every object-closing position exits at the same `}` nodes, every number's start at
        the nodes of its digits). exit_nodes: the node ids, sorted and distinct, as native
        int32 bytes (the memo's key as they are: a number's start has a thousand, which as a
        tuple cost more to make and hash than the rest of its table). Node ids from n_nodes
        on are nodes of `runs` (the whitespace-run trie of ws_split())."""
        arrs = self._suffix_memo.get(exit_nodes, False)
        if arrs is False:
            n = self.c.n_nodes
            nodes = np.frombuffer(exit_nodes, np.int32)
            sources = [(self, nodes[nodes < n].tolist())]
            if runs is not None:
                sources.append((runs, (nodes[nodes >= n] - n).tolist()))
            arrs = _suffix_trie(sources)
            if len(self._suffix_memo) > 65536:
                self._suffix_memo.clear()
            self._suffix_memo[exit_nodes] = arrs
        return arrs

    def plain_lengths(self):
        """Per token: its byte length if its bytes are plain string characters followed by at
        most one incomplete one (a prefix of such a run: the slice search of _slices.pyx
        proves every such prefix, character boundaries or not), else -1. Plain: valid UTF-8,
        no quote, backslash or C0 control, and not U+2028 or U+2029 (a regex `.` refuses
        those two, and without them patterns such as `^.*\\.md$` take slices too)."""
        if self._plain_len is None:
            out = np.full(len(self.tokens), -1, np.int32)
            for i, data in enumerate(self.tokens):
                if data and plain_prefix(data):
                    out[i] = len(data)
            self._plain_len = out
        return self._plain_len

    def plain_chars(self):
        """Per token: its character count when plain_lengths counts it (an incomplete last
        character counts one), else -1."""
        if self._plain_chars is None:
            plain = self.plain_lengths()
            out = np.full(len(self.tokens), -1, np.int32)
            ids = np.flatnonzero(plain > 0)
            if ids.shape[0]:
                data = np.frombuffer(b"".join([bytes(self.tokens[i]) for i in ids]), np.uint8)
                starts = np.concatenate([[0], np.cumsum(plain[ids])[:ids.shape[0] - 1]])
                # a character starts at every byte that is not a continuation byte
                out[ids] = np.add.reduceat(((data & 0xC0) != 0x80).astype(np.int32), starts)
            self._plain_chars = out
        return self._plain_chars

    def char_slice(self, int n, lo=ALL_ASCII_WORD, hi=ALL_ASCII_WORD, bint mixed=True):
        """Bitset of the plain tokens of 1 to n characters whose characters are all in a class
        (eos never in): ASCII code points (lo, hi) (64-bit words), and with mixed every other
        plain character, else none. What a run of n more characters of a JSON string of that
        class takes without a walk (see string_rest); the default class is every character."""
        n = min(n, self.longest_plain_chars())
        if self._char_all is not None and mixed and int(lo) == ALL_ASCII_WORD and \
                int(hi) == ALL_ASCII_WORD:
            return self._char_all[n]
        key = ("chars", n, int(lo), int(hi), mixed)
        bits = self._char_slices.get(key)
        if bits is None:
            chars = self.plain_chars()
            inside = (chars > 0) & (chars <= n)
            if int(lo) != ALL_ASCII_WORD or int(hi) != ALL_ASCII_WORD:
                inside &= self._in_ascii_class(lo, hi)
            if not mixed:
                inside &= ~self.ascii_masks()[2]
            bits = self._bitset(inside)
            if len(self._char_slices) >= 1024:
                self._char_slices.clear()
            self._char_slices[key] = bits
        return bits

    def warm_char_slices(self):
        """Make char_slice's bitsets of the default class for every count at once (a row
        each, ~16 KB for llama-bpe, 2 MB in all): made one by one each cost ~130 µs on the
        first mask of its count, and a long bounded string meets every count near its end."""
        if self._char_all is None:
            chars = self.plain_chars().copy()
            if self.eos_ids.shape[0]:
                chars[self.eos_ids] = -1
            longest = self.longest_plain_chars()
            exact = np.zeros((longest + 1, self.n_words), np.uint32)
            ids = np.flatnonzero(chars > 0)
            np.bitwise_or.at(exact, (chars[ids], ids >> 5),
                             np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
            self._char_all = np.bitwise_or.accumulate(exact, axis=0)
            self._char_all.setflags(write=False)
        return self._char_all

    def longest_plain_chars(self):
        """The most characters of a plain token (at least 1)."""
        if self._longest_chars < 0:
            chars = self.plain_chars()
            self._longest_chars = max(1, int(chars.max())) if chars.shape[0] else 1
        return self._longest_chars

    def _in_ascii_class(self, lo, hi):
        """Per token: whether its ASCII bytes all lie in the class (lo, hi) (64-bit words)."""
        tlo, thi, _ = self.ascii_masks()
        return ((tlo & ~np.uint64(lo)) == 0) & ((thi & ~np.uint64(hi)) == 0)

    def _bitset(self, inside):
        """The vocabulary bitset (uint32 words) of the tokens marked in `inside`; eos is cleared
        in `inside` itself (slice's rest trie keeps it)."""
        if self.eos_ids.shape[0]:
            inside[self.eos_ids] = False
        return np.packbits(np.concatenate([inside, np.zeros(self.n_words * 32 - inside.shape[0], bool)]),
                           bitorder="little").view(np.uint32).copy()

    def string_rest(self):
        """Trie of the tokens a run of any JSON string characters decides only by a walk: those
        that are not plain (plain_lengths) and do not meet a C0 control before any quote or
        backslash. Inside such a run a plain token is taken when the run has room for its
        characters (char_slice), and a token whose first byte of C0, quote and backslash is a
        control is refused (JSON strings hold no raw controls): neither needs the walk."""
        if self._string_rest is None:
            plain = self.plain_lengths()
            keep = plain <= 0
            for i in np.flatnonzero(keep):
                data = self.tokens[i]
                for b in data:
                    if b < 0x20:
                        keep[i] = False
                        break
                    if b == 0x22 or b == 0x5C:
                        break
            if self.eos_ids.shape[0]:
                keep[self.eos_ids] = True
            self._string_rest = TokenTrie(self.tokens, self.eos_ids.tolist(), keep=keep)
        return self._string_rest

    def slice_sizes(self):
        """Byte lengths K of the slices kept: tokens of plain characters of at most K bytes.

        Capped at 32: longer plain tokens are rare (the trie of the others is ~14k nodes at
        K=32 against ~12k at K=128 for llama-bpe), while proving a position accepts longer runs
        costs a BFS level per byte wherever a counter (maxLength) is involved. The sizes
        between serve bounded strings near their end (for llama-bpe the trie of the others
        has 145k nodes at K=8, 55k at K=12, 27k at K=16, 16k at K=24); the small ones (2 to 7)
        the last characters, where without a slice the first mask at each remaining length
        walked the whole trie (11 ms with 7 left, 24 ms under load; 5 ms with them)."""
        if self._slice_sizes is None:
            longest = int(self.plain_lengths().max())
            self._slice_sizes = [k for k in (2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 32)
                                 if k <= longest] \
                or [max(longest, 1)]
        return self._slice_sizes

    def slice(self, int k):
        """(bitset of the plain tokens of at most k bytes, trie of every other token)."""
        s = self._slices.get(k)
        if s is None:
            plain = self.plain_lengths()
            inside = (plain > 0) & (plain <= k)
            bits = self._bitset(inside)
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

    @cython.wraparound(True)
    @cython.boundscheck(True)
    def class_prune(self):
        """(bytes[n, 4] uint64, depth[n] int32, plain[n] uint8): per node, the bytes on the
        nodes of its subtree (itself included), the deepest node there, and whether every
        path there is a prefix of plain characters (TokenTrie.plain_lengths' class). A walk whose path so far is in
        an ASCII class skips a child whose whole subtree is in the class and no deeper than
        the class slice: every token there is in the slice (class_slice)."""
        if self._prune is None:
            n = self.c.n_nodes
            byte = self.node_byte.astype(np.int64)
            end = self.node_end
            depth = self.node_depth
            parent = np.full(n, -1, np.int64)
            stack = [0]
            for i in range(1, n):
                while end[stack[-1]] <= i:
                    stack.pop()
                parent[i] = stack[-1]
                stack.append(i)
            sub = np.zeros((n, 4), np.uint64)
            idx = np.arange(1, n)
            sub[idx, byte[1:] >> 6] = np.left_shift(np.uint64(1), (byte[1:] & 63).astype(np.uint64))
            sub_depth = depth.astype(np.int32).copy()
            by_depth = np.argsort(depth, kind="stable")
            starts = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
            for d in range(int(depth.max()), 0, -1):
                nodes = by_depth[starts[d]:starts[d + 1]]
                np.bitwise_or.at(sub, parent[nodes], sub[nodes])
                np.maximum.at(sub_depth, parent[nodes], sub_depth[nodes])
            # per node: whether its path is a prefix of plain characters (the plain class of
            # _slices.pyx, incomplete last character allowed), then whether all of its
            # subtree's paths are
            from cengine._slices import u8_next
            u = np.zeros(n, np.int8)
            plain = np.zeros(n, np.uint8)
            plain[0] = 1
            bl = self.node_byte.tolist()
            pl = parent.tolist()
            for i in range(1, n):
                j = pl[i]
                if plain[j]:
                    nu = u8_next(u[j], bl[i])
                    if nu >= 0:
                        plain[i] = 1
                        u[i] = nu
            sub_plain = plain.copy()
            for d in range(int(depth.max()), 0, -1):
                nodes = by_depth[starts[d]:starts[d + 1]]
                np.minimum.at(sub_plain, parent[nodes], sub_plain[nodes])
            self._prune = (sub, sub_depth, sub_plain)
        return self._prune

    @cython.wraparound(True)
    @cython.boundscheck(True)
    def ascii_masks(self):
        """(lo, hi uint64 per token: the ASCII bytes it holds; whether it holds any other)."""
        if self._ascii is None:
            lo = np.zeros(len(self.tokens), np.uint64)
            hi = np.zeros(len(self.tokens), np.uint64)
            other = np.zeros(len(self.tokens), bool)
            for i, data in enumerate(self.tokens):
                a = 0
                for b in set(data):
                    if b >= 128:
                        other[i] = True
                    else:
                        a |= 1 << b
                lo[i] = a & 0xFFFFFFFFFFFFFFFF
                hi[i] = a >> 64
            self._ascii = (lo, hi, other)
        return self._ascii[:3]

    def class_slice(self, lo, hi, int k, bint mixed=False):
        """Bitset of the tokens of 1 to k bytes, all in the ASCII class (lo, hi) (eos out);
        mixed: their ASCII bytes in the class, the rest plain characters (plain_lengths)."""
        key = (int(lo), int(hi), k, mixed)
        bits = self._class_slices.get(key)
        if bits is None:
            inside = self._in_ascii_class(lo, hi)
            inside &= (self.plain_lengths() > 0) if mixed else ~self.ascii_masks()[2]
            lens = self.token_lengths()
            inside &= (lens >= 1) & (lens <= k)
            bits = self._bitset(inside)
            if len(self._class_slices) >= 256:
                self._class_slices.clear()
            self._class_slices[key] = bits
        return bits

    def token_lengths(self):
        if self._ascii is None or len(self._ascii) < 4:
            lo, hi, other = self.ascii_masks()
            self._ascii = (lo, hi, other, np.asarray([len(t) for t in self.tokens], np.int32))
        return self._ascii[3]

    def nbytes(self):
        return sum(a.nbytes for a in (self.node_byte, self.node_end, self.tok_off, self.tok_ids,
                                      self.node_depth, self.node_big, self.child_tab))


def plain_prefix(data):
    """Whether bytes are plain string characters (see TokenTrie.plain_lengths), the last one
    possibly incomplete."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.reason != "unexpected end of data" or e.end != len(data):
            return False
        text = data[:e.start].decode("utf-8")
    return not ('"' in text or "\\" in text or "\u2028" in text or "\u2029" in text
                or any(ord(ch) < 0x20 for ch in text))


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
    # a copy by memcpy, not through a typed memoryview over the pointer (which is made as an
    # object first: ~0.5 us each, six per suffix trie)
    cdef cnp.ndarray a = np.empty(v.n, np.int32)
    if v.n:
        memcpy(cnp.PyArray_DATA(a), v.data, v.n * sizeof(int32_t))
    return a if dtype is np.int32 else a.astype(dtype)


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

