"""llama.cpp's own grammars (grammars/*.gbnf, fetched by tests/material.py) compile and decide
hand-written documents the way the grammar text says."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine.gbnf import parse_gbnf

from material import gbnf_grammars
from oracles import reference_matcher
from walks import walk_allowed

U = lambda s: s.encode("utf-8")  # noqa: E731

# name -> (accepted documents, rejected documents)
SAMPLES = {
    "arithmetic": (
        [b"1+2=3\n", b"x = 42\n", b"(a +b) *c = d\n1=1\n", b"foo_1 /(2 -bar)= 0 \n",
         b"12*(3+4)=84\n", b"( ( x ) )=\ty\n"],
        [b"", b"1+2=3", b"=3\n", b"1+=3\n", b"1+ 2=3\n", b"(a + b)=c\n", b"A=1\n",
         b"1=2=3\n", b"(1=1\n", b"_a=1\n"],
    ),
    "c": (
        [b"", b"int main(){return 0;}", b"int f(int x){x = x+1;return x;}",
         b"float g(){while(a<b){a = a+1;}}", b"char c(){// hi\n}",
         b"int h(){/* x * y */}", b"int m(){if(x==1){y = 2;}else{y = -3;}}",
         b"int a(){f (x, 1);}int b(){}",
         b"int l(){for(int i = 0; i<10; i = i+1){s = s*( i+2 );}}"],
        [b"int main(){return 0;}x", b"int main(){return0;}", b"main(){}", b"int main(){",
         b"int main() {}", b"int f(){x = 1}", b"int f(){/* open}",
         b"int f(){s = s*(i+2);}"],
    ),
    "chess": (
        [b"1. e4 e5\n2. Nf3 Nc6\n", b"1. d4 d5\n2. c4 dxc4\n3. e3 b5\n",
         b"1. e4 e5\n2. O-O O-O-O\n", b"1. e4 e5\n10. Qxf7# Kxf7\n",
         b"1. e4 e5\n2. e8=Q+ a1=N\n", b"1. Nbd2 R1a3\n2. Bxe5 Kh8\n"],
        [b"1. e4 e5\n", b"1. e9 e5\n2. a3 a6\n", b"2. e4 e5\n3. a3 a6\n",
         b"1. e4 e5\n0. a3 a6\n", b"1. Ze4 e5\n2. a3 a6\n", b"1. e4 e5\n100. a3 a6\n",
         b"1. e4  e5\n2. a3 a6\n"],
    ),
    "english": (
        [b"Hello, world!", b"a", b"one\ttwo\nthree", b"[brackets] {braces} \\back",
         b"x-y_z~`|\"quoted\"", b"50% off: $3.99 (today)"],
        [b"", b"double  space", b"trailing ", b" leading", U("caf\u00e9"), b"tab\t\tx"],
    ),
    "japanese": (
        [U("こんにちは"), U("日本語のテキスト。"), U("カタカナ ひらがな\n漢字"),
         U("東京、大阪"), U("ラーメン\t一杯")],
        [b"", b"hello", U("日本 "), U("日本  語"), U("😀"), U("ｱ"), b"\xe3\x81",
         U("日本語x")],
    ),
    "json": (
        [b"{}", b'{"a": 1}', b'{"key": [1, -2.5, 3e5, "x\\n\\u00e9", true, false, null], '
         b'"nested": {"k": {}}}', U('{"名前": "値"}'), b'{\n  "a": []\n}',
         b'{"n": 1234567890123456, "f": 0.000, "e": -1E-9}', b'{"a": 1} ', b'{"a" : 1}'],
        [b"[]", b'{"a": 01}', b'{"a": 1e10}', b'{"a"  : 1}', b"{'a': 1}", b'{"a": 1,}',
         b'{"a": "\x01"}', b'{"a": 12345678901234567}', b'{"a": 1}  ', b'{"a": tru}',
         b'{"a": "\\x"}', b'{"a": 1.}', b'{"a": "\xff"}'],
    ),
    "json_arr": (
        [b"[\n]", b"[\n1,\n2]", b'[\n{"a": [1, 2]},\n"s"]', b"[\n1e10]",
         b'[\n true,\n\n\t null]', U('[\n"ü"]')],
        [b"[1]", b"[\n  true]", b"[\n1e0]", b"[\n1]\n", b"[\n1,2]", b"[\n1]]", b"{}"],
    ),
    "list": (
        [b"- a\n", U("- milk\n- eggs \u2014 a dozen\n"), b"- \t tabs and spaces \n"],
        [b"", b"- \n", b"- a", b"* a\n", U("- a\u2028b\n"), b"- a\x0bb\n", U("- a\x85\n"),
         b"- a\r\n"],
    ),
}

_COMPILED = {}


def grammar(name):
    if name not in _COMPILED:
        _COMPILED[name] = cengine.compile_gbnf(gbnf_grammars()[name])
    return _COMPILED[name]


def accepts(g, data: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(data) and m.is_accepting()


def test_every_shipped_grammar_has_samples():
    # a grammar added to llama.cpp's directory must get samples here too
    assert sorted(gbnf_grammars()) == sorted(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_compiles_one_rule_per_gbnf_rule(name):
    text = gbnf_grammars()[name]
    g = parse_gbnf(text)
    defined = [line.split("::=")[0].strip() for line in text.splitlines()
               if "::=" in line and not line.lstrip().startswith("#")]
    assert list(g.rules) == defined
    assert grammar(name).automaton.n_positions > 0


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_accepts_samples(name):
    g = grammar(name)
    for doc in SAMPLES[name][0]:
        assert accepts(g, doc), doc


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_rejects_samples(name):
    g = grammar(name)
    for doc in SAMPLES[name][1]:
        assert not accepts(g, doc), doc


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_prefixes_complete(name):
    g = grammar(name)
    for doc in SAMPLES[name][0]:
        for cut in range(len(doc) + 1):
            m = g.matcher()
            assert m.accept_bytes(doc[:cut]), (doc, cut)
            tail = m.completion()
            done = g.matcher()
            assert done.accept_bytes(doc[:cut] + tail) and done.is_accepting(), (doc[:cut], tail)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(SAMPLES)),
       choices=st.lists(st.integers(0, 1 << 16), max_size=40))
def test_random_walk_completes(name, choices):
    g = grammar(name)
    walked = walk_allowed(reference_matcher(g), choices)
    m = g.matcher()
    assert m.accept_bytes(bytes(walked))
    doc = bytes(walked) + m.completion()
    done = g.matcher()
    assert done.accept_bytes(doc) and done.is_accepting(), doc
    doc.decode("utf-8")
