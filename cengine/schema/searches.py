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

import numpy as np

from .. import ir
from ..errors import CompileError, LimitError
from ..regex import (END_SYMBOL, START_SYMBOL, SearchAlternative, _check_size,
                     regex_to_expr, search_parts, simple_search_expr)
from .keys import (MAX_KEY_NFA_STATES, _KeySpace, _reach_back, _thompson_states,
                   distinct_rows, refine_blocks)

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
    space = _KeySpace((0, END_SYMBOL))
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


def _sorted_set(x: np.ndarray) -> np.ndarray:
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if len(x) else x


def _interval_table(groups: tuple) -> Tuple[np.ndarray, np.ndarray]:
    """A DFA's rows as a table over the elementary intervals of its range bounds: (starts,
    table), interval j being starts[j]..starts[j + 1] - 1 and table[q, j] its target from q
    (-1: none, as in the surrogates)."""
    q_of, t_of, a_of, b_of = [], [], [], []
    for q, row in enumerate(groups):
        for t, ranges in row:
            for a, b in ranges:
                q_of.append(q)
                t_of.append(t)
                a_of.append(a)
                b_of.append(b + 1)
    a_arr = np.array(a_of, np.int64)
    b_arr = np.array(b_of, np.int64)
    starts = _sorted_set(np.concatenate((a_arr, b_arr)))
    table = np.full((len(groups), max(len(starts) - 1, 1)), -1, np.int64)
    # every range's cells at once: its columns ca..cb-1 (the ranges of a row are disjoint)
    ca = np.searchsorted(starts, a_arr)
    span = np.searchsorted(starts, b_arr) - ca
    first = np.repeat(ca - np.cumsum(span) + span, span)
    cols = first + np.arange(int(span.sum()))
    table[np.repeat(np.array(q_of, np.int64), span), cols] = np.repeat(np.array(t_of, np.int64),
                                                                       span)
    return starts, table


def _on_intervals(starts: np.ndarray, table: np.ndarray, joint: np.ndarray) -> np.ndarray:
    """table (over starts' intervals) read over the finer intervals starting at joint[:-1]."""
    j = np.searchsorted(starts, joint[:-1], side="right") - 1
    j[(j < 0) | (j >= len(starts) - 1)] = table.shape[1]        # outside: the -1 column
    return np.hstack((table, np.full((len(table), 1), -1, np.int64)))[:, j]


# cells (pairs x intervals) of one step of product_dfa's breadth-first walk
_PRODUCT_CHUNK = 1 << 20


def product_dfa(d1: Dfa, d2: Dfa, both: Callable[[bool, bool], bool]) -> Dfa:
    """The DFA of pairs (complete DFAs over the same code points): a pair accepts when
    both(first accepts, second accepts). TooLarge past MAX_SEARCH_STATES pairs.

    Pairs are numbered in the order a queue walk finds them (a pair's edges in ascending
    code points), and a pair's edges are maximal runs of code points. Both DFAs are read as
    tables over the intervals of all their bounds, so the walk takes a whole layer of pairs
    at a time in numpy (a long format times a pattern took tens of ms pair by pair)."""
    g1, a1 = d1
    g2, a2 = d2
    s1, t1 = _interval_table(g1)
    s2, t2 = _interval_table(g2)
    joint = _sorted_set(np.concatenate((s1, s2)))
    t1 = _on_intervals(s1, t1, joint)
    t2 = _on_intervals(s2, t2, joint)
    lo_of = joint[:-1]
    hi_of = joint[1:] - 1
    width = len(lo_of)
    n2 = len(g2)
    index = {0: 0}                   # pair code p * n2 + q -> number
    order = [0]
    groups: List[tuple] = []
    layer = [0]
    while layer:
        nxt: List[int] = []
        step = max(1, _PRODUCT_CHUNK // max(width, 1))
        for c in range(0, len(layer), step):
            codes_in = np.array(layer[c:c + step], np.int64)
            x = t1[codes_in // n2]
            y = t2[codes_in % n2]
            codes = np.where((x >= 0) & (y >= 0), x * n2 + y, -1)
            # new pairs in the order the queue walk meets them (row by row, left to right)
            flat = codes.ravel()
            ids, firsts = distinct_rows(flat)
            numbers = []
            for code in flat[firsts].tolist():
                k = index.get(code)
                if k is None and code >= 0:
                    k = index[code] = len(order)
                    order.append(code)
                    nxt.append(code)
                    if len(order) > MAX_SEARCH_STATES:
                        raise TooLarge(f"more than {MAX_SEARCH_STATES} DFA states")
                numbers.append(-1 if k is None else k)
            number = np.array(numbers, np.int64)[ids].reshape(codes.shape)
            # maximal runs of one target, row by row
            live = codes >= 0
            begin = live.copy()
            begin[:, 1:] &= codes[:, 1:] != codes[:, :-1]
            stop = live.copy()
            stop[:, :-1] &= codes[:, :-1] != codes[:, 1:]
            rows, b_cols = np.nonzero(begin)
            _, e_cols = np.nonzero(stop)
            tgt = number[rows, b_cols]
            by_row = np.lexsort((b_cols, tgt, rows))
            rows_l = rows[by_row].tolist()
            tgt_l = tgt[by_row].tolist()
            lo_l = lo_of[b_cols[by_row]].tolist()
            hi_l = hi_of[e_cols[by_row]].tolist()
            made: List[list] = [[] for _ in range(len(codes_in))]
            for r, t, lo, hi in zip(rows_l, tgt_l, lo_l, hi_l):
                out = made[r]
                if out and out[-1][0] == t:
                    out[-1][1].append((lo, hi))
                else:
                    out.append((t, [(lo, hi)]))
            groups.extend(tuple((t, tuple(rs)) for t, rs in out) for out in made)
        layer = nxt
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
