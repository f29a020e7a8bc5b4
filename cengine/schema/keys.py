"""Key languages of object members: the JSON strings whose decoded value is in a regular
language (a `patternProperties` pattern), or outside it, minus a finite set of names.

`patternProperties` beside an open `additionalProperties` splits the extra keys in two:
keys matching the pattern take the pattern's schema, every other key takes
`additionalProperties`. The second language is a complement, which the grammar IR cannot
write, so the pattern's language (IR over code points, from cengine.regex) is made a DFA here:
Thompson NFA, subset construction over the code-point intervals that the NFA's ranges and
the excluded names cut the alphabet into, with the trie of the excluded names run alongside
(so "minus these names" is exact in both directions). The DFA, complemented or not, is
pruned of states that cannot reach an accepting one and emitted as right-linear rules, one
per state, each code-point interval written in every JSON spelling (json_grammar.char_in)
and the closing quote where the state accepts.

The compiler passes printable ASCII (U+0020..U+007E) as the alphabet: on those characters
ECMA-262 (the specification's regex dialect) and Python's `re` (which `jsonschema` uses)
read every construct the regex front end accepts alike (`\\d`, `\\w`, `\\s`, `.`, and `$`
with no newline to stand before), so a key gets the same schema under both readings.
"""
from __future__ import annotations

import bisect
import functools
from typing import Dict, FrozenSet, List, Sequence, Tuple

from .. import ir
from . import json_grammar as jg
from ..errors import LimitError

# NFA states of one key language, and DFA states after the subset construction
MAX_KEY_NFA_STATES = 20000
MAX_KEY_DFA_STATES = 1024

_SURROGATES = (0xD800, 0xDFFF)


class _Nfa:
    def __init__(self, keyword: str, pointer: str):
        self.eps: List[List[int]] = []
        self.edges: List[List[Tuple[int, int, int]]] = []
        self.keyword, self.pointer = keyword, pointer

    def state(self) -> int:
        if len(self.eps) >= MAX_KEY_NFA_STATES:
            raise LimitError(f"the key language needs more than {MAX_KEY_NFA_STATES} NFA states",
                             keyword=self.keyword, pointer=self.pointer)
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def frag(self, e: ir.Expr) -> Tuple[int, int]:
        """(start, end) states of a fragment matching e."""
        t = type(e)
        s = self.state()
        if t is ir.Bytes:
            cur = s
            for ch in e.data.decode("utf-8"):
                nxt = self.state()
                self.edges[cur].append((ord(ch), ord(ch), nxt))
                cur = nxt
            return s, cur
        if t is ir.CharSet:
            end = self.state()
            for a, b in e.ranges:
                self.edges[s].append((a, b, end))
            return s, end
        if t is ir.Nothing:
            return s, self.state()
        if t is ir.Seq:
            cur = s
            for x in e.items:
                a, b = self.frag(x)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if t is ir.Alt:
            end = self.state()
            for x in e.items:
                a, b = self.frag(x)
                self.eps[s].append(a)
                self.eps[b].append(end)
            return s, end
        if t is ir.Repeat:
            cur = s
            for _ in range(e.lo):
                a, b = self.frag(e.item)
                self.eps[cur].append(a)
                cur = b
            if e.hi is None:
                a, b = self.frag(e.item)
                self.eps[cur].append(a)
                self.eps[b].append(cur)
                return s, cur
            end = self.state()
            self.eps[cur].append(end)
            for _ in range(e.hi - e.lo):
                a, b = self.frag(e.item)
                self.eps[cur].append(a)
                self.eps[b].append(end)
                cur = b
            return s, end
        raise TypeError(f"unexpected expression in a key language: {e!r}")

    def closure(self, states) -> FrozenSet[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for t in self.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)


def key_expr(g: ir.GrammarIR, name: str, language: ir.Expr, names: Sequence[str], *,
             negate: bool, keyword: str, pointer: str,
             alphabet: Tuple[int, int] = (0, ir.MAX_UNICODE)) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in `language` (negate: not in
    it), is none of `names` and has only characters in `alphabet` (an inclusive code-point
    range). `language` is IR over code points (cengine.regex)."""
    trans, groups, in_language, on_name = _key_dfa(language, tuple(names), alphabet, keyword,
                                                   pointer)
    accepting = [lang != negate and not nm for lang, nm in zip(in_language, on_name)]

    # keep the states that can still reach an accepting one (backwards from those)
    preds: List[List[int]] = [[] for _ in trans]
    for k, row in enumerate(groups):
        for t, _ in row:
            preds[t].append(k)
    live = {k for k, acc in enumerate(accepting) if acc}
    stack = list(live)
    while stack:
        for k in preds[stack.pop()]:
            if k not in live:
                live.add(k)
                stack.append(k)
    if 0 not in live:
        return ir.NOTHING
    rule = {k: (name if k == 0 else g.fresh_name(f"{name}-{k}")) for k in sorted(live)}
    for k in sorted(live):
        g.add(rule[k], ir.NOTHING)
    quote = ir.lit('"')
    for k in sorted(live):
        alts = [quote] if accepting[k] else []
        for t, ranges in groups[k]:
            if t in live:
                alts.append(ir.seq(jg.char_in(ranges), ir.Ref(rule[t])))
        g.rules[rule[k]].expr = ir.alt(*alts)
    return ir.seq(quote, ir.Ref(rule[0]))


# The DFA of a key language minus names, before negation and pruning: the two key
# languages of one patternProperties (the pattern's keys and the rest) share it, and so do
# objects that repeat a pattern and names. Keyed on everything it depends on (the language
# as IR, the names in order, the alphabet); bounded; its tuples are never changed.
@functools.lru_cache(maxsize=64)
def _key_dfa_cached(language: ir.Expr, names: Tuple[str, ...], alphabet: Tuple[int, int]):
    return _build_key_dfa(language, names, alphabet, "", "")


def _key_dfa(language, names, alphabet, keyword: str, pointer: str):
    try:
        return _key_dfa_cached(language, names, alphabet)
    except LimitError as e:
        # the cached call knows no pointer: name this one
        raise LimitError(e.reason, keyword=keyword, pointer=pointer) from None


def _build_key_dfa(language: ir.Expr, names: Tuple[str, ...], alphabet: Tuple[int, int],
                   keyword: str, pointer: str):
    """(transitions, groups, in_language, on_name): the subset construction over the
    code-point intervals, each state a (set of NFA states, trie node or -1 once off the trie)
    pair; transitions[q][k] is the state after interval k, groups[q] the same as (target,
    code-point ranges) pairs by target; in_language[q]: the NFA accepts; on_name[q]: the key
    read so far is one of names."""
    nfa = _Nfa(keyword, pointer)
    start, final = nfa.frag(language)
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
    cuts = {0, _SURROGATES[0], _SURROGATES[1] + 1, ir.MAX_UNICODE + 1, alphabet[0], alphabet[1] + 1}
    for row in nfa.edges:
        for a, b, _ in row:
            cuts.update((a, b + 1))
    for node in trie:
        for cp in node:
            cuts.update((cp, cp + 1))
    cuts = sorted(c for c in cuts if c <= ir.MAX_UNICODE + 1)
    intervals = [(a, b - 1) for a, b in zip(cuts, cuts[1:])
                 if not (a >= _SURROGATES[0] and b - 1 <= _SURROGATES[1])
                 and alphabet[0] <= a and b - 1 <= alphabet[1]]
    n_iv = len(intervals)
    starts = [a for a, _ in intervals]
    stops = [b for _, b in intervals]
    # every edge covers a run of whole intervals (the intervals are cut at every edge's
    # bounds): the run's first and past-the-end index, found once per edge
    runs: List[List[Tuple[int, int, int]]] = []
    for row in nfa.edges:
        out = []
        for lo, hi, t in row:
            k0, k1 = bisect.bisect_left(starts, lo), bisect.bisect_right(stops, hi)
            if k0 < k1:
                out.append((k0, k1, t))
        runs.append(out)
    closures: Dict[FrozenSet[int], FrozenSet[int]] = {frozenset(): frozenset()}
    segments: Dict[FrozenSet[int], list] = {}

    def segments_of(nset: FrozenSet[int]) -> list:
        # the NFA side of a state's transitions: (k0, k1, closure) runs of intervals with the
        # same target set, covering every interval (sweeping the edges' runs once)
        segs = segments.get(nset)
        if segs is not None:
            return segs
        events: Dict[int, list] = {}
        for q in nset:
            for k0, k1, t in runs[q]:
                events.setdefault(k0, []).append((t, 1))
                events.setdefault(k1, []).append((t, -1))
        active: Dict[int, int] = {}
        segs = []
        at = 0
        cur: FrozenSet[int] = frozenset()
        for k in sorted(events):
            if k > at:
                segs.append((at, k, cur))
            for t, d in events[k]:
                c = active.get(t, 0) + d
                if c:
                    active[t] = c
                else:
                    del active[t]
            targets = frozenset(active)
            cur = closures.get(targets)
            if cur is None:
                cur = closures[targets] = nfa.closure(targets)
            at = k
        if at < n_iv:
            segs.append((at, n_iv, cur))
        segments[nset] = segs
        return segs

    first = (nfa.closure([start]), 0)
    index = {first: 0}
    order = [first]
    trans: List[List[int]] = []      # state -> [state after interval k]
    i = 0
    while i < len(order):
        nset, node = order[i]
        kids = trie[node] if node >= 0 else None
        row = [0] * n_iv
        for k0, k1, clo in segments_of(nset):
            if kids:
                ks = range(k0, k1)
            else:
                ks = None
                tgt = (clo, -1)
            for k in (ks if ks is not None else (k0,)):
                if ks is not None:
                    a, b = intervals[k]
                    tgt = (clo, kids.get(a, -1) if a == b else -1)
                j = index.get(tgt)
                if j is None:
                    if len(order) >= MAX_KEY_DFA_STATES:
                        raise LimitError(f"the key language needs more than "
                                         f"{MAX_KEY_DFA_STATES} DFA states", keyword=keyword,
                                         pointer=pointer)
                    j = index[tgt] = len(order)
                    order.append(tgt)
                if ks is not None:
                    row[k] = j
                else:
                    row[k0:k1] = [j] * (k1 - k0)
        trans.append(row)
        i += 1
    # per state, the intervals leading to each target as normalized ranges (ascending and
    # disjoint already: adjacent ones merged), by target
    groups = []
    for row in trans:
        by_target: Dict[int, list] = {}
        for k, t in enumerate(row):
            a, b = intervals[k]
            rs = by_target.get(t)
            if rs is None:
                by_target[t] = [(a, b)]
            elif rs[-1][1] + 1 == a:
                rs[-1] = (rs[-1][0], b)
            else:
                rs.append((a, b))
        groups.append(tuple((t, tuple(rs)) for t, rs in sorted(by_target.items())))
    in_language = tuple(final in nset for nset, _ in order)
    on_name = tuple(node in ends for _, node in order)
    return tuple(tuple(r) for r in trans), tuple(groups), in_language, on_name
