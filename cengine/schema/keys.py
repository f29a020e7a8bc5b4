"""Key languages of object members: the JSON strings whose decoded value is in a regular
language (a `patternProperties` pattern), or outside it, minus a finite set of names.

`patternProperties` beside an open `additionalProperties` splits the extra keys in two:
keys matching the pattern take the pattern's schema, every other key takes
`additionalProperties`. The second language is a complement, which the grammar IR cannot
write, so the pattern's language (IR over code points, from cengine.regex) is made a DFA here:
an NFA, subset construction over code-point ranges, with the trie of the excluded names run
alongside (so "minus these names" is exact in both directions). The DFA, complemented or
not, is pruned of states that cannot reach an accepting one and emitted as right-linear
rules, one per state, each code-point range written in every JSON spelling
(json_grammar.char_in) and the closing quote where the state accepts; the `\\u` escapes of
the characters from U+0080 on through a rule per target shared by the states (_put_step).

The NFA of every language of one alphabet is one hash-consed NFA (_KeySpace), so the DFA
states off the names' trie, which are NFA state sets alone, are shared: by the objects that
repeat a pattern with other names, by patterns that share a tail ("^title_X$",
"^description_X$"), and their rules are made once per grammar. A state on the trie is its
NFA states and the names' suffixes below its trie node (the space numbers equal sub-tries
alike), so objects whose names end alike ("title", "description" in every object of a
standard) share those states' rules too.

The alphabet is a set of code-point ranges. Beside a pattern using a construct that
ECMA-262 (the specification's regex dialect) and Python's `re` (which `jsonschema` uses)
read differently, the compiler passes every code point but those the two disagree on
(pattern_names._key_alphabet: `.` on "\\r", U+2028, U+2029; `$` on "\\n"; `\\d`, `\\w`
(and `\\b`), `\\s` and their negations on the code points where Python's Unicode class and
ECMA-262's differ), so a key gets the same schema under both readings; every JSON spelling
of an allowed code point is allowed.
"""
from __future__ import annotations

import functools
import threading
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from .. import ir
from . import json_grammar
from ..errors import LimitError

# NFA states of one key language, and DFA states after the subset construction
MAX_KEY_NFA_STATES = 20000
MAX_KEY_DFA_STATES = 1024

_SURROGATES = (0xD800, 0xDFFF)
FULL_ALPHABET: ir.Ranges = ((0, ir.MAX_UNICODE),)


def key_expr(g: ir.GrammarIR, name: str, language: ir.Expr, names: Sequence[str], *,
             negate: bool, keyword: str, pointer: str,
             alphabet: ir.Ranges = FULL_ALPHABET) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in `language` (negate: not in
    it), is none of `names` and has only characters in `alphabet` (normalized inclusive
    code-point ranges). `language` is IR over code points (cengine.regex).

    One rule per live DFA state. The states off the names' trie are the language's own
    (_KeyLanguage): their rules are made once per grammar and language and shared by every
    object that uses the language, whatever its names (a schema repeating a pattern in many
    objects otherwise made hundreds of equal rules per object)."""
    # objects that repeat the pattern and the names get the same key: made once per grammar
    memo = g.memo("key_exprs")
    key = (language, tuple(names), alphabet, negate)
    out = memo.get(key)
    if out is None:
        out = memo[key] = _key_expr(g, name, language, tuple(names), negate, alphabet,
                                    keyword, pointer)
    return out


def merged_edges(row, target_class) -> tuple:
    """A state's edges ((class, ranges), ...) with its targets' classes (None: dead, dropped)
    and the ranges into one class merged; sorted by class."""
    by: Dict[int, list] = {}
    for t, ranges in row:
        k = target_class(t)
        if k is not None:
            by.setdefault(k, []).extend(ranges)
    return tuple(sorted((k, ir.normalize_ranges(rs) if len(rs) > 1 else tuple(rs))
                        for k, rs in by.items()))


def distinct_rows(rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(ids, firsts): ids[i] the class of rows[i] (a 1-D array's items, a 2-D array's
    rows), equal ones alike, the classes numbered in the order of their first occurrence,
    firsts[c] the index of class c's first occurrence.

    A row is compared as one opaque value and sorted stably (np.unique's axis= path builds a
    structured dtype per call, and its first call imports numpy.ma: tens of ms)."""
    n = len(rows)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if rows.ndim == 2:
        rows = np.ascontiguousarray(rows)
        rows = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()
    order = np.argsort(rows, kind="stable")
    srt = rows[order]
    new = np.empty(n, bool)
    new[0] = True
    new[1:] = srt[1:] != srt[:-1]
    group = np.empty(n, np.int64)
    group[order] = np.cumsum(new) - 1
    firsts = order[new]                 # stable: a group's first row in the input
    by_first = np.argsort(firsts)
    rank = np.empty(len(firsts), np.int64)
    rank[by_first] = np.arange(len(firsts))
    return rank[group], firsts[by_first]


def refine_blocks(states, block: dict, groups) -> Tuple[dict, int]:
    """Moore's refinement of a DFA over code-point ranges: `block` (state -> initial class,
    e.g. accepting or not) split by the classes its edges reach (groups[q]: (target,
    ranges) rows; a target outside `block` is dead) until no class splits. Returns the final
    state -> class map (classes numbered in the order of `states`) and the number of them.

    The ranges are cut into the elementary intervals of all their bounds, so the DFA is a
    table (state x interval -> target, dead apart) and a round is one gather and one sort of
    its rows in numpy: a language with long chains (an email address, whose parts have
    bounded lengths) takes as many rounds as its longest chain, which cost a Python
    signature per state per round before."""
    states = list(states)
    n = len(states)
    if n == 0:
        return {}, 0
    at = {q: i for i, q in enumerate(states)}
    cuts = set()
    for q in states:
        for t, ranges in groups[q]:
            if t in at:
                for a, b in ranges:
                    cuts.add(a)
                    cuts.add(b + 1)
    bounds = sorted(cuts)
    col = {c: j for j, c in enumerate(bounds)}
    table = np.full((n, max(len(bounds) - 1, 1)), n, np.int32)    # n: dead
    for i, q in enumerate(states):
        row = table[i]
        for t, ranges in groups[q]:
            ti = at.get(t)
            if ti is not None:
                for a, b in ranges:
                    row[col[a]:col[b + 1]] = ti
    # intervals every state treats alike are one symbol
    table = np.ascontiguousarray(table[:, distinct_rows(table.T)[1]])
    initial: Dict[object, int] = {}
    cls = np.fromiter((initial.setdefault(block[q], len(initial)) for q in states), np.int32, n)
    count = len(initial)
    ext = np.empty(n + 1, np.int32)
    ext[n] = -1
    sig = np.empty((n, table.shape[1] + 1), np.int32)
    while True:
        ext[:n] = cls
        sig[:, 0] = cls
        np.take(ext, table, out=sig[:, 1:])
        ids, firsts = distinct_rows(sig)
        cls = ids.astype(np.int32)
        m = len(firsts)
        if m == count:
            return dict(zip(states, ids.tolist())), count
        count = m


def _reach_back(preds: List[List[int]], live: set) -> set:
    """live grown (in place) by every state with a path into it, preds[t] being the states
    with an edge to t."""
    stack = list(live)
    while stack:
        for k in preds[stack.pop()]:
            if k not in live:
                live.add(k)
                stack.append(k)
    return live


def _key_expr(g: ir.GrammarIR, name: str, language: ir.Expr, names: Tuple[str, ...],
              negate: bool, alphabet: ir.Ranges, keyword: str, pointer: str) -> ir.Expr:
    lang, on_groups, on_accept, off_reach, on_keys = _key_dfa(language, names, alphabet,
                                                              keyword, pointer)
    off_live = lang.live(negate)
    on_accepting = [acc != negate and not nm for acc, nm in on_accept]

    # on-trie states that can still reach an accepting one (backwards from those, and from
    # the states with an edge to a live off-trie state)
    n_on = len(on_groups)
    preds: List[List[int]] = [[] for _ in range(n_on)]
    live = set()
    for k, row in enumerate(on_groups):
        if on_accepting[k]:
            live.add(k)
        for t, _ in row:
            if t >= 0:
                preds[t].append(k)
            elif ~t in off_live:
                live.add(k)
    _reach_back(preds, live)
    if 0 not in live:
        return ir.NOTHING

    # the shared rules of this grammar, space and polarity (off the trie by NFA states, on
    # it by NFA states and sub-trie): made on first use. A state's future is its key's, so
    # a rule already made stands for it and all it leads to.
    shared = g.memo("key_rules").setdefault((lang, negate), {})
    off_rule: Dict[int, str] = {}
    new_off = []
    for i in off_reach:
        if i in off_live:
            r = shared.get(lang.nsets[i])
            if r is None or r not in g.rules:
                r = shared[lang.nsets[i]] = g.fresh_name(f"{name}-{len(new_off) + n_on}")
                g.add(r, ir.NOTHING)
                new_off.append(i)
            off_rule[i] = r
    rule: Dict[int, str] = {}
    new_on = []
    for k in sorted(live):
        r = shared.get(on_keys[k])
        if r is None or r not in g.rules:
            r = shared[on_keys[k]] = name if k == 0 else g.fresh_name(f"{name}-{k}")
            g.add(r, ir.NOTHING)
            new_on.append(k)
        rule[k] = r
    quote = ir.lit('"')
    wide = g.memo("key_wide_escapes")
    for k in new_on:
        alts = [quote] if on_accepting[k] else []
        for t, ranges in on_groups[k]:
            if t >= 0:
                if t in live:
                    _put_step(g, wide, alts, ranges, rule[t])
            elif ~t in off_live:
                _put_step(g, wide, alts, ranges, off_rule[~t])
        g.rules[rule[k]].expr = _distinct_alt(alts)
    for i in new_off:
        alts = [quote] if lang.in_language[i] != negate else []
        for t, ranges in lang.groups[i]:
            if t in off_live:
                _put_step(g, wide, alts, ranges, off_rule[t])
        g.rules[off_rule[i]].expr = _distinct_alt(alts)
    return ir.seq(quote, ir.Ref(rule[0]))


_BACKSLASH_U = ir.lit("\\u")


def _put_step(g: ir.GrammarIR, wide: dict, alts: list, ranges: tuple, target: str) -> None:
    """alts + [one character in ranges, then the rule target] (nothing when no JSON spelling
    of ranges exists). ranges: a state's normalized code-point ranges into one target (a
    tuple of pairs already, so json_grammar.char_in's conversion is skipped).

    The `\\uXXXX` escapes (and surrogate pairs) of the characters from U+0080 on are, after
    the `\\u`, a call of a rule shared by every state of the grammar that reads the same of
    those characters into the same target (wide: (ranges, target) -> rule). The DFA nearly
    always distinguishes ASCII characters only, so its states send the same wide characters
    into the same target (the complement's "any key from here on" above all), and their hex
    digits, some ten positions per state for the whole alphabet and hundreds for one cut by
    Python's Unicode `\\w`, are spelled once there. The call is made past a backslash only:
    a run of plain characters keeps one stack (a call beside a state's own bytes would make
    two at every character, and the mask's entry classes need one)."""
    if ranges[-1][1] < 0x80:
        e = ir.seq(json_grammar._char_in(ranges), ir.Ref(target))
        if type(e) is not ir.Nothing:
            alts.append(e)
        return
    narrow, high, literal, digits = _split_wide(ranges)
    ref = ir.ref(target)
    if narrow is not None:
        alts.append(ir.seq(narrow, ref))
    if literal is not None:
        alts.append(ir.seq_of((literal, ref)))      # a CharSet, then the call
    if digits is None:
        return
    key = (high, target)
    r = wide.get(key)
    if r is None:
        r = wide[key] = g.fresh_name(f"{target}-wide-escape")
        g.add(r, ir.seq(digits, ref))
    alts.append(ir.seq_of((_BACKSLASH_U, ir.ref(r))))


@functools.lru_cache(maxsize=4096)
def _split_wide(ranges: ir.Ranges):
    """(every spelling of ranges' characters below U+0080 or None, the characters from
    U+0080 on, their literal UTF-8 or None, the hex digits of their `\\u` escapes or None).
    Memoized like json_grammar._char_in, which it stands for."""
    # ranges is normalized: the ranges below the cut, one that straddles it, those above
    i = 0
    while ranges[i][1] < 0x80:
        i += 1
    a, b = ranges[i]
    if a < 0x80:
        narrow, high = ranges[:i] + ((a, 0x7F),), ((0x80, b),) + ranges[i + 1:]
    else:
        narrow, high = ranges[:i], ranges[i:]
    nexpr = json_grammar._char_in(narrow) if narrow else ir.NOTHING
    return (None if type(nexpr) is ir.Nothing else nexpr, high) + _wide_parts(high)


@functools.lru_cache(maxsize=1024)
def _wide_parts(high: ir.Ranges) -> tuple:
    """(the literal UTF-8 of the characters of high, the hex digits of their `\\u` escapes),
    None for either when it has none. Memoized: the states of a key DFA send mostly the same
    characters from U+0080 on into their targets (hundreds of ranges beside Python's `\\w`)."""
    literal = json_grammar._literal_in(high)
    digits = json_grammar.u_escape_digits(high)
    return (None if type(literal) is ir.Nothing else literal,
            None if type(digits) is ir.Nothing else digits)


def _distinct_alt(alts: list) -> ir.Expr:
    """ir.alt(*alts) for a state's steps (and its closing quote): they end in different
    rules or read disjoint characters, so no two are equal and none is an Alt, and ir.alt's
    duplicate search (a hash of every step: they share their first item's shape) would find
    nothing."""
    if not alts:
        return ir.NOTHING
    if len(alts) == 1:
        return alts[0]
    return ir.Alt(tuple(alts))


def _merge_ranges(pieces) -> Dict[int, tuple]:
    """(a, b, target) pieces in ascending order -> target -> normalized ranges."""
    by_target: Dict[int, list] = {}
    for a, b, t in pieces:
        rs = by_target.get(t)
        if rs is None:
            by_target[t] = [(a, b)]
        elif rs[-1][1] + 1 == a:
            rs[-1] = (rs[-1][0], b)
        else:
            rs.append((a, b))
    return {t: tuple(rs) for t, rs in by_target.items()}


class _KeySpace:
    """The key languages of one alphabet in one NFA, and the subset construction over it,
    grown on demand; the DFA states off the names' trie.

    The NFA is built right to left with its states hash-consed on (expression, what follows):
    equal subpatterns before equal continuations are the same states, in one language
    ("^(title_X)$|^(description_X)$": X once) and across languages. Off the names' trie a
    DFA state is its set of NFA states alone, and its future depends on nothing else (not the
    language, not the names that led there), so every key DFA of the alphabet shares it.
    State i: nsets[i] (NFA states), in_language[i] (the final NFA state is among them),
    groups[i] ((target, code-point ranges) pairs, by target; None until expanded)."""

    FINAL = 0

    def __init__(self, alphabet: ir.Ranges):
        self.alphabet = alphabet
        # the ranges swept: the alphabet but the surrogates (no JSON string holds one)
        self._sweep = _without_surrogates(alphabet)
        self.eps: List[List[int]] = [[]]
        self.edges: List[List[Tuple[int, int, int]]] = [[]]
        self.made: Dict[Tuple[ir.Expr, int], int] = {}
        self.closures: Dict[FrozenSet[int], FrozenSet[int]] = {frozenset(): frozenset()}
        self.segments: Dict[FrozenSet[int], list] = {}
        self.index: Dict[FrozenSet[int], int] = {}
        self.nsets: List[FrozenSet[int]] = []
        self.in_language: List[bool] = []
        self.groups: List[Optional[tuple]] = []
        self._live: Dict[bool, Tuple[int, FrozenSet[int]]] = {}
        # sub-tries of excluded names: (is a name, ((code point, sub-trie id), ...)) -> id
        self.tries: Dict[tuple, int] = {}
        # compiles in other threads grow the same space: growing it and reading the
        # liveness hold this
        self.lock = threading.Lock()

    def size(self) -> int:
        return len(self.eps) + len(self.nsets) + len(self.tries)

    def _new(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def frag(self, e: ir.Expr, cont: int) -> int:
        """The state from which the strings of e, then those of state cont, are matched."""
        key = (e, cont)
        s = self.made.get(key)
        if s is not None:
            return s
        t = type(e)
        if t is ir.Bytes:
            s = cont
            for ch in reversed(e.data.decode("utf-8")):
                q = self._new()
                self.edges[q].append((ord(ch), ord(ch), s))
                s = q
        elif t is ir.CharSet:
            s = self._new()
            for a, b in e.ranges:
                self.edges[s].append((a, b, cont))
        elif t is ir.Nothing:
            s = self._new()
        elif t is ir.Seq:
            s = cont
            for x in reversed(e.items):
                s = self.frag(x, s)
        elif t is ir.Alt:
            s = self._new()
            self.eps[s].extend(self.frag(x, cont) for x in e.items)
        elif t is ir.Repeat:
            if e.hi is None:
                s = self._new()                 # the loop: once more, or on
                self.eps[s].extend((self.frag(e.item, s), cont))
            else:
                s = cont
                for _ in range(e.hi - e.lo):    # each optional copy: it, or straight on
                    q = self._new()
                    self.eps[q].extend((self.frag(e.item, s), cont))
                    s = q
            for _ in range(e.lo):
                s = self.frag(e.item, s)
        else:
            raise TypeError(f"unexpected expression in a key language: {e!r}")
        self.made[key] = s
        return s

    def closure(self, states) -> FrozenSet[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for t in self.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def segments_of(self, nset: FrozenSet[int]) -> list:
        """The NFA side of a state's transitions: (lo, hi, closure) code-point ranges in
        ascending order, adjacent ones with different closures, covering the alphabet but
        the surrogates (a sweep over the bounds of the edges of nset and of the alphabet's
        ranges: a segment lies in one range or between two)."""
        segs = self.segments.get(nset)
        if segs is not None:
            return segs
        sweep = self._sweep
        lo, hi = sweep[0][0], sweep[-1][1]
        events: Dict[int, list] = {}
        for a, b in sweep:
            events[a] = []
            events[b + 1] = []
        for q in nset:
            for a, b, t in self.edges[q]:
                a, b = max(a, lo), min(b, hi)
                if a <= b:
                    events.setdefault(a, []).append((t, 1))
                    events.setdefault(b + 1, []).append((t, -1))
        active: Dict[int, int] = {}
        closures = self.closures
        segs = []
        points = sorted(events)
        cur: FrozenSet[int] = frozenset()
        r = 0                   # the first range of sweep not below the segment
        for k, at in enumerate(points[:-1]):
            for t, d in events[at]:
                c = active.get(t, 0) + d
                if c:
                    active[t] = c
                else:
                    del active[t]
            end = points[k + 1] - 1
            while sweep[r][1] < at:
                r += 1
            if sweep[r][0] > at:
                continue        # between two ranges
            targets = frozenset(active)
            cur = closures.get(targets)
            if cur is None:
                cur = closures[targets] = self.closure(targets)
            if segs and segs[-1][2] is cur and segs[-1][1] + 1 == at:
                segs[-1] = (segs[-1][0], end, cur)
            else:
                segs.append((at, end, cur))
        self.segments[nset] = segs
        return segs

    def state(self, nset: FrozenSet[int]) -> int:
        """The off-trie state of nset."""
        i = self.index.get(nset)
        if i is None:
            i = self.index[nset] = len(self.nsets)
            self.nsets.append(nset)
            self.in_language.append(self.FINAL in nset)
            self.groups.append(None)
        return i

    def expand(self, i: int) -> tuple:
        g = self.groups[i]
        if g is None:
            pieces = [(a, b, self.state(clo)) for a, b, clo in self.segments_of(self.nsets[i])]
            g = self.groups[i] = tuple(sorted(_merge_ranges(pieces).items()))
        return g

    def live(self, negate: bool) -> FrozenSet[int]:
        """The expanded states that can reach an accepting one (exact for every state whose
        descendants are all expanded, as those of a finished key DFA are)."""
        with self.lock:
            n = len(self.nsets)
            got = self._live.get(negate)
            if got is not None and got[0] == n:
                return got[1]
            preds: List[List[int]] = [[] for _ in range(n)]
            for k, row in enumerate(self.groups):
                if row is not None:
                    for t, _ in row:
                        preds[t].append(k)
            live = {k for k in range(n) if self.in_language[k] != negate}
            out = frozenset(_reach_back(preds, live))
            self._live[negate] = (n, out)
            return out


# one space per alphabet, started afresh past this size (NFA plus DFA states) so a
# long-running process does not grow it without bound; a grammar's rules keep the space they
# were made in, the cached DFAs are dropped with it (else up to 64 old spaces stayed alive)
MAX_KEY_SPACE = 50_000
_SPACES: Dict[ir.Ranges, _KeySpace] = {}
_SPACES_LOCK = threading.Lock()


def _without_surrogates(alphabet: ir.Ranges) -> ir.Ranges:
    out = []
    for a, b in alphabet:
        if a < _SURROGATES[0]:
            out.append((a, min(b, _SURROGATES[0] - 1)))
        if b > _SURROGATES[1]:
            out.append((max(a, _SURROGATES[1] + 1), b))
    if not out:
        raise ValueError("a key alphabet of surrogates alone")
    return tuple(out)


def _key_space(alphabet: ir.Ranges) -> _KeySpace:
    with _SPACES_LOCK:
        sp = _SPACES.get(alphabet)
        if sp is None or sp.size() > MAX_KEY_SPACE:
            if sp is not None:
                _key_dfa_cached.cache_clear()
            sp = _SPACES[alphabet] = _KeySpace(alphabet)
        return sp


def _thompson_states(e: ir.Expr, memo: Dict[int, int]) -> int:
    """The states a Thompson NFA of e has (one fragment per occurrence): what
    MAX_KEY_NFA_STATES bounds."""
    n = memo.get(id(e))
    if n is not None:
        return n
    t = type(e)
    if t is ir.Bytes:
        n = 1 + len(e.data.decode("utf-8"))
    elif t is ir.CharSet or t is ir.Nothing:
        n = 2
    elif t is ir.Seq:
        n = 1 + sum(_thompson_states(x, memo) for x in e.items)
    elif t is ir.Alt:
        n = 2 + sum(_thompson_states(x, memo) for x in e.items)
    elif t is ir.Repeat:
        c = _thompson_states(e.item, memo)
        n = 1 + e.lo * c + (c if e.hi is None else 1 + (e.hi - e.lo) * c)
    else:
        raise TypeError(f"unexpected expression in a key language: {e!r}")
    memo[id(e)] = n
    return n


# The DFA of a key language minus names, before negation and pruning: the two key
# languages of one patternProperties (the pattern's keys and the rest) share it, and so do
# objects that repeat a pattern and names. Keyed on everything it depends on (the language
# as IR, the names in order, the alphabet); bounded; its tuples are never changed (the
# shared _KeyLanguage it points into only grows).
@functools.lru_cache(maxsize=64)
def _key_dfa_cached(language: ir.Expr, names: Tuple[str, ...], alphabet: ir.Ranges):
    return _build_key_dfa(language, names, alphabet, "", "")


def _key_dfa(language, names, alphabet, keyword: str, pointer: str):
    try:
        return _key_dfa_cached(language, names, alphabet)
    except LimitError as e:
        # the cached call knows no pointer: name this one
        raise LimitError(e.reason, keyword=keyword, pointer=pointer) from None


def _build_key_dfa(language: ir.Expr, names: Tuple[str, ...], alphabet: ir.Ranges,
                   keyword: str, pointer: str):
    """(space, on_groups, on_accept, off_reach, on_keys): the subset construction over code points,
    each state a (set of NFA states, trie node or -1 once off the trie) pair. The states on
    the trie are this DFA's own: on_groups[j] holds (target, code-point ranges) pairs by
    target, a target t >= 0 an on-trie state, ~t the off-trie state t of the space (the
    shared _KeySpace of the alphabet); on_accept[j]: (the NFA accepts, the key read so far is
    one of names). off_reach: the off-trie states reachable, in order of discovery.
    on_keys[j]: (NFA states, the space's id of the sub-trie below the state's trie node),
    what the state's future depends on. The states of both kinds count toward
    MAX_KEY_DFA_STATES."""
    if _thompson_states(language, {}) > MAX_KEY_NFA_STATES:
        raise LimitError(f"the key language needs more than {MAX_KEY_NFA_STATES} NFA states",
                         keyword=keyword, pointer=pointer)
    space = _key_space(alphabet)
    with space.lock:
        start = space.closure([space.frag(language, space.FINAL)])
        return (space,) + _grow_key_dfa(space, start, names, keyword, pointer)


def _on_trie_first(item) -> tuple:
    return (item[0] < 0, item[0])


def _grow_key_dfa(lang: _KeySpace, start: FrozenSet[int], names: Tuple[str, ...],
                  keyword: str, pointer: str):
    # the trie of the excluded names: node -> {code point: node}; ends: nodes that are names
    trie: List[Dict[int, int]] = [{}]
    ends = set()
    for n in names:
        node = 0
        for ch in n:
            nxt = trie[node].get(ord(ch))
            if nxt is None:
                trie.append({})
                nxt = trie[node][ord(ch)] = len(trie) - 1
            node = nxt
        ends.add(node)

    def too_many():
        return LimitError(f"the key language needs more than {MAX_KEY_DFA_STATES} DFA states",
                          keyword=keyword, pointer=pointer)

    first = (start, 0)
    index = {first: 0}
    order = [first]
    off_index: Dict[int, int] = {}          # off-trie state -> discovery order
    off_reach: List[int] = []
    on_groups = []
    # each node's next code points, ascending (a leaf, most nodes, has none)
    kid_points = [sorted(kids) for kids in trie]
    state = lang.state

    i = 0
    while i < len(order):
        nset, node = order[i]
        kids = trie[node]
        points = kid_points[node]
        out = []
        for a, b, clo in lang.segments_of(nset):
            # the names' next code points inside [a, b] stay on the trie, the rest leaves it
            if points and a <= points[-1] and points[0] <= b:
                for cp in points:
                    if cp < a:
                        continue
                    if cp > b:
                        break
                    if a < cp:
                        t = state(clo)         # [a, cp - 1] leaves the trie
                        if t not in off_index:
                            if len(order) + len(off_reach) >= MAX_KEY_DFA_STATES:
                                raise too_many()
                            off_index[t] = len(off_reach)
                            off_reach.append(t)
                        out.append((a, cp - 1, ~t))
                    tgt = (clo, kids[cp])
                    j = index.get(tgt)
                    if j is None:
                        if len(order) + len(off_reach) >= MAX_KEY_DFA_STATES:
                            raise too_many()
                        j = index[tgt] = len(order)
                        order.append(tgt)
                    out.append((cp, cp, j))
                    a = cp + 1
            if a <= b:
                t = state(clo)         # [a, b] leaves the trie
                if t not in off_index:
                    if len(order) + len(off_reach) >= MAX_KEY_DFA_STATES:
                        raise too_many()
                    off_index[t] = len(off_reach)
                    off_reach.append(t)
                out.append((a, b, ~t))
        groups = _merge_ranges(out)
        # targets on the trie (>= 0) ascending, then those off it (< 0) ascending
        on_groups.append(tuple(sorted(groups.items(), key=_on_trie_first)))
        i += 1
    # the off-trie states reachable from those (expanded in the shared language)
    k = 0
    while k < len(off_reach):
        for t, _ in lang.expand(off_reach[k]):
            if t not in off_index:
                if len(order) + len(off_reach) >= MAX_KEY_DFA_STATES:
                    raise too_many()
                off_index[t] = len(off_reach)
                off_reach.append(t)
        k += 1
    on_accept = tuple((lang.FINAL in nset, node in ends) for nset, node in order)
    # sub-trie ids, children first (a node's children are made after it)
    tries = lang.tries
    tid = [0] * len(trie)
    for node in range(len(trie) - 1, -1, -1):
        sub = (node in ends, tuple(sorted((cp, tid[kid]) for cp, kid in trie[node].items())))
        t = tries.get(sub)
        if t is None:
            t = tries[sub] = len(tries)
        tid[node] = t
    on_keys = tuple((nset, tid[node]) for nset, node in order)
    return tuple(on_groups), on_accept, tuple(off_reach), on_keys
