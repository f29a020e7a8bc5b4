"""Merging equal positions (automaton.build's Builder.minimize) keeps the language: on random
walks the merged automaton allows the same bytes, accepts at the same moments and has the
same shortest completion as the automaton of the subset construction (minimize=False), for
llama.cpp's grammars, the benchmark's tool schemas (open and closed objects), regexes and the
IR grammars of tests/grammars_ir.py; and it does merge where front ends make copies."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import grammars_ir
import material
from cengine import CompileError, Grammar, automaton
from cengine.gbnf import parse_gbnf
from cengine.regex import regex_to_ir
from cengine.schema import schema_to_ir
from walks import walk_random

TOOLS = Path(__file__).resolve().parent.parent / "testdata" / "bench_schemas" / "tools"


def _pair(g):
    return (Grammar(automaton.build(g)), Grammar(automaton.build(g, minimize=False)))


def assert_same_language(g, walks: int = 12, steps: int = 120, seed: int = 0) -> None:
    merged, plain = _pair(g)
    rng = random.Random(seed)
    for w in range(walks):
        # walk one automaton, the other follows; half the walks each way
        lead, follow = (merged, plain) if w % 2 == 0 else (plain, merged)
        a, b = lead.matcher(), follow.matcher()
        for _ in range(steps):
            try:
                allowed = a.allowed_bytes()
            except RuntimeError:          # too many stacks (tests/grammars_ir.ambiguous)
                with pytest.raises(RuntimeError):
                    b.allowed_bytes()
                break
            assert allowed == b.allowed_bytes()
            assert a.is_accepting() == b.is_accepting()
            assert a.completion_length() == b.completion_length()
            walked = walk_random(a, rng, 1)
            if not walked:
                break
            assert b.accept_bytes(walked)


GBNF = material.gbnf_grammars()


@pytest.mark.parametrize("name", sorted(GBNF))
def test_minimize_keeps_llamacpp_gbnf(name):
    assert_same_language(parse_gbnf(GBNF[name]))


def _tool_cases():
    cases = []
    for p in sorted(TOOLS.glob("*.json")):
        for closed in (True, False):
            cases.append((p.name, closed))
    return cases


@pytest.mark.parametrize("fname,closed", _tool_cases())
def test_minimize_keeps_tool_schemas(fname, closed):
    d = json.loads((TOOLS / fname).read_text(encoding="utf-8"))
    try:
        g = schema_to_ir(d.get("parameters", d), closed_objects=closed)
    except CompileError:
        pytest.skip("the schema compiler refuses this schema")
    assert_same_language(g, walks=6)


REGEXES = [r"[a-z]+", r"(a|b)*a(a|b){3}", r"(foo|foobar|fo+)?x*", r"é[α-ω]{2,3}[😀-🙏]?",
           r"(ab|a)(bc|c)*", r"(\s*|x)+y", r"a{0,5}b{2}c*", r"(abc|abd|xbc|xbd)e"]


@pytest.mark.parametrize("pattern", REGEXES)
def test_minimize_keeps_regexes(pattern):
    assert_same_language(regex_to_ir(pattern))


@pytest.mark.parametrize("name", sorted(grammars_ir.ALL))
def test_minimize_keeps_ir_grammars(name):
    # short walks: the ambiguous grammar's stacks multiply with every byte
    assert_same_language(grammars_ir.ALL[name](), walks=12, steps=25)


# (schema, open objects) whose subset construction repeats futures: merged, fewer positions
COPIES = [
    # an open object's free keys: a trie of the declared names, a UTF-8 tail at every node
    ({"type": "object", "properties": {"origin": {"type": "string"},
                                       "destination": {"type": "string"}},
      "required": ["origin", "destination"]}, False),
    # few optional properties: one chain of the later ones per first property
    ({"type": "object", "properties": {k: {"type": "integer"} for k in "abcdef"}}, True),
    # (abc|abd|xbc|xbd): one tail per alternative
    ({"type": "string", "pattern": "^(abc|abd|xbc|xbd)e$"}, True),
]


@pytest.mark.parametrize("schema,closed", COPIES)
def test_minimize_merges_copies(schema, closed):
    g = schema_to_ir(schema, closed_objects=closed)
    merged, plain = _pair(g)
    assert merged.automaton.n_positions < plain.automaton.n_positions
    assert_same_language(g)


def test_minimize_keeps_counted_runs_apart():
    """A bounded string's positions count characters: none of them may merge."""
    g = schema_to_ir({"type": "string", "maxLength": 40})
    merged, plain = _pair(g)
    m = merged.matcher()
    assert m.accept_bytes(b'"' + b"a" * 40) and not m.accept_bytes(b"a")
    assert m.accept_bytes(b'"') and m.is_accepting()
    assert_same_language(g, walks=4, steps=60)
