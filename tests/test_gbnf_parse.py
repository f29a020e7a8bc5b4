"""GBNF front end: every construct accepts and rejects what it should, every error is located."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import ir
from cengine.gbnf import MAX_REPEAT, parse_gbnf
from oracles import reference_matcher
from walks import walk_allowed


def matcher(g):
    # the fast Cython matcher is the one under test; the random walks use the reference
    return g.matcher()


def accepts(g, data: bytes) -> bool:
    m = matcher(g)
    return m.accept_bytes(data) and m.is_accepting()


def check_completions(g, doc: bytes) -> None:
    """Every prefix of an accepted document is accepted and completion() finishes it."""
    for cut in range(len(doc) + 1):
        m = matcher(g)
        assert m.accept_bytes(doc[:cut]), (doc, cut)
        tail = m.completion()
        if m.is_accepting():
            assert tail == b""
        done = matcher(g)
        assert done.accept_bytes(doc[:cut] + tail) and done.is_accepting(), (doc[:cut], tail)


U = lambda s: s.encode("utf-8")  # noqa: E731

# (grammar, accepted documents, rejected documents)
CONSTRUCTS = [
    pytest.param('root ::= "abc"', [b"abc"], [b"", b"ab", b"abcd", b"ABC"], id="literal"),
    pytest.param('root ::= ""', [b""], [b"a", b" "], id="empty-literal"),
    pytest.param('root ::= "a" "b"   "c"', [b"abc"], [b"ab", b"a b c"], id="sequence"),
    pytest.param('root ::= "a" | "bc" | "d"', [b"a", b"bc", b"d"], [b"", b"b", b"ab", b"ad"],
                 id="alternation"),
    pytest.param('root ::= | "a"', [b"", b"a"], [b"aa"], id="empty-alternative"),
    pytest.param('root ::= "x" ("a" | "b") "y"', [b"xay", b"xby"], [b"xy", b"xaby", b"xcy"],
                 id="group"),
    pytest.param('root ::= "a" () "b"', [b"ab"], [b"a", b"a b"], id="empty-group"),
    pytest.param('root ::= "a"*', [b"", b"a", b"aaaa"], [b"b", b"ab"], id="star"),
    pytest.param('root ::= "ab"+', [b"ab", b"abab"], [b"", b"a", b"aba", b"abb"], id="plus"),
    pytest.param('root ::= "a"? "b"', [b"b", b"ab"], [b"", b"a", b"aab"], id="optional"),
    pytest.param('root ::= "a"{3}', [b"aaa"], [b"aa", b"aaaa", b""], id="exactly"),
    pytest.param('root ::= "a"{2,}', [b"aa", b"aaaaaaa"], [b"", b"a"], id="at-least"),
    pytest.param('root ::= "a"{1,3}', [b"a", b"aa", b"aaa"], [b"", b"aaaa"], id="between"),
    pytest.param('root ::= "a"{,2}', [b"", b"a", b"aa"], [b"aaa"], id="at-most"),
    pytest.param('root ::= "a"{0,2} "b"', [b"b", b"ab", b"aab"], [b"aaab"], id="zero-to-n"),
    pytest.param('root ::= "x" "a"{0}', [b"x"], [b"xa"], id="zero-times"),
    pytest.param('root ::= "a"{ 1 , 2 } "b"', [b"ab", b"aab"], [b"b", b"aaab"], id="spaced-braces"),
    pytest.param('root ::= "a"{4096}', [b"a" * 4096], [b"a" * 4095, b"a" * 4097], id="max-repeat"),
    pytest.param('root ::= ("a"{64}){64}', [b"a" * 4096], [b"a" * 4095, b"a" * 4097],
                 id="nested-max-repeat"),
    pytest.param('root ::= ("a"{0,99})* "b"', [b"b", b"a" * 150 + b"b"], [b"a"],
                 id="unbounded-over-bounded"),
    pytest.param('root ::= "ab"{2}+', [b"abab", b"abababab"], [b"ab", b"ababab"], id="stacked"),
    pytest.param('root ::= "a"+?', [b"", b"a", b"aaa"], [b"b"], id="plus-then-optional"),
    pytest.param('root ::= ("ab" | "c"){2}', [b"abab", b"abc", b"cab", b"cc"],
                 [b"ab", b"c", b"ccc", b"abcab"], id="group-repeat"),
    pytest.param('root ::= [a-cx]', [b"a", b"b", b"c", b"x"], [b"", b"d", b"w", b"ab"],
                 id="class"),
    pytest.param('root ::= [^a-c]', [b"d", b"\n", b"\x00", U("é"), U("€"), U("😀")],
                 [b"", b"a", b"c", b"dd", b"\xff", b"\xed\xa0\x80"], id="negated-class"),
    pytest.param(r'root ::= [\]\[\-\\^]+', [b"]", b"[", b"-", b"\\", b"^", b"][-\\^"],
                 [b"a", b"]a"], id="class-escapes"),
    pytest.param('root ::= [-a] [a-]', [b"-a", b"a-", b"--", b"aa"], [b"b-", b"a"],
                 id="class-dash-ends"),
    pytest.param('root ::= [a-c0-2_]+', [b"a0_", b"cb21"], [b"d", b"3", b"-"],
                 id="class-ranges"),
    pytest.param('root ::= [α-ω]+', [U("αβγω")], [b"a", U("Α"), U("αa")], id="class-unicode"),
    pytest.param(r'root ::= [\x41-\x43\u00e9\U0001F600-\U0001F602]',
                 [b"A", b"C", U("é"), U("😀"), U("😂")], [b"D", U("😃"), b"\xe9"],
                 id="class-hex-escapes"),
    pytest.param('root ::= [^"\\\\]*', [b"", b"abc", U("日本")], [b'"', b"\\"],
                 id="negated-quote-backslash"),
    pytest.param('root ::= . .', [b"ab", U("é€"), U("😀x"), b"\x00\x7f"],
                 [b"a", b"abc", b"\xff\xfe", b"\xc3a", b"\xc0\x80x"], id="any-char"),
    pytest.param('root ::= "\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\"\\[\\]\\-"',
                 [U('Aé😀\t\n\r\\"[]-')], [b"A"], id="literal-escapes"),
    pytest.param('root ::= "\\xff"', [U("\u00ff")], [b"\xff"], id="hex-escape-is-code-point"),
    pytest.param('root ::= "日本" "語"?', [U("日本"), U("日本語")], [U("日"), b"\xe6"],
                 id="literal-utf8"),
    pytest.param('root ::= "a\nb"', [b"a\nb"], [b"ab"], id="raw-newline-in-literal"),
    pytest.param('root ::= a b\na ::= "x"\nb ::= a | "y"', [b"xx", b"xy"], [b"x", b"xz"],
                 id="rule-refs"),
    pytest.param('root ::= "(" root ")" | ""', [b"", b"()", b"((()))"], [b"(()", b")(", b"(("],
                 id="recursion"),
    pytest.param('root ::= item ("," item)*\nitem ::= [0-9]+', [b"1", b"1,22,333"],
                 [b"", b"1,", b",1"], id="list"),
    pytest.param('# leading comment\nroot ::= "a" # trailing comment\n# last\n',
                 [b"a"], [b"", b"#"], id="comments"),
    pytest.param('root ::= (\n  "a" # first\n  | "b"\n\n)', [b"a", b"b"], [b""],
                 id="newlines-in-group"),
    pytest.param('root ::= "a" |\n  "b"', [b"a", b"b"], [b""], id="newline-after-bar"),
    pytest.param('root ::=\n  "a" "b"', [b"ab"], [b"a"], id="newline-after-define"),
    pytest.param('root ::= a\r\na ::= "x"\r\n', [b"x"], [b""], id="crlf"),
    pytest.param('root ::= a\ra ::= "x"', [b"x"], [b""], id="lone-cr"),
    pytest.param('root ::= my-rule-2 2nd\nmy-rule-2 ::= "z"\n2nd ::= "Z"', [b"zZ"], [b"z"],
                 id="names"),
    pytest.param('root::="a"("b"|"c")', [b"ab", b"ac"], [b"a"], id="no-spaces"),
    pytest.param('root\t::=\t"a"\t"b"', [b"ab"], [b"a\tb"], id="tabs"),
    pytest.param('\n\n  root ::= "a"\n\n\n   b ::= "c"\n', [b"a"], [b"c"], id="blank-lines"),
]


@pytest.mark.parametrize("text, good, bad", CONSTRUCTS)
def test_construct(text, good, bad):
    g = cengine.compile_gbnf(text)
    for doc in good:
        assert accepts(g, doc), doc
    for doc in bad:
        assert not accepts(g, doc), doc


@pytest.mark.parametrize("text, good, bad", [p for p in CONSTRUCTS if "max-repeat" not in p.id])
def test_construct_completion(text, good, bad):
    g = cengine.compile_gbnf(text)
    for doc in good:
        check_completions(g, doc)


def test_accept_is_all_or_nothing():
    g = cengine.compile_gbnf('root ::= "ab" "c"?')
    m = matcher(g)
    assert m.accept_bytes(b"a")
    assert not m.accept_bytes(b"bd")        # "b" alone would be fine, "d" is not
    assert not m.is_accepting()
    assert m.completion() == b"b"
    assert m.accept_bytes(b"b") and m.is_accepting()


def test_custom_root():
    g = cengine.compile_gbnf('start ::= "s" other\nother ::= "o"', root="start")
    assert accepts(g, b"so")
    assert not accepts(g, b"o")


def test_one_ir_rule_per_gbnf_rule():
    text = ('root ::= ( value ("," value)* )?\n'
            'value ::= [0-9]+ | "(" root ")"\n'
            '  spare-rule ::= "x"{2,5} | .\n')
    g = parse_gbnf(text)
    assert list(g.rules) == ["root", "value", "spare-rule"]
    assert g.root == "root"
    assert [r.origin for r in g.rules.values()] == [(1, 1), (2, 1), (3, 3)]
    assert all(not r.container and not r.whitespace for r in g.rules.values())
    # a reference stays a reference: nothing is inlined
    assert ir.Ref("value") in g.rules["root"].expr.item.items


def test_literals_and_classes_are_code_points():
    g = parse_gbnf('root ::= "é\\u00e9" [a-c\\x80] .')
    e = g.rules["root"].expr
    assert e.items[0] == ir.lit("éé")
    assert e.items[1] == ir.CharSet(((0x61, 0x63), (0x80, 0x80)))
    assert e.items[2] == ir.CharSet(((0, ir.MAX_UNICODE),))


# (grammar, text in the message, rule, line, column); columns count code points from 1
ERRORS = [
    pytest.param('root ::= "abc', "unterminated string", "root", 1, 10, id="unterminated-string"),
    pytest.param('root ::= "ab\\', "unterminated string", "root", 1, 10,
                 id="unterminated-string-escape"),
    pytest.param('root ::= "a"\nb ::= [abc', "unterminated character class", "b", 2, 7,
                 id="unterminated-class"),
    pytest.param('root ::= [a-', "unterminated character class", "root", 1, 10,
                 id="unterminated-range"),
    pytest.param('root ::= ("a" | ("b")', "unterminated group", "root", 1, 10,
                 id="unterminated-group"),
    pytest.param('root ::= ("a"\n', "unterminated group", "root", 1, 10,
                 id="unterminated-group-newline"),
    pytest.param('root ::= ("a" ]', "expected ')'", "root", 1, 15, id="group-bad-close"),
    pytest.param('root ::= "a")', "unmatched ')'", "root", 1, 13, id="unmatched-paren"),
    pytest.param('root = "a"', "expected '::='", "root", 1, 6, id="missing-define"),
    pytest.param('root "a"', "expected '::='", "root", 1, 6, id="missing-define-2"),
    pytest.param('root\n::= "a"', "expected '::='", "root", 1, 5, id="define-on-next-line"),
    pytest.param('::= "a"', "expected a rule name", None, 1, 1, id="missing-name"),
    pytest.param('root ::= "a"\n  | "b"', "expected a rule name", None, 2, 3,
                 id="bar-on-next-line"),
    pytest.param('root ::= "a" ;', "unexpected ';'", "root", 1, 14, id="stray-char"),
    pytest.param("root ::= 'a'", "unexpected \"'\"", "root", 1, 10, id="single-quotes"),
    pytest.param('root ::= "a"\nx_y ::= "b"', "expected '::='", "x", 2, 2, id="underscore-name"),
    pytest.param('root ::= "\\q"', "bad escape", "root", 1, 11, id="unknown-escape"),
    pytest.param('root ::= "\\/"', "bad escape", "root", 1, 11, id="slash-escape"),
    pytest.param('root ::= "\\x4"', "exactly 2 hex digits", "root", 1, 11, id="short-hex"),
    pytest.param('root ::= "ab\\u12G4"', "exactly 4 hex digits", "root", 1, 13, id="bad-hex"),
    pytest.param('root ::= [\\U00110000]', "beyond U+10FFFF", "root", 1, 11, id="too-big"),
    pytest.param('root ::= "\\uD800"', "surrogate", "root", 1, 11, id="surrogate"),
    pytest.param('root ::= [a-\\uDFFF]', "surrogate", "root", 1, 13, id="surrogate-in-range"),
    pytest.param('root ::= []', "empty character class", "root", 1, 10, id="empty-class"),
    pytest.param('root ::= "a" [^]', "empty character class", "root", 1, 14,
                 id="empty-negated-class"),
    pytest.param('root ::= [a-cz-x]', "reversed range", "root", 1, 14, id="reversed-range"),
    pytest.param('root ::= *"a"', "nothing before it", "root", 1, 10, id="star-first"),
    pytest.param('root ::= "a" | +"b"', "nothing before it", "root", 1, 16, id="plus-after-bar"),
    pytest.param('root ::= ("a" | ?)', "nothing before it", "root", 1, 17, id="optional-in-group"),
    pytest.param('root ::= {2}', "nothing before it", "root", 1, 10, id="brace-first"),
    pytest.param('root ::= "a"{', "unterminated '{'", "root", 1, 13, id="unterminated-brace"),
    pytest.param('root ::= "a"{x}', "expected a number", "root", 1, 14, id="brace-not-number"),
    pytest.param('root ::= "a"{2,x}', "expected '}'", "root", 1, 16, id="brace-bad-max"),
    pytest.param('root ::= "a"{2 3}', "expected ',' or '}'", "root", 1, 16, id="brace-no-comma"),
    pytest.param('root ::= "a"{,}', "needs an upper bound", "root", 1, 15, id="brace-empty"),
    pytest.param('root ::= "a"{-1}', "expected a number", "root", 1, 14, id="brace-negative"),
    pytest.param('root ::= "a"{3,2}', "minimum 3 is above maximum 2", "root", 1, 13,
                 id="min-above-max"),
    pytest.param('root ::= "a"{4097}', f"above the limit of {MAX_REPEAT}", "root", 1, 14,
                 id="min-too-big"),
    pytest.param('root ::= "a"{0,5000}', f"above the limit of {MAX_REPEAT}", "root", 1, 16,
                 id="max-too-big"),
    pytest.param('root ::= "a"{99999999999999999999,}', "above the limit", "root", 1, 14,
                 id="huge-bound"),
    pytest.param('root ::= ("a"{2}){2049}', "make 4098 copies", "root", 1, 18,
                 id="nested-product-too-big"),
    pytest.param('root ::= "x" ((("a"{0,99}){0,99}))', "make 9801 copies", "root", 1, 27,
                 id="nested-optional-product"),
    pytest.param('root ::= <think> "a"', "token terminals", "root", 1, 10, id="token-name"),
    pytest.param('root ::= <[1000]>', "token terminals", "root", 1, 10, id="token-id"),
    pytest.param('root ::= "a"\nnot-end ::= !<[5]>*', "token terminals", "not-end", 2, 13,
                 id="token-negated"),
    pytest.param('root ::= a b\na ::= "x"', "rule 'b' is used in rule 'root' but never defined",
                 "b", 1, 12, id="undefined"),
    pytest.param('root ::= a\na ::= "x"\n\na ::= "y"', "defined twice", "a", 4, 1,
                 id="duplicate"),
    pytest.param('root ::= a\na ::= (\n  "x" |\n  missing-rule\n)',
                 "rule 'missing-rule' is used in rule 'a'", "missing-rule", 4, 3,
                 id="undefined-in-group"),
    pytest.param('start ::= "a"', "root rule 'root' is not defined", "root", 1, 1,
                 id="missing-root"),
    pytest.param('', "root rule 'root' is not defined", "root", 1, 1, id="empty-grammar"),
    pytest.param('# only a comment\n', "root rule 'root' is not defined", "root", 1, 1,
                 id="only-comments"),
    pytest.param('root ::= "αβ" 日', "expected a symbol", "root", 1, 15, id="non-ascii-name"),
]


@pytest.mark.parametrize("text, message, rule, line, column", ERRORS)
def test_error(text, message, rule, line, column):
    with pytest.raises(cengine.CompileError) as info:
        cengine.compile_gbnf(text)
    e = info.value
    assert isinstance(e, ValueError)
    assert message in str(e)
    assert (e.rule, e.line, e.column) == (rule, line, column)


@pytest.mark.parametrize("text", ['root ::= "a"{4097}', 'root ::= "a"{1,4097}',
                                  'root ::= ("a"{0,65}){64}'])
def test_limit_errors_are_limit_errors(text):
    with pytest.raises(cengine.LimitError):
        parse_gbnf(text)


# left recursion is refused by the automaton builder, which reports the origin we set
LEFT_RECURSION = [
    pytest.param('root ::= root "a" | "b"', {"root": (1, 1)}, id="direct"),
    pytest.param('root ::= "x" | root "y"', {"root": (1, 1)}, id="direct-second-alternative"),
    pytest.param('root ::= a\na ::= b "x"\n  b ::= a "y" | "z"', {"a": (2, 1), "b": (3, 3)},
                 id="indirect"),
    pytest.param('root ::= ws root "a" | "b"\nws ::= [ ]*', {"root": (1, 1)},
                 id="behind-nullable-rule"),
    pytest.param('root ::= "x"? ("y" | "") root | "z"', {"root": (1, 1)},
                 id="behind-nullable-items"),
    pytest.param('root ::= "a" item\nitem ::= opt list\nopt ::= "-"?\nlist ::= item "," | "x"',
                 {"item": (2, 1), "list": (4, 1)}, id="indirect-behind-nullable"),
]


@pytest.mark.parametrize("text, cycle", LEFT_RECURSION)
def test_left_recursion(text, cycle):
    with pytest.raises(cengine.CompileError) as info:
        cengine.compile_gbnf(text)
    e = info.value
    assert "left recursion" in str(e)
    assert e.rule in cycle
    assert (e.line, e.column) == cycle[e.rule]


def test_right_recursion_is_fine():
    g = cengine.compile_gbnf('root ::= "a" root | "b"')
    assert accepts(g, b"aaab")
    assert not accepts(g, b"aaa")


# --- random walks: whatever the matcher allows can always be completed -------------
WALK_GRAMMARS = {
    "mixed": 'root ::= ("k" [0-9]{1,3} | "[" root? "]" | [α-γ]+ | "x"{2})+ ("!" | "?")?',
    "unicode": 'root ::= [^\\x00-\\x7F]{2,4} (" " . )*',
    "nested": 'root ::= "(" inner ")"\ninner ::= (root | [a-b] | "") ("," inner)?',
    "choice": 'root ::= "yes" | "no" | "maybe" ("!" | "?"){0,3}',
}
_COMPILED = {}


def _walk_grammar(name):
    if name not in _COMPILED:
        _COMPILED[name] = cengine.compile_gbnf(WALK_GRAMMARS[name])
    return _COMPILED[name]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(WALK_GRAMMARS)),
       choices=st.lists(st.integers(0, 1 << 16), max_size=30))
def test_random_walk_completes(name, choices):
    g = _walk_grammar(name)
    ref = reference_matcher(g)
    walked = walk_allowed(ref, choices)
    m = matcher(g)
    assert m.accept_bytes(bytes(walked))
    tail = m.completion()
    assert len(tail) == len(ref.completion())      # both give a shortest completion
    doc = bytes(walked) + tail
    done = matcher(g)
    assert done.accept_bytes(doc) and done.is_accepting(), doc
    doc.decode("utf-8")         # terminals are code points: every document is valid UTF-8
