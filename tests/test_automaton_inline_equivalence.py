"""The inlining pass (cengine.automaton._inline_small_rules, over int arrays in
cengine._build_inline) against the frozen pure-Python pass it replaced (the oracle
tests/oracles/inline_reference.py): for every grammar the same rule -> expression (structure,
and sharing: which subtrees are one object, which are the grammar's own objects), the same
rule -> callees, and for a refused grammar the same error, word for word.

Corpus: random IR grammars (hypothesis: shared subtrees, counted runs on both sides of
UNROLL_INLINE_MAX, whitespace wrappers, Dfa leaves, undefined and recursive rules, small and
large inlining limits), llama.cpp's grammars, the tool schemas, every JSON-Schema-Test-Suite
schema the compiler accepts (both property orders, open and closed objects), regexes,
lexicons, the IR grammars of tests/grammars_ir.py, and a sample of the MaskBench corpus
when ../shared/corpora is there.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammars_ir
from grammars_ir import ir_or_none
import material
from oracles import inline_reference
from cengine import CompileError, automaton, ir
from cengine._build_inline import UNROLL_INLINE_MAX, inline_small_rules
from cengine.gbnf import parse_gbnf
from cengine.lexicon import lexicon_to_ir
from cengine.regex import regex_to_ir
from cengine.schema import schema_to_ir

TOOLS = Path(__file__).resolve().parent.parent / "testdata" / "bench_schemas" / "tools"
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "maskbench-dev"
WS = automaton._Whitespace
LIMITS = (automaton.INLINE_MAX_MATCH, automaton.INLINE_MAX_SIZE)


def _shape(g, exprs):
    """exprs as nested tuples that also say which nodes are one object: a node of the
    grammar's own expressions is ("in", its number), a node met before ("@", its number)."""
    inputs = {}

    def number(e):
        if id(e) in inputs:
            return
        inputs[id(e)] = len(inputs)
        if type(e) in (ir.Seq, ir.Alt):
            for it in e.items:
                number(it)
        elif type(e) in (ir.Repeat, WS):
            number(e.item)

    for r in g.rules.values():
        number(r.expr)
    seen = {}

    def shape(e):
        if id(e) in inputs:
            return ("in", inputs[id(e)])
        if id(e) in seen:
            return ("@", seen[id(e)])
        seen[id(e)] = len(seen)
        t = type(e)
        if t in (ir.Seq, ir.Alt):
            return (t.__name__,) + tuple(shape(it) for it in e.items)
        if t is ir.Repeat:
            return ("Repeat", shape(e.item), e.lo, e.hi)
        if t is WS:
            return ("WS", shape(e.item))
        return ("leaf", e)

    return [(n, shape(x)) for n, x in exprs.items()]


def _outcome(g, inline, limits):
    try:
        return inline(g, WS, *limits), None
    except (CompileError, RecursionError, ValueError) as e:
        return None, e


def assert_same_inlining(g: ir.GrammarIR, limits=LIMITS) -> None:
    fast, fast_err = _outcome(g, inline_small_rules, limits)
    # the oracle (and _shape) recurse in Python as deep as the expressions and rule chains go
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, 40_000))
    try:
        ref, ref_err = _outcome(g, inline_reference.inline_small_rules, limits)
        _compare(g, fast, fast_err, ref, ref_err)
        _assert_root_uses(g, limits)
    finally:
        sys.setrecursionlimit(depth)


def _assert_root_uses(g: ir.GrammarIR, limits) -> None:
    """root_uses=True (what the build takes): the rules the root reaches through the calls
    the pass returns, in the grammar's order, and exactly their expressions (the same
    objects shared alike), with and without the builder's any-order node types."""
    for any_order in (None, automaton._MADE_ELSEWHERE):
        try:
            exprs, calls = inline_small_rules(g, WS, *limits, any_order)
        except (CompileError, RecursionError, ValueError) as e:
            with pytest.raises(type(e)):
                inline_small_rules(g, WS, *limits, any_order, True)
            continue
        if g.root not in g.rules:
            continue            # (the build refuses it first)
        used = {g.root}
        stack = [g.root]
        while stack:
            for m in calls[stack.pop()] - used:
                used.add(m)
                stack.append(m)
        got, in_use = inline_small_rules(g, WS, *limits, any_order, True)
        assert in_use == [n for n in g.rules if n in used]
        assert list(got) == in_use
        want = {n: exprs[n] for n in in_use}
        assert got == want
        assert _shape(g, got) == _shape(g, want)


def _compare(g, fast, fast_err, ref, ref_err):
    if fast_err is not None or ref_err is not None:
        assert type(fast_err) is type(ref_err), (fast_err, ref_err)
        assert str(fast_err) == str(ref_err)
        if isinstance(ref_err, CompileError):
            assert (fast_err.rule, fast_err.line, fast_err.column) == \
                (ref_err.rule, ref_err.line, ref_err.column)
        return
    (fast_exprs, fast_calls), (ref_exprs, ref_calls) = fast, ref
    assert list(fast_exprs) == list(ref_exprs) == list(g.rules)
    assert fast_exprs == ref_exprs
    assert _shape(g, fast_exprs) == _shape(g, ref_exprs)
    assert list(fast_calls) == list(ref_calls)
    assert fast_calls == ref_calls


def test_inline_equivalence_notices_a_difference(monkeypatch):
    # the comparison is not vacuous: an oracle with a smaller body limit inlines fewer rules
    real = inline_reference.inline_small_rules
    monkeypatch.setattr(inline_reference, "inline_small_rules",
                        lambda g, ws, max_match, max_size: real(g, ws, max_match, 1))
    with pytest.raises(AssertionError):
        assert_same_inlining(grammars_ir.json_like())


def test_inline_equivalence_keeps_unchanged_subtrees():
    # a rule that calls nothing inlined comes out as the very same object; a shared subtree
    # that does change is one new object wherever it occurs
    g = ir.GrammarIR()
    shared = ir.seq(ir.lit("<"), ir.Ref("ch"), ir.lit(">"))
    g.add("ch", ir.ByteSet(((0x61, 0x7A),)))
    g.add("plain", ir.repeat(ir.lit("ab"), 0, None))
    g.add("root", ir.Alt((shared, ir.Seq((ir.Ref("plain"), shared)))))
    exprs, calls = inline_small_rules(g, WS, *LIMITS)
    assert exprs["plain"] is g.rules["plain"].expr
    first, second = exprs["root"].items
    assert first is second.items[1] and first == ir.seq(ir.lit("<"), g.rules["ch"].expr,
                                                        ir.lit(">"))
    assert calls["root"] == {"plain"}
    assert_same_inlining(g)


# --- corpus ------------------------------------------------------------------------------

GBNF = material.gbnf_grammars()


@pytest.mark.parametrize("name", sorted(GBNF))
def test_inline_equivalence_llamacpp_gbnf(name):
    g = ir_or_none(parse_gbnf, GBNF[name])
    assert g is not None, f"{name}.gbnf no longer parses"
    assert_same_inlining(g)


SCHEMA_OPTIONS = [dict(closed_objects=closed, property_order=order)
                  for closed in (True, False) for order in ("declared", "any")]


def _tool_irs(path):
    d = json.loads(path.read_text(encoding="utf-8"))
    return [g for kw in SCHEMA_OPTIONS
            if (g := ir_or_none(schema_to_ir, d.get("parameters", d), **kw)) is not None]


TOOL_PATHS = sorted(TOOLS.glob("*.json"))


def test_inline_equivalence_tool_corpus_is_not_empty():
    assert sum(len(_tool_irs(p)) for p in TOOL_PATHS) >= 40


@pytest.mark.parametrize("path", TOOL_PATHS, ids=lambda p: p.name)
def test_inline_equivalence_tool_schemas(path):
    for g in _tool_irs(path):
        assert_same_inlining(g)


SUITE = material.json_schema_test_suite("draft2020-12")


def _suite_irs(stem):
    return [g for group in SUITE[stem] for kw in SCHEMA_OPTIONS
            if (g := ir_or_none(schema_to_ir, group["schema"], **kw)) is not None]


SUITE_STEMS = [stem for stem in sorted(SUITE) if _suite_irs(stem)]


def test_inline_equivalence_suite_corpus_is_not_empty():
    assert len(SUITE_STEMS) >= 15


@pytest.mark.parametrize("stem", SUITE_STEMS)
def test_inline_equivalence_schema_suite(stem):
    for g in _suite_irs(stem):
        assert_same_inlining(g)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="MaskBench corpus (../shared/corpora) absent")
@pytest.mark.parametrize("order", ["declared", "any"])
def test_inline_equivalence_maskbench_sample(order):
    # every 25th schema with the benchmark's options (the whole corpus, both orders, is
    # compared automaton for automaton when the pass changes; see docs/benchmarks.md)
    n = 0
    for path in sorted(CORPUS.glob("*.json"))[::25]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        g = ir_or_none(schema_to_ir, schema, closed_objects=False, whitespace_budget=None,
                        property_order=order)
        if g is not None and len(g.rules) <= 2000:      # (the oracle is slow)
            assert_same_inlining(g)
            n += 1
    assert n >= 50


REGEXES = [r"[a-z]+", r"(a|b)*a(a|b){3}", r"\d{3}-\d{4}", r"(foo|foobar|fo+)?x*",
           r"[^\n]{0,20}", r"é[α-ω]{2,3}[😀-🙏]?", r"(\s*|x)+y", r"a{0,5}b{2}c*",
           r"[a-z]{40}", r"(ab){33,}"]


@pytest.mark.parametrize("pattern", REGEXES)
def test_inline_equivalence_regex(pattern):
    assert_same_inlining(regex_to_ir(pattern))


@pytest.mark.parametrize("words", [("yes", "no", "maybe"), tuple(f"w{i}" for i in range(40))],
                         ids=lambda w: f"{len(w)}words")
def test_inline_equivalence_lexicon(words):
    assert_same_inlining(lexicon_to_ir(words))


@pytest.mark.parametrize("name", sorted(grammars_ir.ALL))
def test_inline_equivalence_ir_grammars(name):
    assert_same_inlining(grammars_ir.ALL[name]())


# --- hand-made cases: refusals, limits, long runs ---------------------------------------

def _g(**rules):
    g = ir.GrammarIR()
    for n, e in rules.items():
        g.add(n, e)
    return g


def _nested(depth):
    e = ir.lit("x")
    for _ in range(depth):
        e = ir.Seq((e, ir.lit("y")))
    return e


def _chain(n):
    # r0 -> r1 -> ... -> a literal: every link inlined into the one before
    g = ir.GrammarIR()
    g.add("root", ir.seq(ir.Ref("r0"), ir.lit("!")))
    for i in range(n):
        g.add(f"r{i}", ir.Ref(f"r{i + 1}") if i + 1 < n else ir.lit("z"))
    return g


CASES = {
    "undefined": lambda: _g(root=ir.Ref("nope")),
    "undefined_second_rule": lambda: _g(root=ir.seq(ir.Ref("a"), ir.Ref("b")),
                                        a=ir.alt(ir.Ref("x1"), ir.Ref("x2"), ir.Ref("x3")),
                                        b=ir.lit("b")),
    "undefined_several": lambda: _g(root=ir.seq(*(ir.Ref(f"u{i}") for i in range(12)))),
    "too_deep": lambda: _g(root=_nested(4100)),
    "deep_but_fine": lambda: _g(root=_nested(3990)),
    "empty_alternation": lambda: _g(root=ir.Ref("a"), a=ir.Alt(())),
    "empty_alternation_past_cap": lambda: _g(
        root=ir.Ref("a"), a=ir.Seq((ir.lit("x" * 20), ir.Alt(())))),
    "long_run_of_a_call": lambda: _g(
        root=ir.seq(ir.repeat(ir.Ref("c"), 0, UNROLL_INLINE_MAX + 1), ir.Ref("c")),
        c=ir.lit("c")),
    "long_run_only": lambda: _g(root=ir.repeat(ir.Ref("c"), 40, None), c=ir.lit("c")),
    "short_run": lambda: _g(root=ir.repeat(ir.Ref("c"), 2, UNROLL_INLINE_MAX), c=ir.lit("c")),
    "repeat_zero_of_unbounded": lambda: _g(root=ir.seq(ir.Ref("a"), ir.lit("x")),
                                           a=ir.Repeat(ir.Ref("b"), 0, 0),
                                           b=ir.repeat(ir.lit("b"), 0, None)),
    "whitespace_rules": lambda: grammars_ir.json_like(),
    "chain": lambda: _chain(3000),
    "mutual_recursion": lambda: _g(root=ir.Ref("a"), a=ir.alt(ir.lit("a"), ir.Ref("b")),
                                   b=ir.seq(ir.lit("("), ir.Ref("a"), ir.lit(")"))),
    "dfa": lambda: _g(root=ir.seq(ir.Ref("d"), ir.Ref("loop")),
                      d=ir.Dfa((((0x61, 0x62, 1),), ()), (False, True)),
                      loop=ir.Dfa((((0x61, 0x61, 0),),), (True,))),
    "ws_wrapper_in_input": lambda: _g(root=ir.seq(WS(ir.Ref("c")), ir.Ref("c")),
                                      c=ir.lit("c")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inline_equivalence_cases(name):
    assert_same_inlining(CASES[name]())


# --- random grammars ------------------------------------------------------------------------

NAMES = ["root", "a", "b", "c", "d"]
_DFAS = [ir.Dfa((((0x61, 0x62, 1),), ()), (False, True)),
         ir.Dfa((((0x61, 0x61, 0),),), (True,))]


def _leaves():
    return st.one_of(
        st.binary(min_size=0, max_size=20).map(ir.Bytes),
        st.just(ir.ByteSet(((0x30, 0x39),))),
        st.sampled_from([0x7F, 0x7FF, 0xFFFF, 0x10FFFF])
        .map(lambda top: ir.CharSet(((0x20, top),))),
        st.sampled_from(NAMES).map(ir.Ref),
        st.sampled_from(_DFAS),
        st.just(ir.NOTHING),
    )


@st.composite
def random_grammars(draw):
    # a pool of subexpressions that later ones and the rules reuse (shared objects, as the
    # front ends make them)
    pool = draw(st.lists(_leaves(), min_size=2, max_size=5))
    pool += [ir.Ref(n) for n in NAMES]
    for _ in range(draw(st.integers(2, 12))):
        kind = draw(st.sampled_from(["seq", "alt", "repeat", "long", "ws"]))
        pick = st.sampled_from(pool)
        if kind in ("seq", "alt"):
            items = tuple(draw(st.lists(pick, min_size=1, max_size=3)))
            pool.append(ir.Seq(items) if kind == "seq" else ir.Alt(items))
        elif kind == "repeat":
            lo = draw(st.integers(0, 3))
            hi = draw(st.one_of(st.none(), st.integers(lo, lo + 70)))
            pool.append(ir.Repeat(draw(pick), lo, hi))
        elif kind == "long":
            lo = draw(st.integers(0, 40))
            pool.append(ir.Repeat(ir.Ref(draw(st.sampled_from(NAMES))), lo,
                                  draw(st.one_of(st.none(), st.integers(lo, 40)))))
        else:
            pool.append(WS(draw(pick)))
    g = ir.GrammarIR()
    for n in NAMES:
        if draw(st.integers(0, 9)) == 0:
            continue                    # sometimes undefined
        # mostly the latest (composite) subexpressions, sometimes a leaf: small rules to inline
        e = draw(st.sampled_from(pool[-3:]) if draw(st.booleans()) else _leaves())
        g.add(n, e, container=draw(st.integers(0, 5)) == 0,
              whitespace=draw(st.integers(0, 4)) == 0)
    g.root = draw(st.sampled_from(NAMES))
    return g


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_grammars(), st.integers(0, 24), st.integers(1, 300))
def test_inline_equivalence_random_ir(g, max_match, max_size):
    assert_same_inlining(g, limits=(max_match, max_size))
