"""A bounded repeat whose item begins with a star: (x* '@')? must not accept x* alone.

Found while enforcing `format: uri` (the authority's optional `userinfo '@'`). The builder
(cengine/_build_nfa.pyx) used to close a star's loop on the state the star was emitted from; when
that state also held an enclosing optional's skip, the skip stayed open after `x x` and the
'@' was never needed (`^(a*b)?c$` accepted "ac"). A star now loops through a head of its own;
the builder's twin in tests/oracles does the same.
"""
from __future__ import annotations

import pytest

import cengine
from cengine import ir
from cengine.grammar import Grammar

A = ir.charset([(ord("a"), ord("a"))])


def _accepts_ir(expr, doc: str) -> bool:
    g = ir.GrammarIR()
    g.add("root", expr)
    m = Grammar.from_ir(g).matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


def _accepts_regex(pattern: str, doc: str) -> bool:
    m = cengine.compile_regex(pattern).matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


OPT_STAR_AT = ir.seq(ir.opt(ir.seq(ir.repeat(A, 0, None), ir.lit("@"))), ir.lit("b"))

CASES = [
    (lambda d: _accepts_ir(OPT_STAR_AT, d), ["b", "@b", "aa@b"], ["ab", "aab"]),
    (lambda d: _accepts_regex("^(a*b)?c$", d), ["c", "bc", "aabc"], ["ac", "aac"]),
    (lambda d: _accepts_regex("^(?:a*b){0,2}c$", d), ["c", "abc", "babc"], ["ac", "abac"]),
]


@pytest.mark.parametrize("accepts,good,bad", CASES, ids=["ir", "regex-opt", "regex-bounded"])
def test_optional_item_starting_with_a_star(accepts, good, bad):
    assert all(accepts(d) for d in good), good
    assert not any(accepts(d) for d in bad), [d for d in bad if accepts(d)]


def test_alt_with_empty_is_the_workaround():
    expr = ir.seq(ir.alt(ir.EMPTY, ir.seq(ir.repeat(A, 0, None), ir.lit("@"))), ir.lit("b"))
    assert all(_accepts_ir(expr, d) for d in ["b", "@b", "aa@b"])
    assert not any(_accepts_ir(expr, d) for d in ["ab", "aab"])
