"""minLength / maxLength beside a regular language (a `pattern`, or an enforced `format`):
the strings of the language whose length in code points lies in lo..hi, exactly.

The intersection of a regular language with a length range is regular: the language's DFA
over code points (keys._KeySpace: a Thompson NFA and the subset construction over code-point
ranges, what patternProperties key languages use) is run beside a counter of the code
points read, 0..hi (hi None: the counter stops at lo, every longer length behaves alike).
Only the pairs (DFA state, count) reachable from the start within the bounds and still able
to reach an accepting pair are kept. Their automaton is minimal once equal futures are
merged: every step raises the count, so below the last layer the pairs form a DAG, merged
by signature from the last layer down (the last layer of an unbounded range is the
language's own DFA, minimized by partition refinement first).

Each merged state is one right-linear rule, as the key languages are emitted: every
code-point range into a target state written in all its JSON spellings
(json_grammar.char_in: an escape counts one code point, as the `jsonschema` oracle counts
the decoded string), then a tail call of the target's rule (no stack frame: the stack stays
flat whatever the length), and the closing quote where the state accepts.

The pairs are bounded by MAX_LENGTH_STATES (documented in docs/limits.md): past it the
length keyword is refused, naming it, rather than building a rule per count of a long
bound beside a complex language (an email address of at most 1024 characters).
"""
from __future__ import annotations

import functools
from typing import Dict, List, Optional, Tuple

from .. import ir
from . import json_grammar
from .keys import (MAX_KEY_NFA_STATES, _KeySpace, _thompson_states, merged_edges,
                   refine_blocks)
from ..errors import LimitError

# (language DFA state, count) pairs of one length-bounded language, kept after pruning and
# before merging; also the bound on the language's own DFA states
MAX_LENGTH_STATES = 4096

_ALL = ((0, ir.MAX_UNICODE),)


class TooLarge(Exception):
    """The automaton would pass MAX_LENGTH_STATES (or the NFA bound); the caller refuses
    naming its keyword."""


# A language's DFA: (groups, accepting, dist) with groups[q] = ((target, ranges), ...) by
# target, accepting[q] and dist[q] the fewest code points from q to an accepting state (None:
# none reachable). State 0 starts. Patterns repeat within a schema and across compiles.
_Dfa = Tuple[tuple, tuple, tuple]


@functools.lru_cache(maxsize=64)
def language_dfa(language: ir.Expr) -> _Dfa:
    """The DFA over code points of language (IR as cengine.regex makes it); TooLarge past
    MAX_KEY_NFA_STATES NFA or MAX_LENGTH_STATES DFA states."""
    if _thompson_states(language, {}) > MAX_KEY_NFA_STATES:
        raise TooLarge(f"more than {MAX_KEY_NFA_STATES} NFA states")
    space = _KeySpace(_ALL)         # private: nothing shared with the key languages
    start = space.closure([space.frag(language, space.FINAL)])
    space.state(start)
    i = 0
    while i < len(space.nsets):
        space.expand(i)
        if len(space.nsets) > MAX_LENGTH_STATES:
            raise TooLarge(f"more than {MAX_LENGTH_STATES} DFA states")
        i += 1
    groups = tuple(row if row is not None else () for row in space.groups)
    return with_dist(groups, tuple(space.in_language))


def with_dist(groups: tuple, accepting: tuple) -> _Dfa:
    """(groups, accepting) of a DFA (state 0 starts) with dist added."""
    # fewest steps to acceptance, backwards from the accepting states
    n = len(groups)
    preds: List[List[int]] = [[] for _ in range(n)]
    for q, row in enumerate(groups):
        for t, _ in row:
            preds[t].append(q)
    dist: List[Optional[int]] = [0 if a else None for a in accepting]
    frontier = [q for q in range(n) if accepting[q]]
    d = 0
    while frontier:
        d += 1
        nxt = []
        for t in frontier:
            for q in preds[t]:
                if dist[q] is None:
                    dist[q] = d
                    nxt.append(q)
        frontier = nxt
    return groups, accepting, tuple(dist)


def length_automaton(language: Optional[ir.Expr], lo: int, hi: Optional[int],
                     dfa: Optional[_Dfa] = None):
    """The minimal automaton of the strings of language with lo..hi code points (hi None:
    unbounded): (start, rows) with rows[k] = (accepting, ((class, ranges), ...)), or None
    when no string qualifies. TooLarge past MAX_LENGTH_STATES pairs. dfa: the language's
    DFA when the caller has it (a pattern times a format, searches.product_dfa)."""
    if dfa is None:
        assert language is not None
        dfa = language_dfa(language)
    groups, accepting, dist = dfa
    if dist[0] is None:
        return None
    top = lo if hi is None else hi
    # forward: the language's states at each count (pairs that cannot still reach an
    # accepting state within hi are dropped on the way)
    layers: List[List[int]] = [[0]]
    total = 1
    for c in range(top):
        nxt = set()
        for q in layers[c]:
            for t, _ in groups[q]:
                dt = dist[t]
                if dt is not None and (hi is None or c + 1 + dt <= hi):
                    nxt.add(t)
        if not nxt:
            break
        layers.append(sorted(nxt))
        total += len(nxt)
        if total > MAX_LENGTH_STATES:
            raise TooLarge(f"more than {MAX_LENGTH_STATES} (state, length) pairs")
    rows: List[tuple] = []
    sigs: Dict[tuple, int] = {}
    cls: List[Dict[int, int]] = [{} for _ in layers]     # per count: state -> class

    def intern(sig: tuple) -> int:
        k = sigs.get(sig)
        if k is None:
            k = sigs[sig] = len(rows)
            rows.append(sig)
        return k

    last = len(layers) - 1
    if hi is None and last == lo:
        # the counter stops at lo: the language's own states reachable from layer lo, made
        # minimal by partition refinement (every one can reach acceptance: dist kept them)
        sat = set(layers[lo])
        stack = list(sat)
        while stack:
            for t, _ in groups[stack.pop()]:
                if dist[t] is not None and t not in sat:
                    sat.add(t)
                    stack.append(t)
                    if total + len(sat) > MAX_LENGTH_STATES:
                        raise TooLarge(f"more than {MAX_LENGTH_STATES} (state, length) pairs")
        states = sorted(sat)
        block, n_blocks = refine_blocks(states, {q: int(accepting[q]) for q in states}, groups)
        # the blocks' classes: numbered first, then their rows (edges name classes)
        first: Dict[int, int] = {}
        for q in states:
            if block[q] not in first:
                first[block[q]] = len(rows)
                rows.append(())
        for q in states:
            k = first[block[q]]
            if not rows[k]:
                sig = (accepting[q], merged_edges(groups[q], lambda t: first.get(block[t])
                                                   if t in block else None))
                rows[k] = sig
                sigs.setdefault(sig, k)
        cls[lo] = {q: first[block[q]] for q in layers[lo]}
        below = lo - 1
    else:
        below = last
    for c in range(below, -1, -1):
        up = cls[c + 1] if c < last else {}
        here = cls[c]
        for q in layers[c]:
            acc = accepting[q] and c >= lo
            edges = merged_edges(groups[q], up.get) if c < last else ()
            if acc or edges:
                here[q] = intern((acc, edges))
    start = cls[0].get(0)
    if start is None:
        return None
    return start, rows


def length_string(g: ir.GrammarIR, language: Optional[ir.Expr], lo: int, hi: Optional[int],
                  keyword: str, pointer: str, dfa: Optional[_Dfa] = None,
                  key: Optional[tuple] = None) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in language and has lo..hi
    code points: one right-linear rule per state of length_automaton. LimitError naming
    `keyword` (at pointer) where the automaton passes MAX_LENGTH_STATES."""
    memo = g.memo("length_strings")
    key = (language, lo, hi) if key is None else key
    out = memo.get(key)
    if out is not None:
        return out
    try:
        made = length_automaton(language, lo, hi, dfa)
    except TooLarge as e:
        bounds = f"{lo}..{'' if hi is None else hi}"
        raise LimitError(f"'{keyword}' beside this language needs {e}: lengths {bounds} are "
                         f"enforced up to {MAX_LENGTH_STATES} pairs (documented limit "
                         "cengine.schema.lengths.MAX_LENGTH_STATES)", keyword=keyword,
                         pointer=pointer) from None
    quote = ir.lit('"')
    if made is None:
        out = memo[key] = ir.NOTHING
        return out
    start, rows = made
    base = g.fresh_name("json-length-string")
    # the states reachable from the start (merging may leave a class no edge reaches)
    order = [start]
    index = {start: 0}
    i = 0
    while i < len(order):
        for k, _ in rows[order[i]][1]:
            if k not in index:
                index[k] = len(order)
                order.append(k)
        i += 1
    names = [base if j == 0 else f"{base}-s{j}" for j in range(len(order))]
    for j, k in enumerate(order):
        acc, edges = rows[k]
        alts: list = [quote] if acc else []
        for t, ranges in edges:
            step = ir.seq(json_grammar._char_in(ranges), ir.ref(names[index[t]]))
            if type(step) is not ir.Nothing:
                alts.append(step)
        g.add(names[j], alts[0] if len(alts) == 1 else
              ir.Alt(tuple(alts)) if alts else ir.NOTHING)
        g.sources[names[j]] = (keyword, pointer)
    out = memo[key] = ir.seq(quote, ir.ref(base))
    return out
