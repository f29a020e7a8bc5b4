"""minLength / maxLength beside any pattern or enforced format (cengine.schema.lengths): the
language's DFA over code points times a length counter, exact in every JSON spelling of a
character (an escape counts one code point), with jsonschema as the oracle.

Every case compiles a string schema and checks the byte-level acceptance of generated strings
(hypothesis: strings of the pattern, and strings over the case's alphabet) and of every string
over a small alphabet up to a length, each written raw, fully escaped and in a random mix of
spellings. The alphabets avoid the characters on which Python's `re` (jsonschema's) and
ECMA-262 read a construct differently: "\\n" before `$`, non-ASCII digits and letters for
`\\d` / `\\w`, the separators U+001C..U+001F and U+0085 for `\\s`."""
from __future__ import annotations

import functools
import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

import cengine
from cengine.errors import CompileError, LimitError
from cengine.schema import lengths
from test_schema_pattern_length import accepts, schema, spell

# `^[[a-z]*...` (a corpus pattern) makes Python's re warn of a possible nested set
pytestmark = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")

# name: (pattern, minLength, maxLength, alphabet)
CASES = {
    # corpus shapes (Github_hard o82544 curie, Snowplow processor.version, o45482 IndexName,
    # o62057 words, o64556 PlatformId, ui5 name, o84154 location, o58776 name), bounds cut
    # down where the table walks them
    "curie": (r"^([a-z0-9-]+):([a-z0-9\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$", 0, 12, "ab.-:9"),
    "version_max": (r"^\d+\.\d+\.\d+$", None, 7, "019."),
    "version_min_max": (r"^\d+\.\d+\.\d+$", 6, 8, "019.a"),
    "unanchored": ("[a-zA-Z0-9_.-]+", 3, 9, "a_.-@ é"),
    "words": (r"^(?:\S+\s+){0,9}\S+$", None, 9, "ab \té😀"),
    "platform_id": ("[RD][0-9][0-9][0-9][KM]", None, 8, "RD0K9x"),
    "ui5_name": (r"^(?:@[0-9a-z-_.]+\/)?[a-z][0-9a-z-_.]*$", 3, 8, "a0-@/."),
    "http_min": ("^(http|https)://.*", 10, None, "htps:/x"),
    "bracket_class": ("^[[a-z]*[-]?[a-z]*]*$", 1, None, "a-[]"),
    "tag": (r"^([\w\/-]|[\w-][\w\/-]*[\w-])$", 0, 6, "a/-_ "),
    # group repetitions, alternations, optional parts, half-anchored searches
    "group_repeat": ("^(ab)*$", None, 6, "ab"),
    "top_alternation": ("^[a-z]*$|^x$", None, 3, "xa-"),
    "optional_part": ("^[a-z]+(-x)?$", 2, None, "a-x"),
    "start_only": ("^[a-z]*x", None, 5, "ax-"),
    "end_only": ("x[a-z]*$", 2, 5, "ax-"),
    "two_counts": ("^[a-z0-9-]+:[a-z0-9.-]+$", 3, 6, "a:.-"),
    "exact_window": ("^(ab|c)+$", 4, 4, "abc"),
    # unicode, astral characters and characters JSON must escape
    "unicode": ("^[é😀]+(-[^a]+)?$", 2, 5, "é😀-ab\""),
    "escapes": ('^["\\\\/]+x?$', 2, 3, '"\\/x'),
    "control": ("^[^\\x00-\\x08]+\\t?$", 1, 3, "a\t\x01\x1f"),
    "astral_tail": ("😀.$", 2, 3, "😀ab"),
    # the language is bounded on one side only: the other bound is enforced, this one implied
    "implied_min": ("^[a-z]{2}[0-9]*$", 1, 4, "a09"),
}


@functools.lru_cache(maxsize=None)
def compiled(name):
    pattern, lo, hi, _ = CASES[name]
    s = schema(pattern, lo, hi)
    return cengine.compile_json_schema(s), Draft202012Validator(s)


def check(name, text, rng):
    g, validator = compiled(name)
    want = validator.is_valid(text)
    for data in (json.dumps(text, ensure_ascii=False).encode(), json.dumps(text).encode(),
                 spell(text, rng)):
        assert accepts(g, data) is want, (name, text, data[:80])
    return want


@pytest.mark.parametrize("name", sorted(CASES))
def test_length_pattern_exhaustive_small_strings(name):
    """Every string over the case's alphabet up to a length just past the bounds."""
    pattern, lo, hi, alphabet = CASES[name]
    rng = random.Random(name)
    top = min(6, (hi if hi is not None else (lo or 0)) + 1)
    for n in range(top + 1):
        if len(alphabet) ** n <= 4000:
            words = itertools.product(alphabet, repeat=n)
        else:                               # past that, a sample of the strings of length n
            words = (rng.choices(alphabet, k=n) for _ in range(4000))
        for chars in words:
            check(name, "".join(chars), rng)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_length_pattern_generated_strings(name, data):
    """Strings of the pattern (Python's reading of it, over the case's alphabet) and strings
    over the alphabet, of lengths around the bounds."""
    pattern, lo, hi, alphabet = CASES[name]
    chars = st.sampled_from(list(alphabet))
    top = (hi if hi is not None else (lo or 0)) + 3
    # (from_regex may end a `$` match with "\n", which only Python's `$` allows)
    strategy = st.one_of(st.from_regex(pattern, alphabet=chars).filter(lambda t: "\n" not in t),
                         st.lists(chars, max_size=top).map("".join))
    text = data.draw(strategy)
    check(name, text, random.Random(text))


# valid strings longer than the exhaustive walk reaches
LONG_EXAMPLES = {"http_min": ["http://abc"]}


def test_length_pattern_both_verdicts_occur():
    """The table is not vacuous: each case has accepted and refused strings."""
    for name, (pattern, lo, hi, alphabet) in CASES.items():
        _, validator = compiled(name)
        seen = {validator.is_valid(t) for t in LONG_EXAMPLES.get(name, ())}
        for n in range(8):
            if len(alphabet) ** n > 50000 or len(seen) == 2:
                break
            for chars in itertools.product(alphabet, repeat=n):
                seen.add(validator.is_valid("".join(chars)))
        assert seen == {True, False}, name


# the corpus shapes at their own bounds: compiled, then checked at the edges of the range
CORPUS = [
    (r"^([a-z0-9-]+):([a-z0-9\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$", 0, 146,
     lambda n: "a:" + "b" * (n - 5) + "::c" if n >= 5 else None),
    (r"^\d+\.\d+\.\d+$", None, 128, lambda n: "1." + "2" * (n - 4) + ".3" if n >= 5 else None),
    (r"^([\w\/-]|[\w-][\w\/-]*[\w-])$", 0, 255, lambda n: "a" + "/" * (n - 2) + "b"
     if n >= 2 else None),
    ("[a-zA-Z0-9_.-]+", 3, 255, lambda n: " " * (n - 1) + "é" * 0 + "x" if n >= 1 else None),
    (r"^(?:\S+\s+){0,9}\S+$", None, 120, lambda n: "é" * (n - 2) + " x" if n >= 3 else None),
    ("[RD][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][KMRASPDHEG]", None, 36,
     lambda n: "-" * (n - 11) + "R123456789K" if n >= 11 else None),
]


@pytest.mark.parametrize("pattern,lo,hi,make", CORPUS)
def test_length_pattern_corpus_shapes_at_their_bounds(pattern, lo, hi, make):
    s = schema(pattern, lo, hi)
    g = cengine.compile_json_schema(s)
    validator = Draft202012Validator(s)
    rng = random.Random(pattern)
    for n in sorted({0, 1, (lo or 0) - 1, lo or 0, hi - 1, hi, hi + 1, hi + 2}):
        text = make(n) if n >= 0 else None
        if text is None:
            continue
        assert len(text) == n
        want = validator.is_valid(text)
        assert want is ((lo or 0) <= n <= hi), (pattern, n)
        for data in (json.dumps(text, ensure_ascii=False).encode(), json.dumps(text).encode(),
                     spell(text, rng)):
            assert accepts(g, data) is want, (pattern, n, data[:60])


# --- formats --------------------------------------------------------------------------------

FORMATS = [("date-time", 1, None), ("date", 10, 10), ("email", 5, 12), ("hostname", None, 9),
           ("ipv4", None, 9), ("uri", 12, None)]
FORMAT_TEXTS = ["", "a", "a@b.co", "ab@cd.efgh", "abcdef@gh.ij", "x@y.z", "1.2.3.4",
                "10.20.30.40", "2020-01-02", "2020-01-02T03:04:05Z", "host", "host.example",
                "a.b", "http://a.b/c", "https://example.com/x", "é@a.b", "\"@a.b", "a b@c.d"]


@pytest.mark.parametrize("fmt,lo,hi", FORMATS)
def test_length_format_exact(fmt, lo, hi):
    s = {"type": "string", "format": fmt}
    if lo is not None:
        s["minLength"] = lo
    if hi is not None:
        s["maxLength"] = hi
    g = cengine.compile_json_schema(s)
    validator = Draft202012Validator(s, format_checker=FormatChecker())
    rng = random.Random(fmt)
    for text in FORMAT_TEXTS:
        g_ok = [accepts(g, d) for d in (json.dumps(text, ensure_ascii=False).encode(),
                                        json.dumps(text).encode(), spell(text, rng))]
        assert len(set(g_ok)) == 1, (fmt, text)
        if not g_ok[0]:
            continue
        # never a wrong document: what the grammar accepts the oracle accepts (the format
        # languages are documented narrowings in places, so only this direction is checked
        # for them), and its length is in range
        assert validator.is_valid(text), (fmt, text)
    # the lengths are what they say: the shortest and longest accepted by brute force over
    # strings the format accepts, measured against the bounds
    for text in FORMAT_TEXTS:
        if accepts(g, json.dumps(text).encode()):
            assert (lo or 0) <= len(text) <= (hi if hi is not None else 10 ** 9)


def test_length_format_same_as_pattern_of_its_language():
    """email with maxLength 12: every short address the bounds let through, and none
    longer (the length counted in code points, escapes included)."""
    g = cengine.compile_json_schema({"type": "string", "format": "email", "maxLength": 12})
    assert accepts(g, b'"abcdefg@gh.ij"') is False         # 13 code points
    assert accepts(g, b'"abcdef@gh.ij"') is True            # 12
    assert accepts(g, b'"\\u0061bcdef@gh.ij"') is True      # 12, one escaped
    assert accepts(g, b'"\\u0061bcdefg@gh.ij"') is False    # 13, one escaped


# --- the empty language, and the limit ------------------------------------------------------

@pytest.mark.parametrize("pattern,lo,hi", [("^(aa)+$", 3, 3), ("^[a-z]{2,3}-x$", 6, None),
                                           ("^a[0-9]+$", None, 1)])
def test_length_pattern_empty_intersection(pattern, lo, hi):
    """Bounds that exclude every string of the language: the string admits nothing (as when
    the language's own lengths exclude the bounds): alone the schema is refused as accepting
    nothing, beside another branch that branch stays."""
    with pytest.raises(CompileError, match="accepts no finite JSON document"):
        cengine.compile_json_schema(schema(pattern, lo, hi))
    g = cengine.compile_json_schema({"anyOf": [schema(pattern, lo, hi), {"type": "null"}]})
    assert accepts(g, b"null")
    assert not accepts(g, b'"aa"') and not accepts(g, b'"aaa"') and not accepts(g, b'"a1"')


@pytest.mark.parametrize("s,keyword", [
    (schema("^[a-z]+(-[a-z]+)*$", None, 100000), "maxLength"),
    (schema("^(a|b)*a(a|b){11}x?$", None, 4000), "maxLength"),
    (schema("[RD][0-9]{9}[KM]", 5000, None), "minLength"),
    ({"type": "string", "format": "email", "maxLength": 1024}, "maxLength"),
])
def test_length_pattern_limit_is_a_limit_error(s, keyword):
    with pytest.raises(LimitError) as ei:
        cengine.compile_json_schema(s)
    assert ei.value.keyword == keyword and ei.value.pointer == "/" + keyword
    assert str(lengths.MAX_LENGTH_STATES) in str(ei.value)


def test_length_pattern_limit_bounds_the_pairs(monkeypatch):
    """The same bound at a smaller value: refused past it, compiled under it."""
    s = schema(r"^\d+\.\d+\.\d+$", None, 40)
    monkeypatch.setattr(lengths, "MAX_LENGTH_STATES", 50)
    lengths.language_dfa.cache_clear()
    with pytest.raises(LimitError):
        cengine.compile_json_schema(s)
    monkeypatch.setattr(lengths, "MAX_LENGTH_STATES", 4096)
    cengine.compile_json_schema(s)


def test_length_automaton_is_minimal_for_a_class_run():
    """`^[a-z]+x?$` (not one class repetition) with lengths 2..5: the merged automaton has one
    state per count plus the states after x, not one per (state, count) pair."""
    from cengine.schema.strings import pattern_expr
    start, rows = lengths.length_automaton(pattern_expr("^[a-z]+x?$", ""), 2, 5)
    # counts 0..5 of the run (the x is one of [a-z]: it needs no state of its own)
    assert len(rows) == 6


def test_length_pattern_stack_stays_flat():
    """One rule per state, each a tail call of the next: a 255-character string leaves no
    frame per character (the matcher holds a handful of stacks, not one per count)."""
    g = cengine.compile_json_schema(schema(r"^([\w\/-]|[\w-][\w\/-]*[\w-])$", 0, 255))
    m = g.matcher()
    assert m.accept_bytes(b'"' + b"a" * 254)
    assert m.accept_bytes(b'b"') and m.is_accepting()
    m = g.matcher()
    assert not m.accept_bytes(b'"' + b"a" * 256)
