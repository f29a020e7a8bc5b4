"""minLength / maxLength beside a pattern that is one character class repeated
(`^C*$`, `^C+$`, `^C{n,m}$`, with fixed-length parts around it): enforced exactly by
counting the class (strings.class_repetition, json_grammar.class_string), in every JSON
spelling of its characters, with jsonschema as the oracle. Every other pattern beside a
length is the pattern's automaton times a length counter (cengine.schema.lengths,
tests/test_schema_length_pattern.py)."""
from __future__ import annotations

import itertools
import json
import random

import pytest
from jsonschema import Draft202012Validator

import cengine
from cengine.errors import LimitError
from cengine.schema import json_grammar as jg
from walks import walk_random


def accepts(g, data: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(data) and m.is_accepting()


def spellings(ch: str):
    """Every spelling of one character the tests use: raw, \\u escape(s), short escape."""
    out = [json.dumps(ch, ensure_ascii=False)[1:-1], json.dumps(ch)[1:-1]]
    if ch == "/":
        out.append("\\/")
    return list(dict.fromkeys(s.encode() for s in out))


def spell(s: str, rng: random.Random) -> bytes:
    return b'"' + b"".join(rng.choice(spellings(c)) for c in s) + b'"'


def escaped(s: str) -> bytes:
    return json.dumps(s).encode()          # every non-ASCII character as \u escapes


def schema(pattern, lo=None, hi=None):
    out = {"type": "string", "pattern": pattern}
    if lo is not None:
        out["minLength"] = lo
    if hi is not None:
        out["maxLength"] = hi
    return out


# pattern, minLength, maxLength, strings accepted, strings refused
CASES = {
    "star_min_max": ("^[0-9a-z-]*$", 4, 63, ["abcd", "a-b-", "9" * 63],
                     ["abc", "", "a" * 64, "abcD", "ab_d"]),
    "plus_max_only": ("^[\\w@-]+$", None, 5, ["a", "@_-9Z"], ["", "abcdef", "a b"]),
    "plus_min_only": ("^[a-z]+$", 3, None, ["abc", "a" * 500], ["ab", "", "abc1"]),
    "braces_intersect": ("^[a-z]{2,6}$", 4, 10, ["abcd", "abcdef"], ["abc", "abcdefg"]),
    "braces_min_above": ("^[a-z]{2,}$", 5, 7, ["abcde", "abcdefg"], ["abcd", "abcdefgh"]),
    "escape_only_chars": ("^[/\"\\\\]*$", 1, 2, ["/", "\"\\", "//"], ["", "///", "a"]),
    "negated_unicode": ("^[^a]*$", 1, 3, ["é", "😀😀😀", "b/c"], ["", "ba", "😀😀😀😀"]),
    "astral_class": ("^[😀-😂x]+$", 2, 2, ["😀😂", "x😁"], ["😀", "😀x😀", "😃😃"]),
    "dot": ("^(.*)$", 1, None, ["a", "é😀 "], ["", "a\nb"]),
    "alternation_class": ("^(a|é|/)*$", 1, 2, ["a", "é/"], ["", "aaa", "b"]),
    "head": ("^mystring-[a-zA-Z0-9]+$", 10, 24, ["mystring-a", "mystring-" + "a" * 15],
             ["mystring-", "mystring-" + "a" * 16, "xystring-a"]),
    "foot": ("^[a-z]*\\.json$", 7, 8, ["ab.json", "abc.json"], ["a.json", "abcd.json"]),
    "printable_30": ("^[ !\"#$%&\\'()*+,\\-./0-9:;<=>?@A-Z\\[\\\\\\]\\^_`a-z{\\|}]+$",
                     30, 30, ["a" * 29 + "\\", "\"" * 30],
                     ["a" * 29, "a" * 31, "a" * 29 + "~"]),
    # above the unrolling limit: counted on the stack over the class
    "large_max": ("^[0-9a-f]*$", None, 32767, ["", "f" * 32767], ["f" * 32768, "g"]),
    "large_min": ("^[a-z]+$", 20000, None, ["q" * 20000, "q" * 25000], ["q" * 19999]),
    "large_both_head": ("^id-[a-z]*$", 4100, 6000, ["id-" + "a" * 4097,
                        "id-" + "b" * 5997], ["id-" + "a" * 4096, "id-" + "a" * 5998]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_length_cases_exact(name):
    pattern, lo, hi, good, bad = CASES[name]
    s = schema(pattern, lo, hi)
    validator = Draft202012Validator(s)
    g = cengine.compile_json_schema(s)
    rng = random.Random(name)
    for text in good:
        assert validator.is_valid(text), text[:40]        # the table agrees with the oracle
        for data in (json.dumps(text, ensure_ascii=False).encode(), escaped(text),
                     spell(text, rng)):
            assert accepts(g, data), (name, data[:60])
    for text in bad:
        assert not validator.is_valid(text), text[:40]
        for data in (json.dumps(text, ensure_ascii=False).encode(), escaped(text),
                     spell(text, rng)):
            assert not accepts(g, data), (name, data[:60])


def test_pattern_length_large_bounds_are_counted_on_the_stack():
    g = cengine.compile_json_schema(schema("^[0-9a-f]*$", None, 32767))
    assert g.automaton.n_positions < 4 * jg.COUNT_FIRST + 3 * 4 * jg.COUNT_BASE + 200
    # an out-of-class character far past the unrolling limit, and in an escaped spelling
    assert not accepts(g, b'"' + b"a" * 9000 + b"g" + b'"')
    assert accepts(g, b'"' + b"a" * 9000 + b"\\u0062" * 3 + b'"')


# not one class repetition between fixed parts: no longer refused, the pattern's automaton
# times a length counter (cengine.schema.lengths; tests/test_schema_length_pattern.py has
# the case table), checked here on the shapes once refused
PRODUCT = {
    "unanchored": ("[a-z]+", 3, 255),
    "start_only": ("^[a-z]*x", None, 8),
    "end_only": ("x[a-z]*$", None, 8),
    "two_counts": ("^[a-z0-9-]+:[a-z0-9.-]+$", 0, 146),
    "group_repeat": ("^(ab)*$", None, 6),
    "top_alternation": ("^[a-z]*$|^x$", None, 3),
    "optional_part": ("^[a-z]+(-x)?$", 2, None),
}


def _check_every_string(s, alphabet, n_max):
    """The compiled schema and jsonschema agree on every string over `alphabet` shorter than
    n_max."""
    g = cengine.compile_json_schema(s)
    check = Draft202012Validator(s)
    for n in range(n_max):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            assert accepts(g, json.dumps(text).encode()) is check.is_valid(text), text


@pytest.mark.parametrize("name", sorted(PRODUCT))
def test_pattern_length_other_patterns_compile_exactly(name):
    pattern, lo, hi = PRODUCT[name]
    _check_every_string(schema(pattern, lo, hi), "xab:-", 7)


# a search whose free edge is a repetition: `^[a-z]*` matches every string (its edge cut to
# nothing, regex._trim_free_edges), so only the lengths constrain; checked against jsonschema
SEARCH_EDGES = [("^[a-z]*", None, 3), ("[a-z]*$", 1, 3), ("^x[a-z]{0,9}", None, 4),
                ("[a-z]{2,9}$", 2, 4)]


@pytest.mark.parametrize("pattern,lo,hi", SEARCH_EDGES)
def test_pattern_length_search_edges_compile_exactly(pattern, lo, hi):
    _check_every_string(schema(pattern, lo, hi), "xa-", 6)


def test_pattern_length_limit_is_a_limit_error():
    with pytest.raises(LimitError) as ei:
        cengine.compile_json_schema(schema("^[a-z]*$", jg.MAX_STRING_LENGTH + 1))
    assert ei.value.keyword == "minLength"
    # the pattern's own bound keeps the count small: no limit reached
    cengine.compile_json_schema(schema("^[a-z]{0,10}$", 2, jg.MAX_STRING_LENGTH + 1))


# --- brute force against jsonschema -------------------------------------------------------

# no "\n": Python's `$` (jsonschema's) also matches before a final newline, ECMA-262's not
ALPHABET = ["a", "z", "-", "/", "A", "é", "😀", '"']
BRUTE = [("^[a-z-]*$", 2, 4), ("^[a-z-]+$", None, 3), ("^[a-z/]{1,3}$", 2, None),
         ("^[^a]*$", 1, 3), ("^x-[a-z]+$", 3, 4), ("^[a-z]+-y$", 0, 4), ("^(a|/|é)*$", 1, 2),
         ("^[😀a]*$", 2, 3), ("^.*$", 1, 2), ("^[\"-]{2,}$", 1, 3)]


@pytest.mark.parametrize("pattern,lo,hi", BRUTE)
def test_pattern_length_brute_force_against_jsonschema(pattern, lo, hi):
    s = schema(pattern, lo, hi)
    validator = Draft202012Validator(s)
    g = cengine.compile_json_schema(s)
    rng = random.Random(pattern)
    extra = ["x", "y"] if pattern.startswith("^x") or pattern.endswith("y$") else []
    checked = valid = 0
    for n in range(6):
        for chars in itertools.product(ALPHABET + extra, repeat=n):
            text = "".join(chars)
            want = validator.is_valid(text)
            for data in (json.dumps(text, ensure_ascii=False).encode(), spell(text, rng)):
                assert accepts(g, data) == want, (pattern, lo, hi, data)
            checked += 1
            valid += want
    assert valid and checked > valid          # both verdicts occur


# --- counted on the stack: the same language as one position per count --------------------

@pytest.mark.parametrize("first,base", [(2, 2), (3, 2), (2, 3)])
def test_class_string_counted_same_language_as_unrolled(monkeypatch, first, base):
    """class_string past its unrolling limit (lowered here) against class_string below it,
    with a foot after the count: same acceptance of every string over in-class, escaped and
    out-of-class characters."""
    ranges = ((0x61, 0x62),)
    foot = jg.char_in(((0x7A, 0x7A),))            # "z"
    alphabet = [b"a", b"\\u0062", b"B", b"z"]

    def build(lo, hi):
        g = cengine.ir.GrammarIR()
        g.add("root", jg.class_string(g, ranges, lo, hi, foot=foot))
        return cengine.Grammar.from_ir(g)

    for lo in range(0, 5):
        for hi in list(range(lo, 8)) + [None]:
            want = build(lo, hi)
            with monkeypatch.context() as mp:
                mp.setattr(jg, "UNROLL_LENGTH_MAX", 0)
                mp.setattr(jg, "COUNT_FIRST", first)
                mp.setattr(jg, "COUNT_BASE", base)
                mp.setattr(jg, "_INLINED_RUN", 0)
                got = build(lo, hi)
            for n in range(0, (hi or lo + 3) + 3):
                for word in itertools.product(alphabet, repeat=n) if n < 5 else \
                        [tuple(random.Random(n * 7 + k).choice(alphabet) for _ in range(n))
                         for k in range(40)]:
                    data = b'"' + b"".join(word) + b'"'
                    assert accepts(got, data) == accepts(want, data), (lo, hi, first, base, data)


# --- the closer ---------------------------------------------------------------------------

CLOSER = [("^[0-9a-z-]*$", 4, 63), ("^[a-z]+$", 5000, 6000), ("^[a-z]*$", None, 32767),
          ("^mystring-[a-zA-Z0-9]+$", 10, 24), ("^[a-z]*\\.json$", 7, None)]


@pytest.mark.parametrize("pattern,lo,hi", CLOSER)
def test_pattern_length_closer_ends_validly_and_shortest(pattern, lo, hi):
    s = schema(pattern, lo, hi)
    validator = Draft202012Validator(s)
    g = cengine.compile_json_schema(s)
    rng = random.Random(pattern)
    for _ in range(8):
        m = g.matcher()
        prefix = walk_random(m, rng, rng.randint(0, 80))
        tail = m.completion()
        assert m.accept_bytes(tail) and m.is_accepting()
        value = json.loads(prefix + tail)
        assert validator.is_valid(value), (prefix + tail)[:80]
        # no foot: the ending adds what the length still needs (the head counts), the quote
        if pattern.endswith(("]*$", "]+$")):
            try:
                n = len(json.loads(prefix + b'"')) if prefix else 0
            except ValueError:             # the prefix stops inside a character
                continue
            assert len(value) == max(lo or (pattern.endswith("+$") and 1) or 0, n)


# --- masks: the kernel's fill_mask against brute force on the real vocabulary -------------

MASK_SCHEMA = {"type": "object", "properties": {
    "slug": {"type": "string", "pattern": "^[0-9a-z-]*$", "minLength": 4, "maxLength": 40},
    "name": {"type": "string", "pattern": "^mystring-[a-zA-Z0-9]+$", "maxLength": 24}},
    "required": ["slug", "name"]}
MASK_DOC = b'{"slug": "a-slug-\\u0061nd-more-words-to-count", "name": "mystring-Ab12"}'


def test_pattern_length_masks_exact():
    from material import vocab_gguf
    from test_mask_exact import check_random_states
    vocab = cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(MASK_SCHEMA)
    pieces = [MASK_DOC[i:i + 3] for i in range(0, len(MASK_DOC), 3)]
    n = len(pieces) + 1 + 12
    assert check_random_states(g, vocab, n, seed=5, docs=[pieces]) == n
