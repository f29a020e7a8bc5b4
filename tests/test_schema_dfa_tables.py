"""The code-point DFA steps the length, search and format-pattern languages share, read as
tables over elementary intervals (keys.distinct_rows, keys.refine_blocks) and the
pair walk searches.product_dfa: checked against brute force over every code point of small
alphabets, on random DFAs with holes (uncovered code points, as the surrogates), dead
targets and long chains (the email format's bounded parts, whose refinement takes one round
per chain link)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cengine import ir
from cengine.schema import keys, searches

TOP = 40            # code points 0..TOP of the random DFAs


def random_dfa(rnd: random.Random, n: int, holes: bool = True, outside: int = 0):
    """(groups, accepting): n states over 0..TOP, targets in 0..n + outside - 1."""
    cuts = sorted(rnd.sample(range(1, TOP + 1), rnd.randint(0, 6)))
    pieces = list(zip([0] + cuts, [c - 1 for c in cuts] + [TOP]))
    groups = []
    for _ in range(n):
        by: dict = {}
        for a, b in pieces:
            if holes and rnd.random() < 0.15:
                continue
            by.setdefault(rnd.randrange(n + outside), []).append((a, b))
        groups.append(tuple(sorted((t, ir.normalize_ranges(rs)) for t, rs in by.items())))
    return tuple(groups), tuple(rnd.random() < 0.4 for _ in range(n))


def step(groups, q, c):
    for t, ranges in groups[q]:
        if any(a <= c <= b for a, b in ranges):
            return t
    return None


def coarsest(states, block, groups):
    """The coarsest partition of states refining block and stable under every code point
    (a target outside states is dead), by pairwise distinguishability; classes numbered in
    the order of states."""
    inside = set(states)

    def target(q, c):
        t = step(groups, q, c)
        return t if t in inside else None
    apart = {(p, q) for p in states for q in states if block[p] != block[q]}
    changed = True
    while changed:
        changed = False
        for p in states:
            for q in states:
                if (p, q) in apart:
                    continue
                for c in range(TOP + 1):
                    s, t = target(p, c), target(q, c)
                    if (s is None) != (t is None) or (s is not None and (s, t) in apart):
                        apart.add((p, q))
                        changed = True
                        break
    out: dict = {}
    reps: list = []
    for q in states:
        for k, r in enumerate(reps):
            if (q, r) not in apart:
                out[q] = k
                break
        else:
            out[q] = len(reps)
            reps.append(q)
    return out, len(reps)


@pytest.mark.parametrize("seed", range(60))
def test_refine_blocks_is_the_coarsest_stable_partition(seed):
    rnd = random.Random(seed)
    n = rnd.randint(1, 12)
    groups, _ = random_dfa(rnd, n, outside=2)
    states = sorted(rnd.sample(range(n), rnd.randint(1, n)))
    block = {q: rnd.choice("xyz") for q in states}     # any hashable initial classes
    assert keys.refine_blocks(states, block, groups) == coarsest(states, block, groups)


def test_refine_blocks_long_chain():
    # a chain q0 -> q1 -> ... -> q(n-1) accepting, and a second chain one link shorter: the
    # partition needs one round per link, every state its own class but the two ends
    n = 60
    groups = [((i + 1, ((97, 97),)),) for i in range(n - 1)] + [()]
    groups += [((n + i + 1, ((97, 97),)),) for i in range(n - 2)] + [()]
    states = list(range(2 * n - 1))
    accepting = {n - 1, 2 * n - 2}
    block, count = keys.refine_blocks(states, {q: q in accepting for q in states}, groups)
    assert count == n
    assert all(block[n + i] == block[i + 1] for i in range(n - 1))
    assert len(set(block[q] for q in range(n))) == n


@pytest.mark.parametrize("rows", [
    [[1, 2], [3, 4], [1, 2], [0, 0]],
    [[5], [5], [5]],
    [[2, 1, 0]],
])
def test_distinct_rows(rows):
    a = np.array(rows, np.int32)
    ids, firsts = keys.distinct_rows(a)
    seen: dict = {}
    want = [seen.setdefault(tuple(r), len(seen)) for r in rows]
    assert ids.tolist() == want
    assert firsts.tolist() == [want.index(k) for k in range(len(seen))]
    flat = np.array([r[0] for r in rows], np.int64)           # 1-D: the items
    seen = {}
    assert keys.distinct_rows(flat)[0].tolist() == [seen.setdefault(x, len(seen))
                                                    for x in flat.tolist()]


def product_by_code_points(d1, d2, both):
    """The pair DFA by a queue walk reading every code point in order."""
    (g1, a1), (g2, a2) = d1, d2
    index = {(0, 0): 0}
    order = [(0, 0)]
    groups = []
    i = 0
    while i < len(order):
        p, q = order[i]
        i += 1
        by: dict = {}
        for c in range(TOP + 1):
            s, t = step(g1, p, c), step(g2, q, c)
            if s is None or t is None:
                continue
            k = index.setdefault((s, t), len(order))
            if k == len(order):
                order.append((s, t))
            rs = by.setdefault(k, [])
            if rs and rs[-1][1] + 1 == c:
                rs[-1] = (rs[-1][0], c)
            else:
                rs.append((c, c))
        groups.append(tuple(sorted((t, tuple(rs)) for t, rs in by.items())))
    return tuple(groups), tuple(both(a1[p], a2[q]) for p, q in order)


@pytest.mark.parametrize("seed", range(80))
def test_product_dfa_by_code_points(seed):
    rnd = random.Random(1000 + seed)
    d1 = random_dfa(rnd, rnd.randint(1, 10))
    d2 = random_dfa(rnd, rnd.randint(1, 10))
    both = rnd.choice([lambda a, b: a and b, lambda a, b: a and not b, lambda a, b: a or b])
    assert searches.product_dfa(d1, d2, both) == product_by_code_points(d1, d2, both)


def cycle(n: int):
    """n states in a ring, every code point one step on, all accepting."""
    return tuple((((i + 1) % n, ((0, TOP),)),) for i in range(n)), (True,) * n


def test_product_dfa_bounded(monkeypatch):
    # two rings of coprime sizes: every pair is reached, the walk stops past the bound
    n = 30
    monkeypatch.setattr(searches, "MAX_SEARCH_STATES", 100)
    with pytest.raises(searches.TooLarge):
        searches.product_dfa(cycle(n), cycle(n - 1), lambda a, b: a and b)
    monkeypatch.setattr(searches, "MAX_SEARCH_STATES", n * (n - 1))
    got = searches.product_dfa(cycle(n), cycle(n - 1), lambda a, b: a and b)
    assert got == product_by_code_points(cycle(n), cycle(n - 1), lambda a, b: a and b)
    assert len(got[0]) == n * (n - 1)
