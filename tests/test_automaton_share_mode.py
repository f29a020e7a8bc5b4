"""The builder's share mode (automaton.build with minimize=True), pass by pass:

* the subset construction names a DFA state by the NFA states of its closure that act (byte
  edges, calls, the accept state), so closures that differ only in an alternative's end or a
  loop head make one DFA state, not copies for the minimizer to merge;
* Builder.minimize visits the positions by strongly connected component; it must end in the
  classes that passes over the whole rule until none merges end in (checked against that
  algorithm written out here, on the same unminimized positions).
The language itself is checked by tests/test_automaton_minimize.py (random walks against the
reference numbering) and the brute-force tests."""
from __future__ import annotations

import pytest

import grammars_ir
from cengine import automaton
from cengine.automaton import INF
from cengine._build_nfa import RuleNfa
from cengine.automaton import MAX_NFA_STATES, _builder, _inline_small_rules, _Whitespace
from cengine.regex import regex_to_ir
from cengine.schema import schema_to_ir


def _rules(g):
    exprs, calls = _inline_small_rules(g)
    used, stack = {g.root}, [g.root]
    while stack:
        for m in calls[stack.pop()] - used:
            used.add(m)
            stack.append(m)
    names = [n for n in g.rules if n in used]
    return exprs, names, {n: i for i, n in enumerate(names)}


def _subset_construction(g, share):
    """A Builder holding g's rules determinized (the rules whose positions are made directly:
    those), nothing merged yet; and the rule names."""
    exprs, names, index = _rules(g)
    b = _builder()
    for i, n in enumerate(names):
        if type(exprs[n]) in automaton._MADE_ELSEWHERE:      # an open object's free keys
            b.add_positions(i, automaton._positions_made_elsewhere(exprs[n], index))
            continue
        nfa = RuleNfa(index, n, g.rules[n].whitespace, MAX_NFA_STATES, _Whitespace, share)
        s, t = nfa.build(exprs[n])
        b.add_rule(i, nfa, s, t)
    return b, names


# (regex, positions of its subset construction in share mode): the alternatives end in the
# same continuation, a copy per alternative was made before
ACTING = [
    ("(a|c)d", 3),                  # start, after a or c, after d
    ("(ab|cd|ef)g", 6),             # start, three middles, after the second letter, after g
    ("(x|y|z)*w", 2),               # the loop's state, after w
    ("[a-c](0|1)?(0|1)?", 4),
]


@pytest.mark.parametrize("pattern,positions", ACTING)
def test_share_mode_makes_no_copy_for_an_alternatives_end(pattern, positions):
    b, _ = _subset_construction(regex_to_ir(pattern), share=True)
    before, after = b.minimize(automaton.MINIMIZE_MAX_ROUNDS)
    assert (before, after) == (positions, positions)


def test_reference_mode_keeps_every_closure_apart():
    """minimize=False numbers the DFA states as the frozen reference does: by whole closures."""
    b, _ = _subset_construction(regex_to_ir("(a|c)d"), share=False)
    assert b.n_positions == 4


def _global_passes(t, names):
    """Positions per rule after merging by passes over the whole rule until none merges (the
    former Builder.minimize, without its cap), on finished tables t of an unminimized build."""
    P = len(t["pos_rule"])
    starts = [int(x) for x in t["rule_start"]]
    total = 0
    for r in range(len(names)):
        b = starts[r]
        e = starts[r + 1] if r + 1 < len(starts) else P
        targets = {p: [int(t["edge_to"][k]) for k in range(t["edge_off"][p], t["edge_off"][p + 1])]
                   + [int(t["call_to"][k]) for k in range(t["call_off"][p], t["call_off"][p + 1])]
                   for p in range(b, e)}
        # depth-first post-order from the rule's start (targets before sources off cycles)
        order, seen = [], set()
        for root in range(b, e):
            if root in seen:
                continue
            seen.add(root)
            stack = [(root, iter(targets[root]))]
            while stack:
                p, it = stack[-1]
                q = next(it, None)
                if q is None:
                    order.append(p)
                    stack.pop()
                elif q not in seen:
                    seen.add(q)
                    stack.append((q, iter(targets[q])))
        cls = {p: p for p in range(b, e)}
        merged = True
        while merged:
            merged, table = False, {}
            for p in order:
                edges = []
                for k in range(t["edge_off"][p], t["edge_off"][p + 1]):
                    lo, hi, ws = int(t["edge_lo"][k]), int(t["edge_hi"][k]), int(t["edge_ws"][k])
                    to = cls[int(t["edge_to"][k])]
                    if edges and edges[-1][1] == lo - 1 and edges[-1][2:] == [ws, to]:
                        edges[-1][1] = hi
                    else:
                        edges.append([lo, hi, ws, to])
                calls = [(int(t["call_rule"][k]), cls[int(t["call_to"][k])])
                         for k in range(t["call_off"][p], t["call_off"][p + 1])]
                sig = (int(t["pos_flags"][p]) & automaton.FLAG_FINAL,
                       tuple(map(tuple, edges)), tuple(calls))
                c = table.setdefault(sig, cls[p])
                if c != cls[p]:
                    cls[p] = c
                    merged = True
        total += len(set(cls.values()))
    return total


def _formats_schema():
    return schema_to_ir({"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z_-]{1,12}$"}},
        "kind": {"enum": ["alpha", "beta", "gamma", "alphabet"]}},
        "required": ["when", "email"]}, closed_objects=False)


CYCLES = {
    "ab-loops": lambda: regex_to_ir(r"((ab|cb)d)*(ab|cb)e"),
    "copies-in-a-loop": lambda: regex_to_ir(r"(x(abc|abd|xbc|xbd)y)*z"),
    "counted-in-a-loop": lambda: regex_to_ir(r"([a-z][a-z0-9-]{0,6}\.)+[a-z]{2,4}"),
    "schema": _formats_schema,
    **{f"ir-{n}": f for n, f in grammars_ir.ALL.items()},
}


@pytest.mark.parametrize("name", sorted(CYCLES))
def test_minimize_by_component_ends_where_whole_rule_passes_end(name):
    g = CYCLES[name]()
    b, names = _subset_construction(g, share=True)
    # the former passes on the same positions (finished tables: every position can finish
    # in these grammars, so finishing prunes no edge and the tables are the positions as made)
    b.shortest()
    t = b.finish([g.rules[n].whitespace for n in names], [g.rules[n].container for n in names],
                 names)
    assert (t["short_len"] < INF).all()
    expected = _global_passes(t, names)
    b2, _ = _subset_construction(g, share=True)
    before, after = b2.minimize(1000)
    assert before == len(t["pos_rule"])
    assert after == expected
