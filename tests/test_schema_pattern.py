"""`pattern` on strings: ECMA-262 search semantics on the decoded string, every JSON spelling.

Oracle: jsonschema (Python `re.search`). Python and ECMA-262 read a few escapes differently
(`\\d`, `\\w` are Unicode-wide in Python, `\\s` sets differ, `$` matches before a final
newline in Python), so the equality checks use ASCII text without \\x1c-\\x1f and patterns
whose classes mean the same in both; docs/json-schema.md lists the differences.
"""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import cengine
from cengine import CompileError
from cengine.schema import schema_to_ir
from walks import walk_allowed


def accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode() if isinstance(doc, str) else doc) and m.is_accepting()


CASES = [
    ("^[A-Z]{1,5}$", ['"AAPL"', '"\\u0041BC"', '"Z"'], ['""', '"abc"', '"ABCDEF"', '"AB1"']),
    ("TODO|FIXME", ['"TODO"', '"x FIXME y"', '"TOD\\u004F"', '"a\\"TODO"'],
     ['"FIXM"', '"todo"', '""']),
    ("def fill_mask\\(", ['"def fill_mask(self)"'], ['"def fill_mask"']),
    ('^a"b\\\\c\\n$', ['"a\\"b\\\\c\\n"', '"a\\u0022b\\\\c\\u000A"', '"a\\"b\\u005cc\\n"'],
     ['"a\\"b\\\\c\n"', '"a\\"b\\\\c\\n "']),
    ("^\\d{3}-\\d{4}$", ['"555-1234"'], ['"5551234"', '"555-12345"', '"x555-1234"']),
    ("^(ab)+$|^x$", ['"ab"', '"abab"', '"x"'], ['"a"', '"aba"', '"xx"', '""']),
    ("é|😀", ['"café"', '"\\u00e9"', '"\\ud83d\\ude00"', '"😀"'], ['"cafe"', '"\\ud83d"']),
    ("", ['""', '"anything"'], ["1"]),
    ("^$", ['""'], ['"a"']),
    ("[^\\x00-\\x7f]", ['"é"', '"a\\u00e9"'], ['"abc"', '""']),
]


@pytest.mark.parametrize("pattern,good,bad", CASES, ids=[c[0] for c in CASES])
def test_pattern_cases(pattern, good, bad):
    schema = {"type": "string", "pattern": pattern}
    g = cengine.compile_json_schema(schema)
    v = Draft202012Validator(schema)
    for d in good:
        assert accepts(g, d), d
        assert v.is_valid(json.loads(d)), d
    for d in bad:
        assert not accepts(g, d), d


def test_pattern_only_constrains_strings():
    g = cengine.compile_json_schema({"pattern": "^a"})
    assert accepts(g, '"ab"') and accepts(g, "12") and accepts(g, "null") and not accepts(g, '"ba"')


LENGTHS = [
    ({"pattern": "^[A-Z]{2,4}$", "minLength": 2, "maxLength": 4}, ['"AB"', '"ABCD"'], ['"A"']),
    ({"pattern": "^[A-Z]{2,4}$", "maxLength": 10}, ['"ABC"'], []),
    ({"pattern": "^[A-Z]{2,4}$", "minLength": 1}, ['"AB"'], []),
    # not implied, but one class repeated: counted (test_schema_pattern_length.py)
    ({"pattern": "^[A-Z]{2,4}$", "minLength": 3}, ['"ABC"', '"ABCD"'], ['"AB"']),
]


@pytest.mark.parametrize("kw,good,bad", LENGTHS)
def test_lengths_implied_by_the_pattern(kw, good, bad):
    g = cengine.compile_json_schema({"type": "string", **kw})
    for d in good:
        assert accepts(g, d), d
    for d in bad:
        assert not accepts(g, d), d


def test_lengths_that_exclude_every_match_leave_nothing():
    with pytest.raises(CompileError):
        schema_to_ir({"type": "string", "pattern": "^[A-Z]{2,4}$", "minLength": 5})


REFUSED = [
    # a lookahead is read only right after a leading '^' (searches.py; `^(?=a)` compiles)
    ({"type": "string", "pattern": "a(?=b)"}, "pattern", "/pattern"),
    ({"type": "string", "pattern": "^(a(?!b))"}, "pattern", "/pattern"),
    ({"type": "string", "pattern": "(a)\\1"}, "pattern", "/pattern"),
    ({"type": "string", "pattern": "\\bword"}, "pattern", "/pattern"),
    ({"type": "string", "pattern": "(?i)a"}, "pattern", "/pattern"),
    ({"type": "string", "pattern": "["}, "pattern", "/pattern"),
    ({"type": "string", "pattern": 5}, "pattern", "/pattern"),
    ({"properties": {"a": {"type": "string", "pattern": "a{5000}"}}}, "pattern",
     "/properties/a/pattern"),
    # lengths beside a pattern are its automaton times a counter, up to a documented bound
    ({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 100000}, "maxLength",
     "/maxLength"),
]


def test_lengths_beside_any_pattern_are_enforced():
    """(once refused: the pattern does not imply them) cengine.schema.lengths"""
    g = cengine.compile_json_schema({"type": "string", "pattern": "^[A-Z]{2,4}(-x)?$",
                                     "minLength": 3})
    assert accepts(g, '"ABC"') and accepts(g, '"AB-x"') and not accepts(g, '"AB"')
    g = cengine.compile_json_schema({"type": "string", "pattern": "x", "maxLength": 8})
    assert accepts(g, '"aaaaaaax"') and not accepts(g, '"aaaaaaaax"')
    assert accepts(g, '"\\u0078"') and not accepts(g, '"abc"')


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED, ids=[str(r[0]) for r in REFUSED])
def test_refusals(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        schema_to_ir(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)


def test_enum_with_pattern_still_filters():
    g = cengine.compile_json_schema({"enum": ["abc", "xyz", 3], "pattern": "^a"})
    assert accepts(g, '"abc"') and accepts(g, "3") and not accepts(g, '"xyz"')


# --- acceptance == validity on an alphabet where ECMA and Python agree --------------------------
PATTERNS = ["^[A-Z]{1,5}$", "ab|c\\.d", "^x*y?$", "[0-9]+-[a-c]", "^(a|bc)*$", "q$", "^\"\\\\",
            "^[^a-c]{2}", "\\t|\\n"]
ALPHABET = "abcdqxyzABZ019-.\"\\\t\n é"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_acceptance_equals_validity(pattern):
    schema = {"type": "string", "pattern": pattern}
    g = cengine.compile_json_schema(schema)
    v = Draft202012Validator(schema)

    # Python's '$' also matches before a final newline; ECMA-262's does not
    alphabet = ALPHABET.replace("\n", "") if "$" in pattern else ALPHABET

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet, max_size=8), st.booleans())
    def run(text, ascii_only):
        doc = json.dumps(text, ensure_ascii=ascii_only)
        assert accepts(g, doc) == v.is_valid(text), doc
    run()


@pytest.mark.parametrize("pattern", PATTERNS + ["^\\d+\\w.$", "é.😀"])
def test_random_walks_close_to_matching_strings(pattern):
    schema = {"type": "string", "pattern": pattern}
    g = cengine.compile_json_schema(schema)
    v = Draft202012Validator(schema)
    rng = random.Random(pattern)
    for _ in range(60):
        m = g.matcher()
        prefix = walk_allowed(m, [rng.randrange(1 << 30) for _ in range(rng.randrange(1, 24))])
        doc = prefix + m.completion()
        assert v.is_valid(json.loads(doc)), doc


# (property schema, a valid value, an invalid one): strings whose language is large, repeated
# over several properties
SHARED_STRING_CASES = [
    ({"type": "string", "pattern": "^[0-9a-zA-Z_-]{1,255}$"}, '"ab_9"', '"a b"'),
    ({"type": "string", "format": "email"}, '"a@b.co"', '"ab"'),
    ({"type": "string", "minLength": 1, "maxLength": 255}, '"x"', '""'),
    ({"type": "string", "pattern": "^x", "maxLength": 100}, '"xyz"', '"yx"'),
]


@pytest.mark.parametrize("prop, good, bad", SHARED_STRING_CASES)
def test_repeated_string_constraints_are_one_rule(prop, good, bad):
    # one rule per (format or pattern, bounds) or length bounds in a grammar: six properties
    # cost about what one does instead of six copies in the object's rule
    def positions(n):
        schema = {"type": "object", "properties": {f"p{i}": dict(prop) for i in range(n)}}
        return cengine.compile_json_schema(schema, property_order="declared"), schema
    one, _ = positions(1)
    six, schema = positions(6)
    assert six.automaton.n_positions < 1.5 * one.automaton.n_positions
    for doc, ok in ((f'{{"p0":{good},"p5":{good}}}', True), (f'{{"p0":{good},"p5":{bad}}}', False),
                    (f'{{"p3":{bad}}}', False)):
        assert accepts(six, doc) == ok, doc
        assert Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER) \
            .is_valid(json.loads(doc)) == ok, doc
