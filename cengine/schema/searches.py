"""The search language of a `pattern` whose anchors stand anywhere, or that starts with a
lookahead, and the intersection of a pattern with an enforced format: exact, by DFAs over
code points (keys._KeySpace, the subset construction the key and length languages use).

Anchors. ECMA-262 without the m flag reads '^' as "at the start of the text" and '$' as "at
its end", wherever they stand (`^(\\/?(x|y)($|\\/))*$`, `^([^,]|$)`). cengine.regex reads
them as two symbols START and END past every code point (search_parts). A text w has a
match of P exactly when the word START^a w END^b contains a match of P (some a, b): an
anchor holds only at the text's two ends, and P may pass several anchors there. So the
search language Σ*·P·Σ* over code points and the two symbols is made a DFA, and its
strings are read off it: the start is the state after START^a and a state accepts when
END^b leads to an accepting state. The extra START / END are absorbed by the Σ*
padding (a match inside START^a w END^b is one inside START^(a+1) w END^b), so the
sequence of states after START, START START, ... reaches a cycle whose states all mean
the same: that cycle's first state starts. The empty text is the one place where both
anchors hold together (`$^` matches it): it is accepted when some word over START and END
alone is in the search language.

Lookaheads. `^(?!X)Y` is the texts with a match of `^Y` and none of `^X`; `^(?=X)Y` those
with both: DFA products, complement by flipping the accepting states (the DFAs are complete
over code points). Only a lookahead right after the leading '^' of a top-level alternative
is read (search_parts refuses one anywhere else).

The DFA is minimized and written back as an IR expression by state elimination, so every
reader of a pattern's language (string values, lengths, patternProperties keys, declared
names) reads it as any other pattern. The DFAs are bounded by MAX_SEARCH_STATES, the
expression by automaton.MAX_NFA_STATES (LimitError past either, naming `pattern`).

Pattern beside format: product_dfa of the two languages' DFAs (lengths.language_dfa), which
lengths.length_string writes as one right-linear rule per state.
"""
from __future__ import annotations

import functools
from typing import Callable, Dict, List, Optional, Tuple

from .. import ir
from ..errors import CompileError, LimitError
from ..regex import (END_SYMBOL, START_SYMBOL, SearchAlternative, _check_size,
                     regex_to_expr, search_parts, simple_search_expr)
from .keys import (MAX_KEY_NFA_STATES, _KeySpace, _reach_back, _thompson_states,
                   refine_blocks)

# states of one DFA made here: the search language over code points and the anchors, a
# lookahead's product or complement, a pattern times a format
MAX_SEARCH_STATES = 4096

# a DFA over code points: (groups, accepting), groups[q] = ((target, ranges), ...), state 0
# starts; complete (every code point but the surrogates goes somewhere)
Dfa = Tuple[tuple, tuple]

_ANY2 = ir.repeat(ir.CharSet(((0, END_SYMBOL),)), 0, None)


class TooLarge(Exception):
    pass


@functools.lru_cache(maxsize=512)
def search_expr(pattern: str) -> ir.Expr:
    """regex_to_expr(pattern, anchored=False), and where that parser refuses an anchor or
    a lookahead, the same language made exact by the DFAs above.

    Kept per pattern (a refusal is not: each use names its own error): a pattern's language
    is then one object in every compile, so the process-wide tables keyed by it (the key
    spaces' NFA fragments, the key and length DFAs) find it by identity, where an equal
    copy from another compile's parse was compared node by node at every lookup (OCDS
    schemas repeat one BCP 47 pattern in every object)."""
    try:
        return regex_to_expr(pattern, anchored=False)
    except LimitError:
        raise
    except CompileError as e:
        first = e
    try:
        parts = search_parts(pattern)
    except LimitError:
        raise
    except CompileError as e:
        if "lookahead" in e.reason or "anchor" in e.reason:
            raise
        raise first from None
    if all(a.simple for a in parts):
        return simple_search_expr(parts)
    return _searched(tuple(parts))


@functools.lru_cache(maxsize=256)
def _searched(parts: Tuple[SearchAlternative, ...]) -> ir.Expr:
    try:
        dfa = search_dfa(parts)
    except TooLarge as e:
        raise LimitError(f"the pattern's anchors or lookaheads need {e} (documented limit "
                         f"cengine.schema.searches.MAX_SEARCH_STATES = {MAX_SEARCH_STATES})"
                         ) from None
    out = dfa_to_expr(dfa)
    _check_size(out)
    return out


def search_dfa(parts: Tuple[SearchAlternative, ...]) -> Dfa:
    plain = [a.body for a in parts if not a.looks]
    dfas = [_resolve(ir.alt(*plain))] if plain else []
    for a in parts:
        if not a.looks:
            continue
        d = _resolve(a.body)
        for neg, x in a.looks:
            dx = _resolve(ir.seq(ir.CharSet(((START_SYMBOL, START_SYMBOL),)), x))
            d = product_dfa(d, dx, (lambda p, q: p and not q) if neg else (lambda p, q: p and q))
        dfas.append(d)
    out = dfas[0]
    for d in dfas[1:]:
        out = product_dfa(out, d, lambda p, q: p or q)
    return out


def _resolve(expr: ir.Expr) -> Dfa:
    """The texts w such that START^a w END^b has a match of expr (over code points and the
    two symbols), as a complete DFA over code points."""
    lang = ir.seq(_ANY2, expr, _ANY2)
    if _thompson_states(lang, {}) > MAX_KEY_NFA_STATES:
        raise TooLarge(f"more than {MAX_KEY_NFA_STATES} NFA states")
    space = _KeySpace(((0, END_SYMBOL),))
    start = space.state(space.closure([space.frag(lang, space.FINAL)]))

    def row(i: int) -> tuple:
        if len(space.nsets) > MAX_SEARCH_STATES:
            raise TooLarge(f"more than {MAX_SEARCH_STATES} DFA states")
        return space.expand(i)

    def step(i: int, sym: int) -> int:
        for t, ranges in row(i):
            for a, b in ranges:
                if a <= sym <= b:
                    return t
        raise AssertionError("the DFA is complete")

    def settle(i: int, sym: int) -> List[int]:
        seen: List[int] = []
        while i not in seen:
            seen.append(i)
            i = step(i, sym)
        return seen + [i]

    q_s = settle(start, START_SYMBOL)[-1]
    # the empty text: some word of anchors alone
    empty = False
    seen = {start}
    stack = [start]
    while stack:
        q = stack.pop()
        empty = empty or space.in_language[q]
        for sym in (START_SYMBOL, END_SYMBOL):
            t = step(q, sym)
            if t not in seen:
                seen.add(t)
                stack.append(t)
    # the code-point part from q_s (new state 0: q_s's edges, accepting the empty text)
    index: Dict[int, int] = {}
    order: List[int] = []
    groups: List[tuple] = [()]
    accepting: List[bool] = [empty]

    def number(q: int) -> int:
        k = index.get(q)
        if k is None:
            k = index[q] = len(groups)
            order.append(q)
            groups.append(())
            accepting.append(any(space.in_language[x] for x in settle(q, END_SYMBOL)))
        return k

    def code_row(q: int) -> tuple:
        out = []
        for t, ranges in row(q):
            rs = tuple((a, min(b, ir.MAX_UNICODE)) for a, b in ranges if a <= ir.MAX_UNICODE)
            if rs:
                out.append((number(t), rs))
        return tuple(out)

    groups[0] = code_row(q_s)
    i = 0
    while i < len(order):
        groups[index[order[i]]] = code_row(order[i])
        i += 1
    return tuple(groups), tuple(accepting)


def _pieces(groups: tuple) -> List[Tuple[list, list, list]]:
    """Each state's edges as three lists (range starts, range ends, targets) in ascending
    code points."""
    out = []
    for row in groups:
        ps = sorted((a, b, t) for t, ranges in row for a, b in ranges)
        out.append(([p[0] for p in ps], [p[1] for p in ps], [p[2] for p in ps]))
    return out


def product_dfa(d1: Dfa, d2: Dfa, both: Callable[[bool, bool], bool],
                limit: Optional[int] = None) -> Dfa:
    """The DFA of pairs (complete DFAs over the same code points): a pair accepts when
    both(first accepts, second accepts). TooLarge past MAX_SEARCH_STATES pairs (or past
    limit, when smaller).

    Pairs are numbered in the order a queue walk finds them (a pair's edges in ascending
    code points), and a pair's edges are maximal runs of code points. Each state's edges
    are sorted once (a format's states meet many states of the pattern), not per pair."""
    cap = MAX_SEARCH_STATES if limit is None else min(limit, MAX_SEARCH_STATES)
    g1, a1 = d1
    g2, a2 = d2
    x_all, y_all = _pieces(g1), _pieces(g2)
    n2 = len(g2)
    index = {0: 0}                   # pair code p * n2 + q -> number
    order = [0]
    groups: List[tuple] = []
    i = 0
    while i < len(order):
        p, q = divmod(order[i], n2)
        i += 1
        xa, xb, xt = x_all[p]
        ya, yb, yt = y_all[q]
        nx, ny = len(xa), len(ya)
        by: Dict[int, list] = {}
        j = k = 0
        while j < nx and k < ny:
            lo = xa[j] if xa[j] > ya[k] else ya[k]
            b1, b2 = xb[j], yb[k]
            hi = b1 if b1 < b2 else b2
            if lo <= hi:
                code = xt[j] * n2 + yt[k]
                n = index.get(code)
                if n is None:
                    n = index[code] = len(order)
                    order.append(code)
                    if len(order) > cap:
                        raise TooLarge(f"more than {cap} DFA states")
                rs = by.get(n)
                if rs is None:
                    by[n] = [(lo, hi)]
                elif rs[-1][1] + 1 == lo:
                    rs[-1] = (rs[-1][0], hi)
                else:
                    rs.append((lo, hi))
            if b1 < b2:
                j += 1
            else:
                k += 1
        groups.append(tuple(sorted((t, tuple(rs)) for t, rs in by.items())))
    return tuple(groups), tuple(both(a1[c // n2], a2[c % n2]) for c in order)


def minimal(d: Dfa) -> Tuple[Optional[int], List[Tuple[bool, Dict[int, tuple]]]]:
    """The states of d that can reach acceptance, merged by equal futures (Moore): (start
    class or None when the language is empty, rows[k] = (accepting, {class: ranges}))."""
    groups, accepting = d
    n = len(groups)
    preds: List[List[int]] = [[] for _ in range(n)]
    for q, row in enumerate(groups):
        for t, _ in row:
            preds[t].append(q)
    live = _reach_back(preds, {q for q in range(n) if accepting[q]})
    if 0 not in live:
        return None, []
    states = sorted(live)
    block = {q: int(accepting[q]) for q in states}
    block, count = refine_blocks(states, block, groups)
    # (keys name the blocks of the round before: the same blocks, maybe numbered otherwise)
    rows: List[Tuple[bool, Dict[int, tuple]]] = [(False, {}) for _ in range(count)]
    for q in states:
        edges: Dict[int, list] = {}
        for t, ranges in groups[q]:
            if t in block:
                edges.setdefault(block[t], []).extend(ranges)
        rows[block[q]] = (bool(accepting[q]), {b: ir.normalize_ranges(rs)
                                               for b, rs in edges.items()})
    return block[0], rows


def dfa_to_expr(d: Dfa) -> ir.Expr:
    """The language of d as an IR expression (state elimination, the state with the fewest
    edges in times out first)."""
    start, rows = minimal(d)
    if start is None:
        return ir.NOTHING
    n = len(rows)
    S, F = n, n + 1
    out: Dict[int, Dict[int, ir.Expr]] = {q: {} for q in range(n + 2)}
    inn: Dict[int, Dict[int, ir.Expr]] = {q: {} for q in range(n + 2)}

    def put(p: int, q: int, e: ir.Expr) -> None:
        old = out[p].get(q)
        e = e if old is None else ir.alt(old, e)
        out[p][q] = e
        inn[q][p] = e

    put(S, start, ir.EMPTY)
    for q, (acc, edges) in enumerate(rows):
        if acc:
            put(q, F, ir.EMPTY)
        for t, ranges in edges.items():
            put(q, t, ir.CharSet(ranges))
    left = set(range(n))
    while left:
        q = min(left, key=lambda s: (len(inn[s]) - (s in inn[s])) * (len(out[s]) - (s in out[s])))
        left.discard(q)
        loop = out[q].pop(q, None)
        inn[q].pop(q, None)
        mid = ir.repeat(loop, 0, None) if loop is not None else ir.EMPTY
        ins = list(inn[q].items())
        outs = list(out[q].items())
        for p, _ in ins:
            del out[p][q]
        for r, _ in outs:
            del inn[r][q]
        for p, e1 in ins:
            for r, e2 in outs:
                put(p, r, ir.seq(e1, mid, e2))
        inn[q].clear()
        out[q].clear()
    return out[S].get(F, ir.NOTHING)
