"""Character runs (TokenTables._character_run): along a bounded string's count the character is
a rule with its frame kept, and the table of a (count, character) pair takes the plain tokens
of the class by their number of characters and walks only the tokens with a quote, a
backslash or odd UTF-8 (TokenTrie.string_rest). Checked three ways: the run lengths the
automaton gives, the masks against brute force (every token tried on the matcher), and the
tables against those of the general walk (use_character_runs(False)), over llama-bpe."""
import numpy as np
import pytest

import cengine
from cengine import _mask
from cengine._tables import SHARED_TABLES
from material import vocab_gguf
from test_mask_exact import check_random_states


@pytest.fixture(scope="module")
def llama_bpe():
    v = cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))
    cengine.prepare(v)
    return v


# (schema, document prefix, the most characters the character on top takes (run), or -1
# where the general walk must build the table)
RUN_CASES = {
    "max_length_5": ({"type": "string", "maxLength": 5}, b'"', 5),
    "max_length_5_after_3": ({"type": "string", "maxLength": 5}, b'"abc', 2),
    "min_max_after_1": ({"type": "string", "minLength": 3, "maxLength": 8}, b'"a', 7),
    # an escape is one character of the count
    "after_escape": ({"type": "string", "maxLength": 6}, b'"\\u00e9\\n', 4),
    "max_length_300": ({"type": "string", "maxLength": 300}, b'"', None),
    "in_object": ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 12}},
                   "required": ["a"]}, b'{"a": "xy', 10),
    "property_names": ({"type": "object", "propertyNames": {"maxLength": 4},
                        "additionalProperties": {"type": "integer"}}, b'{"', 4),
    "class": ({"type": "string", "pattern": "^[a-z0-9_-]*$", "maxLength": 9}, b'"ab', 7),
    "class_negated": ({"type": "string", "pattern": "^[^,]*$", "maxLength": 40}, b'"', 40),
    # `.` refuses U+2028 and U+2029, which no plain token holds
    "class_dot": ({"type": "string", "pattern": "^.*$", "maxLength": 3}, b'"', 3),
    # a count inside the pattern is the regex's own automaton, not a run of calls
    "regex_count": ({"type": "string", "pattern": "^.{0,3}$"}, b'"', -1),
    # minLength alone: the count runs into the unbounded rest (a call of the string body),
    # which the run does not look through
    "min_length_only": ({"type": "string", "minLength": 4}, b'"a', -1),
    # a foot after the class (`x$`): plain characters go on past the count
    "class_with_foot": ({"type": "string", "pattern": "^[a-z]{0,6}x$"}, b'"', -1),
}


def _top_runs(g, vocab, prefix):
    m = g.matcher(vocab)
    assert m.accept_bytes(prefix)
    tables = g.token_tables(vocab)
    runs = []
    for stack, _ in m.stacks():            # top first
        if len(stack) >= 2:
            runs.append(tables.character_run((stack[1], stack[0])))
    return runs


@pytest.mark.parametrize("name", sorted(RUN_CASES))
def test_character_run_lengths(llama_bpe, name):
    schema, prefix, want = RUN_CASES[name]
    cengine.CACHE.clear()
    runs = _top_runs(cengine.compile_json_schema(schema), llama_bpe, prefix)
    if want is None:                       # capped at the longest plain token
        want = cengine._trie.trie_of(llama_bpe).longest_plain_chars()
    assert max(runs, default=-1) == want, runs


def test_character_runs_switch_off(llama_bpe):
    _mask.use_character_runs(False)
    try:
        cengine.CACHE.clear()
        g = cengine.compile_json_schema({"type": "string", "maxLength": 5})
        assert max(_top_runs(g, llama_bpe, b'"')) == -1
    finally:
        _mask.use_character_runs(True)


# Documents (scripted in 3-byte pieces, so tokens split characters and escapes) over shapes
# that reach character runs: ends of counts with quotes, escapes, multi-byte characters,
# objects after the string (exits through the suffix tries), arrays of bounded strings,
# classes with and without non-ASCII.
EXACT_CASES = {
    "short": ({"type": "string", "maxLength": 4}, b'"h\xc3\xa9\\"l"'),
    "bounded_in_object": ({"type": "object", "properties": {
        "a": {"type": "string", "minLength": 2, "maxLength": 7},
        "b": {"type": "string", "maxLength": 40}, "n": {"type": "integer"}},
        "required": ["a", "b"]},
        b'{"a": "\xe2\x82\xac\\u00e9xyz", "b": "a sentence \\t with \xf0\x9f\x98\x80 in", "n": 1}'),
    "array_items": ({"type": "array", "items": {"type": "string", "maxLength": 3},
                     "maxItems": 4}, b'["ab", "", "\\\\x", "\xc3\xa9\xc3\xa9\xc3\xa9"]'),
    "class_ascii": ({"type": "object", "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$", "maxLength": 12}},
        "required": ["id"]}, b'{"id": "Ab.c-9_x"}'),
    "class_negated": ({"type": "string", "pattern": "^[^\\n]*$", "maxLength": 20},
                      b'"line \xc3\xa9 \\t tab \\"q\\""'),
    "class_dot": ({"type": "string", "pattern": "^.+$", "maxLength": 5},
                  b'"a\xe2\x80\x94b"'),
    "long": ({"type": "string", "maxLength": 150},
             b'"' + b"a long text with \\u00e9scapes and \xc3\xa9 signs " * 3 + b'"'),
    # above 4,096 a counter on the stack: its character's pairs take the counter frames below
    "counter": ({"type": "string", "maxLength": 5000},
                b'"' + b"w\xc3\xb6rds \xe2\x82\xac " * 8 + b'"'),
}


@pytest.mark.parametrize("name", sorted(EXACT_CASES))
def test_character_runs_masks_exact(llama_bpe, name):
    schema, doc = EXACT_CASES[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema)
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    n = len(pieces) + 1 + 6
    assert check_random_states(g, llama_bpe, n, seed=11, docs=[pieces]) == n


def _masks_along(schema, vocab, doc):
    """The masks along `doc` (one byte at a time) on a fresh grammar, no table shared
    (schema: a JSON Schema, or a function making the grammar)."""
    cengine.CACHE.clear()
    SHARED_TABLES.clear()
    g = schema() if callable(schema) else cengine.compile_json_schema(schema)
    m = g.matcher(vocab)
    out = []
    for i in range(len(doc) + 1):
        mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
        m.fill_mask(mask)
        out.append(mask)
        if i < len(doc):
            assert m.accept_bytes(doc[i:i + 1])
    return out


@pytest.mark.parametrize("name", sorted(EXACT_CASES))
def test_character_runs_equal_general_walk(llama_bpe, name):
    schema, doc = EXACT_CASES[name]
    _mask.TABLE_LOG = []
    try:
        ours = _masks_along(schema, llama_bpe, doc)
        used = [e for e in _mask.TABLE_LOG if isinstance(e[3], tuple) and e[3][0] == "chars"]
    finally:
        _mask.TABLE_LOG = None
    assert used, "no character run was used"
    _mask.use_character_runs(False)
    try:
        general = _masks_along(schema, llama_bpe, doc)
    finally:
        _mask.use_character_runs(True)
        SHARED_TABLES.clear()
    for i, (a, b) in enumerate(zip(ours, general)):
        assert np.array_equal(a, b), (i, doc[:i])


def test_string_rest_and_char_slice_partition(llama_bpe):
    """Every token is in exactly one of: the plain ones (decided by count and class), the
    walked rest, or those with a raw control before any quote or backslash (refused)."""
    t = cengine._trie.trie_of(llama_bpe)
    chars = t.plain_chars()
    rest = t.string_rest()
    walked = set(int(i) for i in rest.tok_ids[:rest.tok_off[rest.n_nodes]])
    for i, data in enumerate(llama_bpe.tokens):
        if not data or i in set(int(e) for e in llama_bpe.eos_ids):
            continue
        plain = chars[i] > 0
        if plain:
            assert i not in walked
            assert chars[i] == len(data.decode("utf-8", "ignore")) + \
                (1 if len(data.decode("utf-8", "ignore").encode()) < len(data) else 0)
        else:
            dead = False
            for b in data:
                if b < 0x20:
                    dead = True
                    break
                if b in (0x22, 0x5C):
                    break
            assert (i in walked) != dead, data
    bits = np.unpackbits(t.char_slice(3).view(np.uint8), bitorder="little")[:llama_bpe.size]
    assert np.array_equal(bits.astype(bool), (chars > 0) & (chars <= 3)
                          & ~np.isin(np.arange(llama_bpe.size), llama_bpe.eos_ids))


@pytest.mark.parametrize("length", [40, 5000])
def test_mid_character_frames_get_pair_tables(llama_bpe, length):
    """Part-way through a character's bytes the frame is still the character rule's: it gets
    a pair table with the count below (alone, every token that completes the character would
    exit and be walked with the stack at every mask)."""
    cengine.CACHE.clear()
    g = cengine.compile_json_schema({"type": "string", "maxLength": length})
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(b'"ab\xe2\x82')            # the first two bytes of a euro sign
    mask = np.zeros(cengine.mask_words(llama_bpe.size), np.int32)
    m.fill_mask(mask)
    tables = g.token_tables(llama_bpe)
    starts = set(int(x) for x in g.automaton.rule_start)
    mid = [k for k in tables.tables if isinstance(k, tuple) and k[-1] not in starts]
    assert mid, list(tables.tables)
    assert all(not isinstance(k, int) or k in starts or g.automaton.rule_names[
        g.automaton.pos_rule[k]] != "json-string-char" for k in tables.tables)


@pytest.mark.parametrize("length,written,want", [
    (5000, 250, None),          # near a level's end (256 characters): on through the levels
    (4100, 4095, 5),            # near the string's end: the count left
    (4100, 4000, 100),
])
def test_character_run_through_counter_levels(llama_bpe, length, written, want):
    """Above 4,096 the length is a counter on the stack: the run of a pair goes on through
    the level frames below it (RuleSignatures.character_run_frames)."""
    cengine.CACHE.clear()
    g = cengine.compile_json_schema({"type": "string", "maxLength": length})
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(b'"' + b"a" * written)
    tables = g.token_tables(llama_bpe)
    runs = [tables.character_run(tuple(reversed(stack))) for stack, _ in m.stacks()
            if len(stack) >= 3]
    if want is None:
        want = cengine._trie.trie_of(llama_bpe).longest_plain_chars()
    assert max(runs, default=-1) == want, runs


def test_warm_char_slices_equal_each_count(llama_bpe):
    """prepare() makes the default class's bitset of every count at once (warm_char_slices);
    each row is the plain tokens of 1 to n characters, eos out, as char_slice made them one
    by one; other classes are still made on demand."""
    t = cengine._trie.trie_of(llama_bpe)
    rows = t.warm_char_slices()
    chars = t.plain_chars()
    eos = np.isin(np.arange(llama_bpe.size), llama_bpe.eos_ids)
    assert rows.shape == (t.longest_plain_chars() + 1, t.n_words)
    assert not rows.flags.writeable
    for n in range(rows.shape[0]):
        bits = np.unpackbits(rows[n].view(np.uint8), bitorder="little")[:llama_bpe.size]
        assert np.array_equal(bits.astype(bool), (chars > 0) & (chars <= n) & ~eos), n
        assert t.char_slice(n) is not None and np.array_equal(t.char_slice(n), rows[n])
    assert np.array_equal(t.char_slice(10 ** 6), rows[-1])
    lower = int(sum(1 << (c - 64) for c in range(ord("a"), ord("z") + 1)))
    letters = np.unpackbits(t.char_slice(5, 0, lower, False).view(np.uint8),
                            bitorder="little")[:llama_bpe.size].astype(bool)
    assert letters.any() and not (letters & ~((chars > 0) & (chars <= 5))).any()
