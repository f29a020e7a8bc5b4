"""Anchors anywhere in a pattern, lookaheads after a leading '^', and a pattern beside an
enforced format (cengine.schema.searches), exact against jsonschema.

Every string is checked raw, fully escaped and in a random mix of JSON spellings. The
alphabets have no newline: Python's `re` (jsonschema's) lets `$` match before a final
"\\n", ECMA-262 does not; on the rest the two read these patterns alike."""
from __future__ import annotations

import functools
import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

import cengine
from cengine.errors import CompileError, LimitError
from cengine.schema import searches
from test_schema_pattern_length import accepts, escaped, spell

# name: (pattern, alphabet, longest string walked exhaustively)
CASES = {
    # the corpus shapes (Github_hard o60770/o76776, Github_medium o15711, o19005, o27402,
    # o4180, o12562; JsonSchemaStore browser.i18n, bukkit-plugin, io-package)
    "path_segments": (r"^(\/?((\.{2})|([a-z0-9\-]*))($|\/))*$", "/.a-_", 5),
    "not_comma_or_end": ("^([^,]|$)", ",a.", 3),
    "date_alternatives": (r"^(\d{4}(-\d{2})?(-\d{2})?$)|(^\d{4}-\d{2}-\d{2}T\d{2}$)", "0-T", 6),
    "url_schemes": ("(^gs://(.+))|(^http://(.+))|(^https://(.+))", "gs:/h", 6),
    "prefix_or_infix": ("(^Hpt_|^Int_|_Armour_)", "Hpt_I", 5),
    "dollar_then_more": ("^$[a-zA-Z0-9$_]*$", "a$_", 3),
    "no_double_at": ("^(?!@@)[@a-zA-Z0-9_-]+$", "@a-.", 4),
    "bukkit_main": (r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z\d_$]*\.)*[a-zA-Z_$][a-zA-Z\d_$]*$",
                    "ob.1", 5),
    "not_iobroker": ("^(?![i|I][o|O][b|B])", "iIob|", 4),
    # anchors in odd places
    "end_then_start": ("$^", "a", 2),
    "end_in_middle": ("a$b|c", "abc", 4),
    "start_in_middle": ("a^b|c", "abc", 4),
    "optional_start": ("(^a)?b", "ab", 4),
    "starred_end": ("a($)*", "ab", 3),
    "end_in_group_star": ("^(a|$)+$", "ab", 4),
    "start_after_start": ("^^a$$", "ab", 3),
    "both_in_class_alt": ("(^|x)a(y|$)", "axy", 4),
    # lookaheads
    "positive": ("^(?=ab)a", "ab", 4),
    "negative_end": ("^(?!$)", "a", 2),
    "two_lookaheads": ("^(?=a)(?!ab)", "ab", 4),
    "lookahead_with_anchor": ("^(?!a$)[ab]*$", "ab", 4),
    "lookahead_alternative": ("x|^(?!a)b$", "abx", 4),
    "lookahead_unicode": ("^(?!é)[é😀]+", "é😀a", 3),
}


@functools.lru_cache(maxsize=None)
def compiled(name):
    pattern = CASES[name][0]
    s = {"type": "string", "pattern": pattern}
    return cengine.compile_json_schema(s), Draft202012Validator(s)


def check(g, v, text, rng):
    want = v.is_valid(text)
    for data in (spell(text, random.Random(0)), escaped(text), spell(text, rng)):
        assert accepts(g, data) == want, (text, data, want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_anchor_patterns_exhaustive(name):
    _, alphabet, n = CASES[name]
    g, v = compiled(name)
    rng = random.Random(name)
    for k in range(n + 1):
        for t in itertools.product(alphabet, repeat=k):
            check(g, v, "".join(t), rng)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_anchor_patterns_generated(name, data):
    pattern, alphabet, _ = CASES[name]
    g, v = compiled(name)
    text = data.draw(st.text(alphabet=alphabet + "xyz0", max_size=14))
    check(g, v, text, random.Random(text))


def test_both_verdicts_occur():
    for name, (_, alphabet, n) in CASES.items():
        if name == "end_then_start":
            continue
        _, v = compiled(name)
        seen = {v.is_valid("".join(t)) for k in range(n + 1)
                for t in itertools.product(alphabet, repeat=k)}
        assert seen == {True, False}, name


def test_long_corpus_strings():
    g, v = compiled("bukkit_main")
    for text in ("org.bukkit.Foo", "org.bukkitx.Foo", "com.example.Main", "org.Main", "a..b",
                 "org.bukkit"):
        check(g, v, text, random.Random(1))
    g, v = compiled("not_iobroker")
    for text in ("iobroker", "IOBroker.x", "iobroke", "io|b", "my.iobroker"):
        check(g, v, text, random.Random(1))


def test_empty_language_is_the_usual_impossible_schema():
    # `a$^`: nothing can follow the end and precede a start
    with pytest.raises(CompileError):
        cengine.compile_json_schema({"type": "string", "pattern": "a$^"})
    g = cengine.compile_json_schema({"anyOf": [{"type": "string", "pattern": "a$^"},
                                               {"type": "integer"}]})
    assert accepts(g, b"3") and not accepts(g, b'"a"')


def test_anchors_beside_lengths_and_in_pattern_properties():
    s = {"type": "string", "pattern": "^([^,]|$)", "maxLength": 3}
    g, v = cengine.compile_json_schema(s), Draft202012Validator(s)
    for k in range(5):
        for t in itertools.product(",a", repeat=k):
            check(g, v, "".join(t), random.Random(k))
    s = {"type": "object", "patternProperties": {"^$[a-z$]*$": {"type": "integer"}},
         "additionalProperties": {"type": "string"}}
    g, v = cengine.compile_json_schema(s), Draft202012Validator(s)
    for doc in ('{"": 1}', '{"": "x"}', '{"$a": "x"}', '{"$a": 1}', '{"a": "b"}'):
        import json
        assert accepts(g, doc.encode()) == v.is_valid(json.loads(doc)), doc


REFUSED = [
    "a(?=b)",                   # a lookahead not after a leading '^'
    "^(a(?!b))",                # inside a group
    "(?!a)b",                   # no '^' before it
    "^(?=a)*",                  # repeated
    "^(?<=a)b",                 # lookbehind
    "^$*",                      # a repeated anchor
]


@pytest.mark.parametrize("pattern", REFUSED)
def test_refusals_name_pattern(pattern):
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema({"type": "string", "pattern": pattern})
    assert (ei.value.keyword, ei.value.pointer) == ("pattern", "/pattern")


def test_search_state_limit(monkeypatch):
    monkeypatch.setattr(searches, "MAX_SEARCH_STATES", 8)
    searches._searched.cache_clear()
    with pytest.raises(LimitError) as ei:
        cengine.compile_json_schema({"type": "string", "pattern": "^(?!abcdefghijk)x"})
    assert (ei.value.keyword, ei.value.pointer) == ("pattern", "/pattern")
    assert "MAX_SEARCH_STATES" in ei.value.reason
    searches._searched.cache_clear()


# --- pattern beside an enforced format ---------------------------------------------------------
FORMAT_CASES = [
    # JsonSchemaStore 0.5.2 email-like shapes, Github_hard o61027 / o66683 / o69970 shapes
    ("email", "^[a-z.]+@example\\.com$", None, None,
     ["a@example.com", "a.b@example.com", "A@example.com", "a@example.org", "a@b.com",
      ".a@example.com", "a..b@example.com", "@example.com", "a@example.comx"]),
    ("email", "@b", None, 8, ["a@b.co", "a@bc", "a@c.b", "ab@bcdef.gh", "a@b"]),
    ("date", "^20[0-9]{2}", None, None, ["2020-01-02", "1999-01-02", "2020-13-01", "2020"]),
    ("ipv4", "^10\\.", None, None, ["10.0.0.1", "11.0.0.1", "10.0.0.256", "10."]),
    ("uuid", "^[0-9a-f-]+$", None, None, ["00000000-0000-0000-0000-000000000000",
                                          "A0000000-0000-0000-0000-000000000000"]),
    ("date-time", "Z$", None, None, ["2020-01-02T03:04:05Z", "2020-01-02T03:04:05+01:00",
                                     "2020-01-02T03:04:05z"]),
    ("hostname", "^(?!-)[a-z.]+$", 2, None, ["ab.c", "a", "-ab", "AB", "a.b"]),
]


@pytest.mark.parametrize("fmt,pattern,lo,hi,texts", FORMAT_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in FORMAT_CASES])
def test_pattern_beside_format_exact(fmt, pattern, lo, hi, texts):
    s = {"type": "string", "format": fmt, "pattern": pattern}
    if lo is not None:
        s["minLength"] = lo
    if hi is not None:
        s["maxLength"] = hi
    g = cengine.compile_json_schema(s)
    # the oracle: jsonschema for the pattern and lengths, and the format as enforced alone
    # (its own tests check it against jsonschema's checker; `email` is stricter here than
    # jsonschema's "contains an @")
    fmt_only = cengine.compile_json_schema({"type": "string", "format": fmt})
    rest = Draft202012Validator({k: x for k, x in s.items() if k != "format"})
    checker = Draft202012Validator({"format": fmt}, format_checker=FormatChecker())
    verdicts = set()
    for text in texts:
        want = rest.is_valid(text) and accepts(fmt_only, escaped(text))
        if want:
            assert checker.is_valid(text)
        rng = random.Random(text)
        for data in (spell(text, random.Random(0)), escaped(text), spell(text, rng)):
            assert accepts(g, data) == want, (text, data, want)
        verdicts.add(want)
    assert verdicts == {True, False}


def test_pattern_beside_format_empty_and_limit(monkeypatch):
    with pytest.raises(CompileError):       # no ipv4 address has a letter
        cengine.compile_json_schema({"type": "string", "format": "ipv4", "pattern": "[a-z]"})
    monkeypatch.setattr(searches, "MAX_SEARCH_STATES", 16)
    with pytest.raises(LimitError) as ei:
        cengine.compile_json_schema({"type": "string", "format": "email", "pattern": "^q.*z$"})
    assert (ei.value.keyword, ei.value.pointer) == ("pattern", "/pattern")
