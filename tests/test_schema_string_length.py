"""minLength / maxLength past the unrolling limit: strings counted on the stack
(json_grammar.counter_string) accept exactly the strings of lo..hi code points, mask like the
one-position-per-count construction, and close with the shortest legal ending."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from jsonschema import Draft202012Validator

import cengine
from cengine import Grammar, ir
from cengine.errors import CompileError, LimitError
from cengine.schema import json_grammar as jg
from material import vocab_gguf
from walks import walk_random

# code points of different spellings: 1-, 2-, 3-, 4-byte UTF-8, a short escape, a \u escape,
# a surrogate-pair escape (one code point)
SPELLINGS = [b"a", "\u00e9".encode(), "\u20ac".encode(), "\U0001F600".encode(), b"\\n",
             b"\\u00e9", b"\\ud83d\\ude00"]


def body(n: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    return b"".join(rng.choice(SPELLINGS) for _ in range(n))


def doc(n: int, seed: int = 0) -> bytes:
    return b'"' + body(n, seed) + b'"'


def accepts(g, data: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(data) and m.is_accepting()


# schema, lengths that must be accepted, lengths that must be refused
CASES = {
    "max_5000": ({"type": "string", "maxLength": 5000}, [0, 1, 1023, 1024, 1025, 4999, 5000],
                 [5001, 6000]),
    "max_32767": ({"type": "string", "maxLength": 32767}, [0, 1023, 1024, 1025, 31744, 32767],
                  [32768]),
    "max_65536": ({"type": "string", "maxLength": 65536}, [0, 2047, 2048, 65535, 65536],
                  [65537]),
    "min_20000": ({"type": "string", "minLength": 20000}, [20000, 20001, 30000],
                  [0, 19999]),
    "min_5000_max_65536": ({"type": "string", "minLength": 5000, "maxLength": 65536},
                           [5000, 5001, 65536], [0, 4999, 65537]),
    "min_4097_max_4100": ({"type": "string", "minLength": 4097, "maxLength": 4100},
                          [4097, 4100], [4096, 4101]),
    "equal_10000": ({"type": "string", "minLength": 10000, "maxLength": 10000}, [10000],
                    [9999, 10001]),
    "in_object": ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 32767}},
                   "required": ["s"]}, None, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_string_length_bounds_exact(name):
    schema, good, bad = CASES[name]
    g = cengine.compile_json_schema(schema)
    if good is None:                   # inside an object: the string then the closing brace
        assert accepts(g, b'{"s": ' + doc(32767, 1) + b'}')
        assert not accepts(g, b'{"s": ' + doc(32768, 1) + b'}')
        return
    for n in good:
        assert accepts(g, doc(n, n)), n
        assert len(json.loads(doc(n, n))) == n     # the document really has n code points
    for n in bad:
        assert not accepts(g, doc(n, n)), n


@pytest.mark.parametrize("lo,hi", [(0, 5000), (0, 32767), (0, 65536), (0, 1 << 20),
                                   (4097, 1 << 20), (40000, 40000), (5000, None)])
def test_string_length_positions_grow_with_the_log_of_the_bound(lo, hi):
    schema = {"type": "string", "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    a = cengine.compile_json_schema(schema).automaton
    levels = math.ceil(math.log(max(lo, hi or 0) / jg.COUNT_FIRST, jg.COUNT_BASE))
    # the level-1 rules (E1, U1), at most two runs of fewer than COUNT_FIRST + 33 characters
    # (one call each), and per level E(k), U(k) and two digits' calls (JSON string rules and
    # the character's ~44 positions besides)
    assert a.n_positions < 2 * jg.COUNT_FIRST + 2 * (jg.COUNT_FIRST + 33) \
        + 4 * jg.COUNT_BASE * levels + 100, levels


def test_string_length_live_stacks_stay_few():
    """One stack per level where the string may still end, along a long walk."""
    g = cengine.compile_json_schema({"type": "string", "maxLength": 1 << 20})
    m = g.matcher()
    assert m.accept_bytes(b'"')
    most = 0
    for i in range(70000 // 7):
        assert m.accept_bytes(SPELLINGS[i % len(SPELLINGS)])
        most = max(most, m.n_stacks)
    assert most <= 6


def test_string_length_format_and_pattern_combinations():
    # implied by the format / pattern: enforced; a real intersection stays refused
    g = cengine.compile_json_schema({"type": "string", "format": "date", "maxLength": 32767})
    assert accepts(g, b'"2024-02-29"') and not accepts(g, b'"2024-02-30"')
    g = cengine.compile_json_schema({"type": "string", "pattern": "^[a-z]{2,8}$",
                                     "minLength": 1, "maxLength": 65536})
    assert accepts(g, b'"abc"') and not accepts(g, b'"a"')
    assert not accepts(g, b'"' + b"a" * 5000 + b'"')
    # one class repeated: counted on the stack over the class (test_schema_pattern_length.py)
    g = cengine.compile_json_schema({"type": "string", "pattern": "^a+$", "maxLength": 32767})
    assert accepts(g, b'"' + b"a" * 32767 + b'"') and not accepts(g, b'"' + b"a" * 32768 + b'"')
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema({"type": "string", "pattern": "a+", "maxLength": 32767})
    assert ei.value.keyword == "maxLength"
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema({"type": "string", "format": "email", "minLength": 5000})
    assert ei.value.keyword == "minLength"


def test_string_length_limit_is_a_limit_error():
    for key in ("minLength", "maxLength"):
        with pytest.raises(LimitError) as ei:
            cengine.compile_json_schema({"type": "string", key: jg.MAX_STRING_LENGTH + 1})
        assert ei.value.keyword == key and ei.value.pointer == "/" + key
    cengine.compile_json_schema({"type": "string", "maxLength": jg.MAX_STRING_LENGTH})


# --- against the one-position-per-count construction, on small bounds ------------------------

def _grammar(make) -> Grammar:
    g = ir.GrammarIR()
    g.add("root", ir.seq(ir.lit("["), make(g), ir.lit("]")))
    return Grammar.from_ir(g)


def unrolled(lo, hi):
    def make(g):
        ch = jg.string_char(g)
        if hi is None:
            return ir.seq(ir.lit('"'), ir.repeat(ch, lo, lo), jg.string_body(g))
        return ir.seq(ir.lit('"'), ir.repeat(ch, lo, hi), ir.lit('"'))
    return _grammar(make)


def counted(lo, hi, first, base):
    return _grammar(lambda g: jg.counter_string(g, lo, hi, first, base))


BOUNDS = [(lo, hi) for lo in range(0, 6) for hi in list(range(lo, 10)) + [None]]


@pytest.mark.parametrize("first,base,run", [(2, 2, 0), (2, 2, 32), (3, 2, 1), (2, 3, 0),
                                            (4, 2, 0)])
def test_counter_string_same_prefix_language_as_unrolled(monkeypatch, first, base, run):
    """Every prefix over two spellings of different widths (and the quote after it): the
    same next bytes, the same acceptance, the same completion, up to hi + 1 characters.
    `run`: the longest last run the counter leaves inlined (the real one is 32)."""
    monkeypatch.setattr(jg, "_INLINED_RUN", run)
    alphabet = [b"a", b"\\u00e9"]
    block = (first, base)
    for lo, hi in BOUNDS + [(0, 17), (5, 23), (9, None), (13, 13)]:
        want_g, got_g = unrolled(lo, hi), counted(lo, hi, first, base)
        top = (hi if hi is not None else lo + 3) + 1
        frontier = [(want_g.matcher(), got_g.matcher())]
        assert frontier[0][0].accept_bytes(b'["') and frontier[0][1].accept_bytes(b'["')
        for n in range(top + 1):
            nxt = []
            for want, got in frontier:
                assert got.allowed_bytes() == want.allowed_bytes(), (lo, hi, block, n)
                assert got.completion() == want.completion(), (lo, hi, block, n)
                w, o = want.copy(), got.copy()
                assert o.accept_bytes(b'"]') == w.accept_bytes(b'"]')
                assert o.is_accepting() == w.is_accepting()
                for sp in alphabet:
                    w, o = want.copy(), got.copy()
                    ok = w.accept_bytes(sp)
                    assert o.accept_bytes(sp) == ok
                    if ok:
                        nxt.append((w, o))
            frontier = nxt[:64]


def bits_of(mask, n):
    return np.unpackbits(mask.view(np.uint8), bitorder="little")[:n].astype(bool)


@pytest.fixture(scope="module")
def llama_bpe():
    return cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))


@pytest.mark.parametrize("lo,hi,first,base,skip", [(0, 300, 16, 2, 0), (3, 300, 40, 3, 0),
                                                   (70, 200, 34, 2, 0), (130, None, 64, 2, 0),
                                                   (0, 2100, 256, 2, 200),
                                                   (1500, 2100, 256, 16, 220)])
def test_counter_string_masks_equal_unrolled_masks(llama_bpe, lo, hi, first, base, skip):
    """Real vocabulary: along token walks that cross the ends of level rules, fill_mask of
    the counted string equals fill_mask of the unrolled one (itself checked against brute
    force in test_mask_exact)."""
    vocab = llama_bpe
    block = first
    want_g, got_g = unrolled(lo, hi), counted(lo, hi, first, base)
    words = cengine.mask_words(vocab.size)
    rng = random.Random(lo * 1000 + block)
    checked = 0
    for walk in range(4):
        want, got = want_g.matcher(vocab), got_g.matcher(vocab)
        # skip: that many characters first, so the walk crosses the end of a full-size block
        start = b'["' + body(skip, walk)
        assert want.accept_bytes(start) and got.accept_bytes(start)
        for _ in range(150):
            a, b = np.zeros(words, np.int32), np.zeros(words, np.int32)
            want.fill_mask(a)
            got.fill_mask(b)
            wa, gb = bits_of(a, vocab.size), bits_of(b, vocab.size)
            bad = np.flatnonzero(wa != gb)
            assert bad.size == 0, [(int(i), vocab.tokens[i], bool(gb[i])) for i in bad[:8]]
            checked += 1
            allowed = np.flatnonzero(wa)
            # mostly short plain tokens, so walks get far into the string
            some = allowed[rng.sample(range(allowed.size), min(40, allowed.size))]
            short = [int(t) for t in some
                     if 0 < len(vocab.tokens[t]) <= 3 and b'"' not in vocab.tokens[t]]
            if not short or rng.random() < 0.01:
                break
            tok = rng.choice(short)
            assert want.accept_token(tok) and got.accept_token(tok)
    assert checked > 100


# --- the closer -------------------------------------------------------------------------------

CLOSER_SCHEMAS = [{"type": "string", "maxLength": 5000},
                  {"type": "string", "minLength": 4200, "maxLength": 5000},
                  {"type": "string", "minLength": 40000},
                  {"type": "object", "properties": {"t": {"type": "string", "minLength": 9000,
                                                          "maxLength": 65536}},
                   "required": ["t"]}]


@pytest.mark.parametrize("i", range(len(CLOSER_SCHEMAS)))
def test_counter_string_closes_with_the_shortest_legal_ending(i):
    schema = CLOSER_SCHEMAS[i]
    validator = Draft202012Validator(schema)
    g = cengine.compile_json_schema(schema)
    lo = schema.get("minLength", schema.get("properties", {}).get("t", {}).get("minLength", 0))
    rng = random.Random(i)
    for _ in range(6):
        m = g.matcher()
        prefix = walk_random(m, rng, rng.randint(0, 600))
        tail = m.completion()
        full = prefix + tail
        assert m.accept_bytes(tail) and m.is_accepting()
        value = json.loads(full)
        assert validator.is_valid(value), full[:80]
        s = value if isinstance(value, str) else value["t"]
        # inside the string: the ending adds only what minLength still needs, then the quote
        if isinstance(value, str) and len(prefix) < len(full) - 1:
            try:
                n = len(json.loads(prefix + b'"'))
            except ValueError:         # the prefix stops inside a character
                continue
            assert len(s) == max(lo, n)


def test_counter_frames_do_not_count_toward_max_depth():
    # four levels of counter frames below the character, inside an array at the depth limit
    g = cengine.compile_json_schema({"type": "array", "items": {"type": "string",
                                                                "maxLength": 1 << 20}},
                                    max_depth=1)
    assert accepts(g, b"[" + doc(70000, 3) + b"]")
    assert not accepts(g, b"[[]]")


def test_counter_level_ends_are_decided_by_tables(llama_bpe):
    """Along a walk across level-1 ends, the character's frame on a level-1 position near
    its end is tabled with the counter frames below it, and in the string's body no token
    is left to a walk with the real stack (no exit groups)."""
    g = cengine.compile_json_schema({"type": "string", "maxLength": 32767})
    m = g.matcher(llama_bpe)
    words = cengine.mask_words(llama_bpe.size)
    tok = [t for t in range(llama_bpe.size) if llama_bpe.tokens[t] == b"abc"][0]
    assert m.accept_bytes(b'"')
    for _ in range(3 * jg.COUNT_FIRST // 3):
        m.fill_mask(np.zeros(words, np.int32))
        assert m.accept_token(tok)
    tables = g.token_tables(llama_bpe).tables
    deep = [t for key, t in tables.items() if isinstance(key, tuple) and len(key) >= 3]
    assert deep and all(t.n_frames == 3 for t in deep)
    full = [t for t in deep if not t.groups]
    assert len(full) * 2 > len(deep)      # the E1 stacks' (the U2 / top-rule ones end strings)
