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

    # DFA states: (NFA set, trie node or -1 once off the trie)
    first = (nfa.closure([start]), 0)
    index = {first: 0}
    order = [first]
    trans: List[Dict[int, int]] = []      # state -> {interval index: state}
    i = 0
    while i < len(order):
        nset, node = order[i]
        row: Dict[int, int] = {}
        for k, (a, b) in enumerate(intervals):
            targets = [t for s in nset for lo, hi, t in nfa.edges[s] if lo <= a and b <= hi]
            nxt_node = trie[node].get(a, -1) if node >= 0 and a == b else -1
            tgt = (nfa.closure(targets) if targets else frozenset(), nxt_node)
            j = index.get(tgt)
            if j is None:
                if len(order) >= MAX_KEY_DFA_STATES:
                    raise LimitError(f"the key language needs more than {MAX_KEY_DFA_STATES} "
                                     "DFA states", keyword=keyword, pointer=pointer)
                j = index[tgt] = len(order)
                order.append(tgt)
            row[k] = j
        trans.append(row)
        i += 1
    accepting = [((final in nset) != negate) and node not in ends for nset, node in order]

    # keep the states that can still reach an accepting one
    live = {k for k, acc in enumerate(accepting) if acc}
    changed = True
    while changed:
        changed = False
        for k, row in enumerate(trans):
            if k not in live and any(t in live for t in row.values()):
                live.add(k)
                changed = True
    if 0 not in live:
        return ir.NOTHING
    rule = {k: (name if k == 0 else g.fresh_name(f"{name}-{k}")) for k in sorted(live)}
    for k in sorted(live):
        g.add(rule[k], ir.NOTHING)
    for k in sorted(live):
        by_target: Dict[int, List[Tuple[int, int]]] = {}
        for iv, t in trans[k].items():
            if t in live:
                by_target.setdefault(t, []).append(intervals[iv])
        alts = [ir.lit('"')] if accepting[k] else []
        for t, ranges in sorted(by_target.items()):
            alts.append(ir.seq(jg.char_in(ir.normalize_ranges(ranges)), ir.Ref(rule[t])))
        g.rules[rule[k]].expr = ir.alt(*alts)
    return ir.seq(ir.lit('"'), ir.Ref(rule[0]))
