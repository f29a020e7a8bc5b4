"""Regex front end (cengine/regex.py): ECMA-262 patterns compiled onto the automaton.

The oracle is Python's `re` with re.ASCII (then \\d \\w agree with ECMA-262); where the two
dialects differ (`.` and `\\s` on non-ASCII text, Annex B forms) a case carries an explicit
Python translation, and ECMA-only behaviour has its own table of expected answers.
"""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import ir
from cengine.errors import CompileError, LimitError
from cengine.grammar import Grammar
from cengine.regex import MAX_GROUP_DEPTH, MAX_REPEAT, regex_to_expr, regex_to_ir

# Python spellings of the ECMA-262 classes that differ from re.ASCII's
PY_DOT = "[^\n\r\u2028\u2029]"
_SP = "\t-\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
PY_SPACE = f"[{_SP}]"
PY_NOT_SPACE = f"[^{_SP}]"


def accepts(g: Grammar, text) -> bool:
    m = g.matcher()
    data = text.encode("utf-8") if isinstance(text, str) else text
    return m.accept_bytes(data) and m.is_accepting()


def allowed(m) -> list:
    if hasattr(m, "allowed_bytes"):
        return list(m.allowed_bytes())
    out = []
    for b in range(256):     # contract API only: probe each byte on a copy
        if m.copy().accept_bytes(bytes([b])):
            out.append(b)
    return out


# (ECMA pattern, Python equivalent or None when identical, sample strings)
CASES = [
    ("abc", None, ["abc", "ab", "abcd", "", "abd"]),
    ("a|bc|", None, ["a", "bc", "", "b", "abc"]),
    ("colou?r", None, ["color", "colour", "colouur", "colr"]),
    ("a*b+c?", None, ["b", "aab", "abbbc", "ac", "", "abcc"]),
    (r"\d{3}-\d{2,4}", None, ["123-45", "123-4567", "123-45678", "12-345", "abc-12"]),
    ("(ab){2,}", None, ["abab", "ab", "ababab", "ababa", ""]),
    ("(?:x|yz){0,3}w", None, ["w", "xyzxw", "xxxxw", "yzyzyzw", "yw"]),
    (r"(?<year>\d{4})-(?<m>\d\d)", r"(?P<year>\d{4})-(?P<m>\d\d)", ["2024-01", "202-01", "2024-1"]),
    ("[a-f0-9]+", None, ["deadbeef", "cafe01", "xyz", "", "A0"]),
    ("[^a-z]*", None, ["ABC", "", "aB", "12 !", "é"]),
    (r"[\w.+-]+@[\w-]+\.[a-z]{2,}", None, ["a.b+c@x-y.org", "a@b.c", "@b.co", "a@b.COM"]),
    (r"[\w-.]+", r"[\w.-]+", ["a-b.c", "-", "a b", "."]),          # Annex B: literal '-'
    (r"\D\W\S", r"[^0-9][^A-Za-z0-9_]" + PY_NOT_SPACE, ["a a", "1 a", "a-b", "a a "]),
    (r"\s+", PY_SPACE + "+", [" ", "\t\n\r\v\f", "\xa0\u3000", "", "a", "\x1c"]),
    (".+", PY_DOT + "+", ["abc", "a\nb", "\r", "é😀", ""]),
    (r"^\$\d+(\.\d\d)?$", None, ["$12", "$12.50", "$12.5", "12"]),
    ("^a$|^b+$", None, ["a", "bbb", "ab", ""]),
    ("a.*?b", "a" + PY_DOT + "*?b", ["ab", "axxb", "a\nb", "ba"]),
    (r"\x41\u0042\u{43}\cJ\0\t", "ABC\n\x00\t", ["ABC\n\x00\t", "ABC\n0\t"]),
    (r"[\]\[\\-]+", None, ["[]\\-", "]", "a", ""]),
    (r"[\--/]", None, ["-", ".", "/", ","]),
    ("a{2}b{1,2}c{0,}", None, ["aab", "aabbccc", "ab", "aabbb"]),
    ("a{b}]", None, ["a{b}]", "ab"]),                               # lone braces are literal
    ("x{2", None, ["x{2", "xx"]),
    ("é+|日本", None, ["é", "ééé", "日本", "日", "e"]),
    ("[α-ω]+ς?", None, ["αβγ", "ως", "ς", "A"]),
    (r"[\u{1F600}-\u{1F64F}]", "[\U0001F600-\U0001F64F]", ["😀", "🙏", "🚀", ":)"]),
    (r"\uD83D\uDE00", "\U0001F600", ["😀", "\U0001F601"]),
    (r"[^\s\d]", "[^0-9" + _SP + "]", ["a", " ", "5", "\u3000", "é"]),
    (r"(a|b)*abb", None, ["abb", "babb", "aabb", "ab", "abba"]),
    (r"\/\.\*\+\?\(\)\{\}\|\^\$", "/\\.\\*\\+\\?\\(\\)\\{\\}\\|\\^\\$", ["/.*+?(){}|^$", "/"]),
    ("(?:)|a(?:)", None, ["", "a", "aa"]),
]

CASE_IDS = [c[0] for c in CASES]


def _py(case):
    # re.ASCII makes \d \w mean what ECMA says; Python spellings that hold non-ASCII text use
    # no shorthand classes and are compiled without it (hypothesis' from_regex refuses the mix)
    py = case[1] if case[1] is not None else case[0]
    return re.compile(py, re.ASCII if py.isascii() else 0)


@pytest.mark.parametrize("pattern,py,samples", CASES, ids=CASE_IDS)
def test_samples_agree_with_python_re(pattern, py, samples):
    g = cengine.compile_regex(pattern)
    oracle = _py((pattern, py))
    for s in samples:
        assert accepts(g, s) == bool(oracle.fullmatch(s)), (pattern, s)


# (pattern, alphabet, max length): every string over the alphabet up to that length
EXHAUSTIVE = [
    ("(a|b)*abb", "ab", 7),
    ("a{2,3}(ba)?", "ab", 6),
    ("[^b]c*|b{0,2}", "abc", 5),
    ("^(?:ab|a)(?:c|bc)$|c$", "abc", 5),
    (r"\d+\.?\d*", "1.a", 5),
    ("x?y?z?", "xyz", 4),
]


@pytest.mark.parametrize("pattern,alphabet,n", EXHAUSTIVE, ids=[e[0] for e in EXHAUSTIVE])
def test_exhaustive_small_alphabets(pattern, alphabet, n):
    g = cengine.compile_regex(pattern)
    oracle = re.compile(pattern, re.ASCII)
    for k in range(n + 1):
        for chars in itertools.product(alphabet, repeat=k):
            s = "".join(chars)
            assert accepts(g, s) == bool(oracle.fullmatch(s)), (pattern, s)


# ECMA-262 behaviour Python's re does not share, with the expected answer
ECMA_ONLY = [
    (".", "\r", False),
    (".", "\u2028", False),
    (".", "\u2029", False),
    (".", "\U0001F600", True),            # code points, not UTF-16 units
    (".", "é", True),
    (r"\s", "\xa0", True),
    (r"\s", "\u3000", True),
    (r"\s", "\ufeff", True),
    (r"\s", "\u2028", True),
    (r"\s", "\x1c", False),               # Python's Unicode \s says yes
    (r"\s", "\x85", False),
    (r"\S", "\xa0", False),
    (r"\d", "\u0663", False),             # ARABIC-INDIC DIGIT THREE
    (r"\w", "é", False),
    (r"\W", "é", True),
    ("[^]", "\n", True),
    ("[^]", "😀", True),
    ("a|[]", "a", True),
    (r"[\b]", "\b", True),
    (r"\cj", "\n", True),
    (r"\u{10FFFF}", "\U0010FFFF", True),
    (r"\u{0}", "\x00", True),
    ("a{,", "a{,", True),
    (r"\-\/", "-/", True),
    ("(?<$n_1>a)", "a", True),
    ("^^a$$", "a", True),
    ("a$|b", "b", True),
    ("a+?b*?c??d{1,2}?", "aaacd", True),
    ("a+?b*?c??d{1,2}?", "ad", True),
    ("a+?b*?c??d{1,2}?", "add", True),
    ("a+?b*?c??d{1,2}?", "addd", False),
]


@pytest.mark.parametrize("pattern,text,expected", ECMA_ONLY)
def test_ecma_specific_semantics(pattern, text, expected):
    assert accepts(cengine.compile_regex(pattern), text) is expected


# (pattern, fragment of the message, 1-based column)
REFUSALS = [
    ("a(?=b)", "lookahead '(?='", 2),
    ("(?!x)y", "negative lookahead '(?!'", 1),
    ("(?<=a)b", "lookbehind '(?<='", 1),
    ("x(?<!a)b", "negative lookbehind '(?<!'", 2),
    (r"(a)\1", "backreference '\\1'", 4),
    (r"(?<n>a)\k<n>", "named backreference", 8),
    (r"\bword", "word boundary '\\b'", 1),
    (r"a\B", "non-word boundary '\\B'", 2),
    (r"\p{L}", "unicode property escape", 1),
    (r"x\P{Lu}", "unicode property escape", 2),
    ("(?i)abc", "inline flags", 1),
    ("a(?i:b)", "inline flags", 2),
    ("(?P<x>a)", "Python-style group", 1),
    ("(?#note)", "invalid group", 1),
    ("(?<1a>x)", "invalid group name", 1),
    ("a^b", "anchor '^'", 2),
    ("(^a)", "anchor '^'", 2),
    ("a$b", "anchor '$'", 2),
    ("(a$)", "anchor '$'", 3),
    ("^*a", "anchor '^' cannot be repeated", 2),
    ("a$+", "anchor '$' cannot be repeated", 3),
    ("*a", "nothing to repeat", 1),
    ("a|?", "nothing to repeat", 3),
    ("a**", "nothing to repeat", 3),
    ("a{2}{3}", "nothing to repeat", 5),
    ("{3}", "nothing to repeat", 1),
    ("a{3,1}", "out of order", 2),
    ("[z-a]", "range out of order", 2),
    ("(ab", "missing ')'", 1),
    ("ab)", "unmatched ')'", 3),
    ("x[ab", "missing ']'", 2),
    ("ab\\", "lone backslash", 3),
    (r"\x4g", "hex digits", 1),
    (r"a\u12", "hex digits", 2),
    (r"\u{110000}", "\\u{...}", 1),
    (r"\u{}", "\\u{...}", 1),
    (r"\c1", "control escape", 1),
    (r"\A", "not ECMA-262", 1),
    (r"ab\z", "not ECMA-262", 3),
    (r"\01", "octal", 1),
    (r"\ud800", "lone surrogate", 1),
    ("x\ud800", "lone surrogate", 2),
    ("x{,3}", "{,n}", 2),
]


@pytest.mark.parametrize("pattern,fragment,column", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_construct_and_column(pattern, fragment, column):
    with pytest.raises(CompileError) as info:
        regex_to_ir(pattern)
    e = info.value
    assert isinstance(e, ValueError)
    assert fragment in str(e)
    assert f"column {column}" in str(e)
    assert e.column == column
    assert e.keyword is None
    with pytest.raises(CompileError):
        cengine.compile_regex(pattern)


@pytest.mark.parametrize("pattern", [
    f"a{{{MAX_REPEAT + 1}}}", f"a{{1,{MAX_REPEAT + 1}}}", f"a{{{MAX_REPEAT + 1},}}",
    "a{99999999999999999999}", "(?:a{1000}){1000}", "(?:(?:.{64}){64}){64}",
    "(" * (MAX_GROUP_DEPTH + 1) + "a" + ")" * (MAX_GROUP_DEPTH + 1),
    "(?:a*" * 5000 + ")*" * 5000,
])
def test_limits_raise_limit_error(pattern):
    with pytest.raises(LimitError):
        regex_to_ir(pattern)


def test_repetition_at_the_cap_compiles():
    g = cengine.compile_regex(f"a{{{MAX_REPEAT}}}")
    assert accepts(g, "a" * MAX_REPEAT)
    assert not accepts(g, "a" * (MAX_REPEAT - 1))
    assert not accepts(g, "a" * (MAX_REPEAT + 1))


def test_deepest_nesting_allowed_compiles():
    pattern = "(?:a|" * MAX_GROUP_DEPTH + "b" + ")*" * MAX_GROUP_DEPTH
    g = cengine.compile_regex(pattern)
    assert accepts(g, "aab") and accepts(g, "") and not accepts(g, "c")


def test_empty_language_is_refused():
    with pytest.raises(CompileError, match="no document"):
        cengine.compile_regex("[]")


def test_not_a_string():
    with pytest.raises(CompileError, match="string"):
        regex_to_ir(b"abc")


def test_ir_shape():
    g = regex_to_ir("ab|c")
    assert g.root == "root" and list(g.rules) == ["root"]
    assert regex_to_expr("abc") == ir.Bytes(b"abc")
    assert regex_to_expr("[a-c]") == ir.CharSet(((0x61, 0x63),))


def test_completion_is_a_shortest_match():
    g = cengine.compile_regex(r"(?:abc|d)\d{2,}x?")
    m = g.matcher()
    assert m.completion() == b"d00"
    assert m.accept_bytes(b"ab") and m.completion() == b"c00"


# --- JSON Schema `pattern` semantics: anchored=False ----------------------------------------

def unanchored(pattern: str) -> Grammar:
    g = ir.GrammarIR()
    g.add("root", regex_to_expr(pattern, anchored=False))
    return Grammar.from_ir(g)


UNANCHORED = [
    ("abc", "xxabcyy", True),
    ("abc", "ab", False),
    ("^abc", "abcx", True),
    ("^abc", "xabc", False),
    ("abc$", "xabc", True),
    ("abc$", "abcx", False),
    ("^a$|b", "xbx", True),
    ("^a$|b", "ax", False),
    ("^a$|b", "a", True),
    ("", "anything\nat all", True),
    ("a.c", "za\ncz", False),
    ("a.c", "\n\nabc\n", True),
    (r"^\d+$", "123", True),
    (r"^\d+$", "12a3", False),
]


@pytest.mark.parametrize("pattern,text,expected", UNANCHORED)
def test_unanchored_search_semantics(pattern, text, expected):
    assert accepts(unanchored(pattern), text) is expected


# a search's edge repetitions are cut to their minimum (regex._trim_free_edges): the language
# stays re.search's, checked on every string over the alphabet up to a length
EDGE_REPEATS = [
    ("a{1,3}", "ab"),
    ("a{2,4}", "ab"),
    ("ab{1,3}", "ab"),
    ("b{2,}a", "ab"),
    ("a*b", "ab"),
    ("b?a{0,2}", "ab"),
    ("(ab|b){1,3}", "ab"),
    ("^a{1,3}", "ab"),
    ("a{2,3}$", "ab"),
    ("^a{1,2}$", "ab"),
    ("a{1,2}b{0,2}|^b{2,3}", "ab"),
    ("[ab]{0,5}", "ab"),
]


@pytest.mark.parametrize("pattern,alphabet", EDGE_REPEATS)
def test_unanchored_edge_repetitions_keep_search_language(pattern, alphabet):
    g = unanchored(pattern)
    for n in range(7):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            assert accepts(g, text) is (re.search(pattern, text) is not None), (pattern, text)


def test_unanchored_edge_repetition_costs_its_minimum():
    # a search for up to 4,000 letters is a search for one: no counting states
    wide = regex_to_expr("[a-z]{1,4000}", anchored=False)
    assert wide == regex_to_expr("[a-z]", anchored=False)
    assert regex_to_expr("x[a-z]{2,4000}", anchored=False) == regex_to_expr("x[a-z]{2}",
                                                                            anchored=False)
    # anchored, every count still matters
    assert regex_to_expr("^[a-z]{1,40}$", anchored=False) != regex_to_expr("^[a-z]$",
                                                                           anchored=False)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["ab", "^a", "b$", "^ab$|ba", "a+b", "(?:ab|c){2}"]),
       st.text(alphabet="abc", max_size=8))
def test_unanchored_matches_python_search(pattern, text):
    assert accepts(unanchored(pattern), text) == bool(re.search(pattern, text))


# --- hypothesis: both inclusions between the compiled language and the oracle -------------

def random_document(data, g: Grammar, max_len: int = 20) -> bytes:
    """Random walk over the matcher's allowed bytes, then the closer's completion."""
    m = g.matcher()
    out = bytearray()
    for _ in range(max_len):
        choices = allowed(m)
        if m.is_accepting():
            choices.append(None)
        if not choices:
            break
        b = data.draw(st.sampled_from(choices))
        if b is None:
            break
        assert m.accept_bytes(bytes([b]))
        out += bytes([b])
    tail = m.completion()
    assert m.accept_bytes(tail) and m.is_accepting()
    return bytes(out + tail)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@given(data=st.data())
def test_every_walked_document_matches_python(case, data):
    doc = random_document(data, cengine.compile_regex(case[0]))
    text = doc.decode("utf-8")          # the automaton only ever emits valid UTF-8
    assert _py(case).fullmatch(text), (case[0], text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@given(data=st.data())
def test_every_python_match_is_accepted(case, data):
    text = data.draw(st.from_regex(_py(case), fullmatch=True))
    assert accepts(cengine.compile_regex(case[0]), text), (case[0], text)


# --- token masks over a small vocabulary agree with byte-level acceptance ------------------

MASK_TOKENS = [bytes([b]) for b in range(32, 127)] + [
    b"", b"ab", b"abc", b"12", b"123-", b"-45", b"\n", b"\r", b"\xc3", b"\xa9", b"\xc3\xa9",
    "😀".encode(), "😀".encode()[:2], b"  ", b"x{2", b"$1", b".50"]


@pytest.mark.parametrize("pattern",
                         [r"\d{3}-\d{2,4}", "(ab|c)*x{2,3}", r"^\$\d+(\.\d\d)?$", ".{0,3}é"])
def test_fill_mask_matches_byte_level_acceptance(pattern):
    vocab = cengine.Vocabulary(MASK_TOKENS, eos_ids=[MASK_TOKENS.index(b"")])
    g = cengine.compile_regex(pattern)
    m = g.matcher(vocab)
    rnd = random.Random(pattern)
    for _ in range(6):
        mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
        m.fill_mask(mask)
        for i, tok in enumerate(MASK_TOKENS):
            bit = bool((int(mask[i // 32]) >> (i % 32)) & 1)
            if i in vocab.eos_ids:
                assert bit == m.is_accepting()
            else:
                assert bit == m.copy().accept_bytes(tok), (pattern, tok)
        legal = [i for i, tok in enumerate(MASK_TOKENS) if tok and m.copy().accept_bytes(tok)]
        if not legal:
            break
        assert m.accept_token(rnd.choice(legal))
