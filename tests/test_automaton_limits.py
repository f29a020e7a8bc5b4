"""The automaton builder: compile-work budget, inlining keeps the language, refusals."""
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
