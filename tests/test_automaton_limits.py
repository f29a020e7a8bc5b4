"""The automaton builder: compile-work budget, DFA growth limit, inlining keeps the language,
refusals."""
import re

import pytest

import cengine
from cengine import automaton, ir
from cengine.grammar import Grammar
from oracles import reference_matcher


def test_automaton_work_budget_refuses_blowup(monkeypatch):
    monkeypatch.setattr(automaton, "MAX_COMPILE_WORK", 200_000)
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError, match="MAX_COMPILE_WORK"):
        cengine.compile_regex("(a|b)*a(a|b){16}")      # 2^16 DFA states
    cengine.CACHE.clear()
    assert cengine.compile_regex("(a|b)*a(a|b){3}").matcher().accept_bytes(b"abaab")


# the same determinisation blowup written in each front end: (a|b)*a(a|b){20} needs 2**21 DFA
# states from about a hundred NFA states
BLOWUPS = [
    ("regex", lambda budget: cengine.compile_regex("(a|b)*a(a|b){20}", budget=budget)),
    ("gbnf", lambda budget: cengine.compile_gbnf('root ::= ("a" | "b")* "a" ("a" | "b"){20}',
                                                 budget=budget)),
    ("schema pattern", lambda budget: cengine.compile_json_schema(
        {"type": "string", "pattern": "(a|b)*a(a|b){20}"}, budget=budget)),
    ("schema anchored pattern", lambda budget: cengine.compile_json_schema(
        {"type": "object", "properties": {"k": {"type": "string",
                                                "pattern": "^(a|b)*a(a|b){20}$"}}},
        budget=budget)),
    ("composed", lambda budget: cengine.compile_structural(
        cengine.Concat("x=", cengine.Regex("(a|b)*a(a|b){20}")), budget=budget)),
]


@pytest.mark.parametrize("name, compile_", BLOWUPS, ids=[b[0] for b in BLOWUPS])
def test_automaton_dfa_growth_refuses_blowup_before_the_work_cap(name, compile_):
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError) as e:
        compile_(None)
    assert e.value.limit == "max_dfa_growth" and e.value.rule is not None
    assert "max_dfa_growth=8" in str(e.value)
    # with the growth check off it runs on into the work cap (a smaller one, to be quick)
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError) as e:
        compile_(cengine.CompileBudget(max_work=2_000_000, max_dfa_growth=0))
    assert e.value.limit == "max_compile_work" and "max_work=2,000,000" in str(e.value)


# a limit met while building a schema's rule names the keyword and pointer of the schema the
# rule was compiled from (the builder sees rules, not keywords)
BOMB = "^(a|b)*a(a|b){20}$"
PATTERN_LIMITS = [
    ({"type": "string", "pattern": BOMB}, "/pattern"),
    ({"type": "object", "properties": {"k": {"type": "string", "pattern": BOMB}}},
     "/properties/k/pattern"),
    ({"type": "array", "items": {"type": "string", "pattern": BOMB}, "maxItems": 3},
     "/items/pattern"),
    ({"$defs": {"d": {"type": "object", "properties": {"k": {"pattern": BOMB}}}},
      "type": "array", "items": {"$ref": "#/$defs/d"}}, "/$defs/d/properties/k/pattern"),
]


@pytest.mark.parametrize("schema, pointer", PATTERN_LIMITS)
@pytest.mark.parametrize("budget", [None, cengine.CompileBudget(max_work=2_000_000,
                                                                max_dfa_growth=0)])
def test_automaton_schema_pattern_limits_name_the_pattern(schema, pointer, budget):
    # a pattern's string is a rule of its own (shared by every property with that pattern):
    # its blowup names the pattern where it was first met
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema(schema, budget=budget)
    assert e.value.limit in ("max_dfa_growth", "max_compile_work")
    assert (e.value.keyword, e.value.pointer) == ("pattern", pointer)
    assert e.value.rule is not None


_PROPS = {f"p{i}": {"type": "boolean"} for i in range(12)}
RULE_LIMITS = [
    ({"type": "object", "properties": _PROPS}, "properties", "/properties"),
    ({"type": "object", "properties": {"a": {"type": "object", "properties": _PROPS}}},
     "properties", "/properties/a/properties"),
    ({"type": "array", "items": {"enum": [f"v{i}" for i in range(40)]}}, "items", "/items"),
    ({"type": "array", "items": {"type": "boolean"}, "maxItems": 40}, "maxItems", "/maxItems"),
    ({"$defs": {"d": {"type": "object", "properties": _PROPS}}, "type": "array",
      "items": {"$ref": "#/$defs/d"}}, "properties", "/$defs/d/properties"),
]


@pytest.mark.parametrize("schema, keyword, pointer", RULE_LIMITS)
def test_automaton_schema_rule_limits_name_keyword_and_pointer(monkeypatch, schema, keyword,
                                                               pointer):
    # a rule's NFA over a (lowered) state limit: the object's or array's rule is the only
    # large one here
    monkeypatch.setattr(automaton, "MAX_NFA_STATES", 150)
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema(schema, property_order="declared")
    assert (e.value.keyword, e.value.pointer) == (keyword, pointer)
    assert e.value.rule is not None
    cengine.CACHE.clear()


def test_automaton_dfa_growth_counts_reached_nfa_states():
    # padding the bomb with a long unrelated alternative does not raise the bound: the
    # construction has reached only a few of the padding's 4,000 states when the bomb has
    # doubled past the bound
    cengine.CACHE.clear()
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_regex("((a|b)*a(a|b){20})|" + "x" * 4000)
    assert e.value.limit == "max_dfa_growth"
    reached = int(re.search(r"for the ([\d,]+) NFA states it reached", str(e.value))
                  .group(1).replace(",", ""))
    assert reached < 200, str(e.value)


@pytest.mark.parametrize("growth, ok", [(1, False), (8, False), (64, True), (0, True)])
def test_automaton_dfa_growth_is_the_callers(growth, ok):
    # 2**13 + 1 DFA states from at most 71 NFA states: over 8 x 71 + 4,096, under 64 x 71 + 4,096
    cengine.CACHE.clear()
    budget = cengine.CompileBudget(max_dfa_growth=growth)
    if ok:
        g = cengine.compile_regex("(a|b)*a(a|b){12}", budget=budget)
        assert g.matcher().accept_bytes(b"ba" + b"ab" * 6)
    else:
        with pytest.raises(cengine.LimitError, match="max_dfa_growth"):
            cengine.compile_regex("(a|b)*a(a|b){12}", budget=budget)


def test_automaton_budget_scope_and_cache():
    cengine.CACHE.clear()
    tight = cengine.CompileBudget(max_work=50)
    with pytest.raises(cengine.LimitError, match="max_work=50"):
        cengine.compile_gbnf('root ::= [a-z]+ "@" [a-z]+', budget=tight)
    # a scope applies to compiles that take no budget of their own
    with cengine.budget_scope(tight):
        with pytest.raises(cengine.LimitError, match="max_work=50"):
            cengine.compile_gbnf('root ::= [a-z]+ "@" [a-z]+')
    # the budget bounds building, not the cache: compiled once, it is returned to any budget
    g = cengine.compile_gbnf('root ::= [a-z]+ "@" [a-z]+')
    assert cengine.compile_gbnf('root ::= [a-z]+ "@" [a-z]+', budget=tight) is g


@pytest.mark.parametrize("kwargs", [{"max_work": 0}, {"max_work": 1.5}, {"max_dfa_growth": -1},
                                    {"max_dfa_growth": True}])
def test_automaton_compile_budget_refuses_bad_values(kwargs):
    with pytest.raises(ValueError, match="CompileBudget"):
        cengine.CompileBudget(**kwargs)


def _char_loop_grammar(inline: bool) -> ir.GrammarIR:
    g = ir.GrammarIR()
    # `char` is 1-4 bytes: inlined into `word`; a 17-byte literal rule is not
    g.add("char", ir.alt(ir.charset([(0x61, 0x7A), (0xE9, 0xE9)]), ir.lit("\\n")))
    g.add("long", ir.lit("x" * 17))
    body = ir.repeat(ir.Ref("char"), 1, None) if inline else ir.repeat(
        ir.charset([(0x61, 0x7A), (0xE9, 0xE9)]), 1, None)
    g.add("word", ir.seq(ir.lit('"'), ir.alt(body, ir.Ref("long")), ir.lit('"')))
    g.add("root", ir.seq(ir.Ref("word"), ir.repeat(ir.seq(ir.lit(","), ir.Ref("word")), 0, None)))
    return g


@pytest.mark.parametrize("doc,ok", [
    (b'"abc"', True), (b'"\xc3\xa9t\xc3\xa9"', True), (b'"a\\nb"', True), (b'""', False),
    (b'"' + b"x" * 17 + b'"', True), (b'"a","b"', True), (b'"A"', False), (b'"a",', False),
])
def test_automaton_inlining_keeps_the_language(doc, ok):
    g = Grammar.from_ir(_char_loop_grammar(True))
    assert "char" not in g.automaton.rule_names          # inlined
    assert "long" in g.automaton.rule_names              # too long to inline
    m = g.matcher()
    assert (m.accept_bytes(doc) and m.is_accepting()) == ok
    r = reference_matcher(g)
    assert (r.accept_bytes(doc) and r.is_accepting()) == ok


def test_automaton_whitespace_inlined_still_spends_budget():
    g = ir.GrammarIR()
    ws = g.add("ws", ir.repeat(ir.ByteSet(((0x20, 0x20),)), 0, None), whitespace=True)
    g.add("root", ir.seq(ir.lit("["), ws, ir.lit("1"), ws, ir.lit("]")))
    g.whitespace_budget = 3
    gr = Grammar.from_ir(g)
    assert "ws" not in gr.automaton.rule_names
    assert gr.matcher().accept_bytes(b"[ 1  ]")
    assert not gr.matcher().accept_bytes(b"[  1  ]")


def test_automaton_undefined_rule_and_missing_root():
    g = ir.GrammarIR()
    g.add("root", ir.Ref("nope"))
    with pytest.raises(cengine.CompileError, match="nope"):
        automaton.build(g)
    g2 = ir.GrammarIR()
    g2.add("x", ir.lit("a"))
    with pytest.raises(cengine.CompileError, match="root"):
        automaton.build(g2)
