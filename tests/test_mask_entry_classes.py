"""Entry classes (cengine/_mask.pyx, entry_class and EntryPrune): a table walk skips a child
whose whole subtree is a run of a class that the entry it carries provably takes for ever,
and takes that subtree's tokens without stepping. Case tables for the classes found at real
positions (what must be in, what must stay out, where there is none), and the masks and
tables with the prune against those without it (use_entry_classes(False)) and against the
brute force, over llama-bpe."""
import numpy as np
import pytest

import cengine
from cengine import _mask
from material import vocab_gguf
from test_mask_exact import check_random_states


@pytest.fixture(scope="module")
def llama_bpe():
    return cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))


def _class_bytes(words):
    bits = words[0] | words[1] << 64 | words[2] << 128 | words[3] << 192
    return {b for b in range(256) if bits >> b & 1}


REGEX = {"type": "object", "properties": {"re": {"type": "string", "format": "regex"}}}
KEYS = {"type": "object", "patternProperties": {"^abc.+$": {"type": "string"}}}
MODE_KEYS = {"type": "object", "patternProperties": {"^mode": {"type": "array"}}}

# (schema, closed objects, document prefix, bytes that must be in the class of some stack's
# top position, bytes that must stay out), or None for "no class at any stack"
CLASS_CASES = {
    # inside a regex character class: literal characters loop; `]` leaves the class, `-`
    # starts a range (whose end must not come before its start), `\` an escape; U+0080-U+009F
    # (lead byte C2) are refused by the format's DFA, other non-ASCII characters are in
    "regex_char_class": (REGEX, False, b'{"re": "^[a', set(b"bz09 ._") | {0xC3, 0xE4, 0x80},
                         set(b"]-\\\"") | {0xC2, 0x0A}),
    # after `[^`: a second `^` is refused there, so it leaves the root's class
    "regex_negated_class": (REGEX, False, b'{"re": "[^', set(b"abz09"), set(b"^]\\\"")),
    # an open object's key beside `^abc.+$`: after `ab`, `c` leads to the name that only the
    # pattern's branch may go on with
    "key_beside_pattern": (KEYS, False, b'{"ab', set(b"abdxyz09 "), set(b"c\"\\")),
    # after `x` the key is any other name: every plain ASCII character
    "key_other_name": (KEYS, False, b'{"x', set(b"abcxyz09 -_.~"), set(b"\"\\")),
    "key_beside_mode": (MODE_KEYS, False, b'{"mo', set(b"abcxyz"), set(b"d\"")),
    # a plain string body: every plain character, non-ASCII too
    "string_body": ({"type": "string"}, True, b'"', set(b"az ~") | {0xC2, 0xE2, 0xF0, 0x80},
                    set(b"\"\\") | {0x0A, 0xC0, 0xF5}),
    # no class: a length-bounded run dies (the counter's states refuse at its end), digits
    # are fewer than ENTRY_CLASS_MIN bytes
    "bounded": ({"type": "string", "pattern": "^[a-z]{0,3}$"}, True, b'"', None, None),
    "integer": ({"type": "integer"}, True, b'1', None, None),
}


def _after_prefix(vocab, name):
    """(grammar, matcher past the case's prefix, fresh tables) of a CLASS_CASES row."""
    schema, closed, prefix, _, _ = CLASS_CASES[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed)
    m = g.matcher(vocab)
    assert m.accept_bytes(prefix)
    return g, m, _mask.TokenTables(g.automaton, vocab)


@pytest.mark.parametrize("name", sorted(CLASS_CASES))
def test_entry_class_cases(llama_bpe, name):
    _, _, _, inside, outside = CLASS_CASES[name]
    _, m, tables = _after_prefix(llama_bpe, name)
    classes = [tables.entry_class(stack[0]) for stack, _ in m.stacks() if stack]
    found = [_class_bytes(c) for c in classes if c is not None]
    if inside is None:
        assert not found, [sorted(c) for c in found]
        return
    assert any(inside <= c and not (outside & c) for c in found), \
        [(sorted(inside - c), sorted(outside & c)) for c in found]


def test_entry_class_is_sound(llama_bpe):
    """Every run of a found class is taken: random runs of its characters (ASCII bytes and
    whole characters of its lead bytes) from the position keep the matcher alive."""
    rng = np.random.default_rng(3)
    samples = {0xC3: "é", 0xE4: "中", 0xE2: "—", 0xF0: "😀", 0xD0: "д"}
    for name in ("regex_char_class", "key_beside_pattern", "key_other_name", "string_body"):
        prefix = CLASS_CASES[name][2]
        g, m, tables = _after_prefix(llama_bpe, name)
        for stack, _ in m.stacks():
            c = tables.entry_class(stack[0]) if stack else None
            if c is None:
                continue
            cls = _class_bytes(c)
            alphabet = [bytes([b]) for b in sorted(cls) if b < 0x80] + \
                [samples[b].encode() for b in samples if b in cls]
            for _ in range(200):
                run = b"".join(alphabet[i] for i in rng.integers(0, len(alphabet), 12))
                probe = g.matcher()
                assert probe.accept_bytes(prefix)
                assert probe.accept_bytes(run), (name, prefix, run)


# documents walked with and without the prune: masks equal, tables' accepted tokens equal
SWITCH_DOCS = {
    "regex": (REGEX, b'{"re": "^[a-zA-Z0-9_\\u00e9-]{3,16}(?:x|y)*$"}'),
    "regex_unicode": (REGEX, '{"re": "[éàü]+\\\\d{2}ß (ok)"}'.encode()),
    "keys": (KEYS, b'{"abc123": "x", "other": [1, {"k": null}], "ab": 2}'),
    "mode_keys": (MODE_KEYS, b'{"mode1": [1], "modest": [], "x": {"y": "z"}}'),
    "email": ({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}},
              b'{"e": "joe.doe@example.com"}'),
    "pattern": ({"type": "string", "pattern": "^[a-z][a-z0-9+.-]*:[^ ]+$"},
                b'"https://example.com/a?b=c"'),
}


def _walk_masks(g, vocab, doc):
    m = g.matcher(vocab)
    out = []
    for i in range(0, len(doc), 3):
        mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
        m.fill_mask(mask)
        out.append(mask)
        assert m.accept_bytes(doc[i:i + 3])
    return out


@pytest.mark.parametrize("name", sorted(SWITCH_DOCS))
def test_entry_classes_switch_off(llama_bpe, name):
    from cengine._tables import SHARED_TABLES
    schema, doc = SWITCH_DOCS[name]
    runs = []
    for on in (True, False):
        _mask.use_entry_classes(on)
        try:
            SHARED_TABLES.clear()
            cengine.CACHE.clear()
            g = cengine.compile_json_schema(schema, closed_objects=False,
                                            whitespace_budget=None)
            masks = _walk_masks(g, llama_bpe, doc)
            tables = g.token_tables(llama_bpe)
            accepted = {k: t.n_accepted for k, t in tables.tables.items()}
            runs.append((masks, accepted))
        finally:
            _mask.use_entry_classes(True)
    (m1, a1), (m0, a0) = runs
    assert len(m1) == len(m0)
    for i, (x, y) in enumerate(zip(m1, m0)):
        assert np.array_equal(x, y), (name, i)
    assert a1 == a0


@pytest.mark.parametrize("name", ["regex_unicode", "keys", "pattern"])
def test_entry_classes_masks_exact(llama_bpe, name):
    """Against the brute force (every token accepted or not, one by one)."""
    schema, doc = SWITCH_DOCS[name]
    cengine.CACHE.clear()
    from cengine._tables import SHARED_TABLES
    SHARED_TABLES.clear()
    g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None)
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    n = min(len(pieces), 12)
    assert check_random_states(g, llama_bpe, n, seed=11, docs=[pieces]) == n
