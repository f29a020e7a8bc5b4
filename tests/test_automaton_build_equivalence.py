"""The fast automaton builder (cengine.automaton.build) against the frozen pure-Python one
(the oracle tests/oracles/automaton_reference.py: build_reference): for every grammar of a
broad corpus the tables must be identical, array for array, and a refused grammar must be
refused by both with the same error type and message. The fast builder runs with
minimize=False, the positions as the subset construction numbers them (the oracle predates
the merging of equal positions; tests/test_automaton_minimize.py checks that merging keeps the
language).

Corpus: llama.cpp's grammars, the tool schemas of the benchmark (closed and open objects),
every JSON-Schema-Test-Suite schema that our schema compiler accepts, regexes, lexicons, the
IR grammars of tests/grammars_ir.py, hand-made refusals, and random small IR grammars.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammars_ir
from grammars_ir import ir_or_none
import material
from oracles import automaton_reference
from oracles.free_key_reference import reference_free_keys
from cengine import CompileError, automaton, ir
from cengine.gbnf import parse_gbnf
from cengine.lexicon import lexicon_to_ir
from cengine.regex import regex_to_ir
from cengine.schema import schema_to_ir

TOOLS = Path(__file__).resolve().parent.parent / "testdata" / "bench_schemas" / "tools"


@pytest.fixture(autouse=True)
def _free_keys_as_expressions():
    # the oracle builder predates ir.FreeKey (whose positions cengine._keytrie makes, checked
    # against the old trie expression by test_schema_free_keys_trie): schemas compile their
    # free keys the old way here, so both builders determinize the same expressions
    with reference_free_keys():
        yield


def _outcome(build, g):
    try:
        return build(g), None
    except CompileError as e:
        return None, e


def assert_same_build(g: ir.GrammarIR) -> None:
    fast, fast_err = _outcome(lambda x: automaton.build(x, minimize=False), g)
    ref, ref_err = _outcome(automaton_reference.build_reference, g)
    if ref_err is not None or fast_err is not None:
        assert fast_err is not None and ref_err is not None, (fast_err, ref_err)
        assert type(fast_err) is type(ref_err)
        assert str(fast_err) == str(ref_err)
        assert (fast_err.rule, fast_err.line, fast_err.column) == \
            (ref_err.rule, ref_err.line, ref_err.column)
        return
    for f in dataclasses.fields(ref):
        a, b = getattr(fast, f.name), getattr(ref, f.name)
        if isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray), f.name
            assert a.dtype == b.dtype, f.name
            assert np.array_equal(a, b), f.name
        else:
            assert a == b, f.name


# --- corpus ------------------------------------------------------------------------------

GBNF = material.gbnf_grammars()


@pytest.mark.parametrize("name", sorted(GBNF))
def test_build_equivalence_llamacpp_gbnf(name):
    g = ir_or_none(parse_gbnf, GBNF[name])
    assert g is not None, f"{name}.gbnf no longer parses"
    assert_same_build(g)


def _tool_cases():
    # only the schemas the front end compiles: the builder has nothing to do with the others
    cases = []
    for p in sorted(TOOLS.glob("*.json")):
        d = json.loads(p.read_text(encoding="utf-8"))
        for closed in (True, False):
            if ir_or_none(schema_to_ir, d.get("parameters", d), closed_objects=closed) is not None:
                cases.append((p.name, closed))
    return cases


TOOL_CASES = _tool_cases()


def test_build_equivalence_tool_corpus_is_not_empty():
    assert len(TOOL_CASES) >= 20


@pytest.mark.parametrize("fname,closed", TOOL_CASES)
def test_build_equivalence_tool_schemas(fname, closed):
    d = json.loads((TOOLS / fname).read_text(encoding="utf-8"))
    assert_same_build(schema_to_ir(d.get("parameters", d), closed_objects=closed))


SUITE = material.json_schema_test_suite("draft2020-12")


def _suite_irs(stem):
    out = []
    for group in SUITE[stem]:
        for closed in (False, True):
            g = ir_or_none(schema_to_ir, group["schema"], closed_objects=closed)
            if g is not None:
                out.append(g)
    return out


SUITE_STEMS = [stem for stem in sorted(SUITE) if _suite_irs(stem)]


def test_build_equivalence_suite_corpus_is_not_empty():
    assert len(SUITE_STEMS) >= 15


@pytest.mark.parametrize("stem", SUITE_STEMS)
def test_build_equivalence_schema_suite(stem):
    for g in _suite_irs(stem):
        assert_same_build(g)


REGEXES = [
    r"[a-z]+", r"(a|b)*a(a|b){3}", r"\d{3}-\d{4}", r"(foo|foobar|fo+)?x*", r"[^\n]{0,20}",
    r"é[α-ω]{2,3}[😀-🙏]?", r"(ab|a)(bc|c)*", r"^\w+@\w+\.(com|org)$", r"(\s*|x)+y",
    r"[\u0000-\uffff]{1,2}", r"a{0,5}b{2}c*",
]


@pytest.mark.parametrize("pattern", REGEXES)
def test_build_equivalence_regex(pattern):
    g = ir_or_none(regex_to_ir, pattern)
    assert g is not None, pattern
    assert_same_build(g)


LEXICONS = [
    ("yes", "no", "maybe"),
    ("a", "ab", "abc", "b", "ba"),
    ("héllo", "wörld", "日本", "日本語", "emoji 😀"),
    tuple(f"word{i}" for i in range(60)),
]


@pytest.mark.parametrize("words", LEXICONS, ids=lambda w: f"{len(w)}words")
def test_build_equivalence_lexicon(words):
    g = ir_or_none(lexicon_to_ir, words)
    assert g is not None, words
    assert_same_build(g)


@pytest.mark.parametrize("name", sorted(grammars_ir.ALL))
def test_build_equivalence_ir_grammars(name):
    assert_same_build(grammars_ir.ALL[name]())


# --- refusals: the same error, word for word ----------------------------------------------

def _g(start="root", **rules):
    # rules by name (`root=...` defines the rule named root); start names the root rule
    g = ir.GrammarIR()
    for n, e in rules.items():
        g.add(n, e)
    g.root = start
    return g


REFUSALS = {
    "undefined_rule": lambda: _g(root=ir.seq(ir.lit("a"), ir.Ref("nope"))),
    "missing_root": lambda: _g(x=ir.lit("a")),
    "left_recursion_direct": lambda: _g(root=ir.alt(ir.seq(ir.Ref("root"), ir.lit("a")),
                                                     ir.lit("b"))),
    "left_recursion_indirect": lambda: _g(
        root=ir.Ref("a"), a=ir.alt(ir.seq(ir.Ref("b"), ir.lit("x")), ir.lit("y")),
        b=ir.seq(ir.repeat(ir.lit("z"), 0, 1), ir.Ref("a"))),
    "left_recursion_nullable_prefix": lambda: _g(
        root=ir.Ref("a"), n=ir.repeat(ir.lit("q"), 0, None),
        a=ir.alt(ir.seq(ir.Ref("n"), ir.Ref("n"), ir.Ref("a"), ir.lit("x")), ir.lit("y"))),
    "no_document": lambda: _g(root=ir.seq(ir.lit("a"), ir.Ref("loop")),
                              loop=ir.seq(ir.lit("b"), ir.Ref("loop"))),
    "nothing": lambda: _g(root=ir.NOTHING),
    "whitespace_ambiguous": lambda: _whitespace_ambiguous(),
    "nest_too_deep": lambda: _deep_nullable_chain(300),
}


def _whitespace_ambiguous():
    g = ir.GrammarIR()
    ws = g.add("ws", ir.repeat(ir.ByteSet(((0x20, 0x20),)), 0, None), whitespace=True)
    g.add("root", ir.alt(ir.seq(ws, ir.lit("a")), ir.lit(" b")))
    return g


def _deep_nullable_chain(n):
    # r0 -> r1 -> ... each rule is recursive (so not inlined) and reaches the next rule
    # without consuming a byte
    g = ir.GrammarIR()
    for i in range(n):
        nxt = ir.Ref(f"r{i + 1}") if i + 1 < n else ir.lit("z")
        g.add(f"r{i}", ir.alt(ir.seq(nxt, ir.lit("!")),
                              ir.seq(ir.lit("("), ir.Ref(f"r{i}"), ir.lit(")"))))
    g.root = "r0"
    return g


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_build_equivalence_refusals(name):
    g = REFUSALS[name]()
    with pytest.raises(CompileError):
        automaton_reference.build_reference(g)
    assert_same_build(g)


@pytest.mark.parametrize("limit", [2_000, 50_000, 200_000, 1_000_000])
def test_build_equivalence_work_budget(monkeypatch, limit):
    # the same units: with the same budget, the same grammars are refused
    monkeypatch.setattr(automaton, "MAX_COMPILE_WORK", limit)
    monkeypatch.setattr(automaton_reference, "MAX_COMPILE_WORK", limit)
    for pattern in [r"(a|b)*a(a|b){6}", r"(a|b)*a(a|b){10}", r"[a-z]{1,12}@[a-z]+"]:
        assert_same_build(regex_to_ir(pattern))
    assert_same_build(parse_gbnf(GBNF["json"]))
    assert_same_build(grammars_ir.json_like())


@pytest.mark.parametrize("limit", [5, 40, 400])
def test_build_equivalence_position_limit(monkeypatch, limit):
    monkeypatch.setattr(automaton, "MAX_POSITIONS", limit)
    monkeypatch.setattr(automaton_reference, "MAX_POSITIONS", limit)
    assert_same_build(regex_to_ir(r"(a|b)*a(a|b){6}"))
    assert_same_build(grammars_ir.json_like())


# --- random grammars ------------------------------------------------------------------------

RULES = ["root", "a", "b", "c"]


def _exprs(depth):
    leaf = st.one_of(
        st.binary(min_size=0, max_size=3).map(ir.Bytes),
        st.lists(st.tuples(st.integers(0x20, 0x7F), st.integers(0, 40)), min_size=1, max_size=3)
        .map(lambda rs: ir.ByteSet(ir.normalize_ranges((lo, min(255, lo + w)) for lo, w in rs))),
        st.lists(st.tuples(st.integers(0x60, 0x2000), st.integers(0, 0x900)), min_size=1,
                 max_size=2)
        .map(lambda rs: ir.charset((lo, lo + w) for lo, w in rs)),
        st.sampled_from(RULES).map(ir.Ref),
    )
    if depth == 0:
        return leaf
    sub = _exprs(depth - 1)
    return st.one_of(
        leaf,
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: ir.Seq(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: ir.Alt(tuple(xs))),
        st.tuples(sub, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3)))
        .map(lambda t: ir.Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])),
    )


@st.composite
def random_grammars(draw):
    g = ir.GrammarIR()
    for n in RULES:
        g.add(n, draw(_exprs(2)), container=draw(st.booleans()), whitespace=draw(st.booleans()))
    g.max_depth = draw(st.one_of(st.none(), st.integers(1, 5)))
    g.whitespace_budget = draw(st.one_of(st.none(), st.integers(0, 5)))
    return g


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_grammars())
def test_build_equivalence_random_ir(g):
    assert_same_build(g)
