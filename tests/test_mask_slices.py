"""The slice search (cengine/_slices.pyx): which positions provably take every run of plain
string characters up to K bytes, so the plain tokens of at most K bytes are allowed without a
walk. Case tables for the UTF-8 class of plain characters, the token class, and the depths
the search proves at real positions: where a fast path applies and where it must not."""
import numpy as np
import pytest

import cengine
from cengine._slices import u8_next
from cengine._trie import plain_prefix
from material import vocab_gguf
from test_mask_exact import check_random_states


# (state, byte) -> next state; -1 refuses. States: 0 between characters, 1-3 continuation
# bytes left, 4-7 restricted second byte (E0, ED, F0, F4), 8 after E2, 9 after E2 80.
U8_CASES = [
    (0, 0x61, 0), (0, 0x20, 0), (0, 0x7F, 0), (0, 0x1F, -1), (0, 0x22, -1), (0, 0x5C, -1),
    (0, 0x80, -1), (0, 0xC1, -1), (0, 0xC2, 1), (0, 0xE0, 4), (0, 0xE1, 2), (0, 0xE2, 8),
    (0, 0xE3, 2), (0, 0xED, 5), (0, 0xF0, 6), (0, 0xF4, 7), (0, 0xF5, -1),
    (1, 0x80, 0), (1, 0xBF, 0), (1, 0xC0, -1), (1, 0x7F, -1),
    (4, 0x9F, -1), (4, 0xA0, 1), (5, 0xA0, -1), (5, 0x9F, 1), (6, 0x8F, -1), (7, 0x90, -1),
    # U+2028 and U+2029 (E2 80 A8, E2 80 A9) are not plain: a regex `.` refuses them
    (8, 0x80, 9), (8, 0x81, 1), (8, 0xBF, 1), (8, 0x7F, -1), (8, 0xC0, -1),
    (9, 0xA7, 0), (9, 0xA8, -1), (9, 0xA9, -1), (9, 0xAA, 0), (9, 0x80, 0), (9, 0xC0, -1),
]


@pytest.mark.parametrize("state,byte,want", U8_CASES)
def test_slices_utf8_class(state, byte, want):
    assert u8_next(state, byte) == want


PLAIN_CASES = [
    (b"hello", True), (b" world", True), (b"\xc3\xa9t\xc3\xa9", True),
    (b"ab\xe2\x80", True),             # an incomplete last character: a prefix of plain runs
    (b"\xe4\xb8", True), (b"\xf0\x9f\x98", True),
    (b"\xe2\x80\x94", True),           # an em dash shares U+2028's first two bytes
    (b"a\xe2\x80\xa8", False), (b"\xe2\x80\xa9b", False),   # U+2028, U+2029
    (b'a"', False), (b"a\\", False), (b"a\n", False), (b"\t", False),
    (b"\x80abc", False),               # starts inside a character
    (b"\xe0\x80", False), (b"\xed\xa0", False),   # overlong, surrogate: no valid completion
    (b"\xc3\xa9\xc3", True), (b"\xc3\xc3", False),
]


@pytest.mark.parametrize("data,want", PLAIN_CASES)
def test_slices_token_class(data, want):
    assert plain_prefix(data) is want


@pytest.fixture(scope="module")
def llama_bpe():
    return cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))


MANY_KEYS = ["campaign", "company", "datetime", "description", "forward_to_friend_link",
             "lead", "munchkinId", "name", "program", "social", "sp_send_alert_info", "step",
             "unsubscribe_link", "view_as_webpage_link"]

# (schema, closed objects, document prefix, proven depth at the stack's first position)
DEPTH_CASES = {
    "string": ({"type": "string"}, True, b'"', 32),
    # `.` refuses U+2028/U+2029, which are out of the plain class: the slice applies
    "pattern_dot": ({"type": "string", "pattern": "^.*\\.md$"}, True, b'"', 32),
    "pattern_dot_after_dot": ({"type": "string", "pattern": "^.*\\.md$"}, True, b'"a.', 32),
    # must not apply: a plain character refused, or a bound on the run
    "pattern_not_x": ({"type": "string", "pattern": "^[^x]*$"}, True, b'"', 0),
    "pattern_bounded": ({"type": "string", "pattern": "^.{0,3}$"}, True, b'"', 3),
    "pattern_no_2029": ({"type": "string", "pattern": "^[^\u2029]*$"}, True, b'"', 32),
    # an open object's key: the declared names' trie beside a call of the generic string;
    # the called string takes every run alone, so the search stops there instead of
    # hitting its cap (it proved only 8 bytes with these 14 names)
    "open_object_many_keys": ({"type": "object",
                               "properties": {k: {"type": "string"} for k in MANY_KEYS}},
                              False, b'{"', 32),
    # must not apply: the key's callee is a bounded string, which dies; its character keeps
    # its frame (ir.Rule.frame), so the object's position alone proves nothing, and the
    # (count, character) pair's table decides the run (test_mask_character_runs.py)
    "bounded_names": ({"type": "object", "propertyNames": {"maxLength": 4},
                       "additionalProperties": {"type": "integer"}}, False, b'{"', 0),
}


@pytest.mark.parametrize("name", sorted(DEPTH_CASES))
def test_slices_proven_depth(llama_bpe, name):
    schema, closed, prefix, want = DEPTH_CASES[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed)
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(prefix)
    tables = g.token_tables(llama_bpe)
    depths = [tables.slice_depth(stack[0]) for stack, _ in m.stacks()]
    assert max(depths) == want, depths


@pytest.mark.parametrize("name", sorted(DEPTH_CASES))
def test_slices_proven_depth_is_sound(llama_bpe, name):
    """Every plain run up to the proven depth is taken: sampled runs from the slice's token
    class (vocabulary tokens of plain characters, their prefixes too) are accepted."""
    schema, closed, prefix, _ = DEPTH_CASES[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed)
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(prefix)
    tables = g.token_tables(llama_bpe)
    d = max(tables.slice_depth(s[0]) for s, _ in m.stacks())
    plain = tables.trie.plain_lengths()
    rng = np.random.default_rng(0)
    ids = np.flatnonzero((plain > 0) & (plain <= d))
    for i in rng.choice(ids, size=min(400, ids.size), replace=False) if ids.size else []:
        assert m.can_accept_bytes(llama_bpe.tokens[i]), llama_bpe.tokens[i]


PLAIN_ASCII = sum(1 << b for b in range(0x20, 0x7F) if b not in (0x22, 0x5C))


def ascii_class(chars):
    bits = sum(1 << ord(c) for c in chars)
    return bits & 0xFFFFFFFFFFFFFFFF, bits >> 64


def ascii_minus(chars):
    bits = PLAIN_ASCII & ~sum(1 << ord(c) for c in chars)
    return bits & 0xFFFFFFFFFFFFFFFF, bits >> 64


LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789./-"

# class slices: (pattern, prefix inside the string, class, mixed, proven depth)
CLASS_CASES = {
    "negated_mixed": ("^[^,]+$", "", ascii_minus(","), True, 32),
    "negated_ascii": ("^[^,]+$", "ab", ascii_minus(","), False, 32),
    "ascii_class": ("^[a-z\\d\\./-]+$", "x", ascii_class(LOWER_DIGITS), False, 32),
    # must not apply (mixed): the class takes no non-ASCII character
    "ascii_class_mixed": ("^[a-z\\d\\./-]+$", "x", ascii_class(LOWER_DIGITS), True, 0),
    # \S refuses U+00A0 (C2 A0): mixed dies after C2, the ASCII class holds
    "non_space_mixed": ("^[\\S]+$", "", ascii_minus(" "), True, 1),
    "non_space_ascii": ("^[\\S]+$", "", ascii_minus(" "), False, 32),
    # must not apply: the first byte's class is not the next one's
    "capital_then_lower": ("^[A-Z][a-z]+$", "", ascii_class("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                           False, 1),
    "bounded": ("^[a-z]{0,3}$", "", ascii_class("abcdefghijklmnopqrstuvwxyz"), False, 3),
    # a class wider than what the position takes proves nothing
    "wider_class": ("^[a-z]+$", "a", ascii_class("abc,"), False, 0),
}


@pytest.mark.parametrize("name", sorted(CLASS_CASES))
def test_slices_class_depth(llama_bpe, name):
    pattern, prefix, (lo, hi), mixed, want = CLASS_CASES[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema({"type": "string", "pattern": pattern})
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(b'"' + prefix.encode())
    tables = g.token_tables(llama_bpe)
    (stack, _), = m.stacks()
    assert tables.class_depth(stack[0], lo, hi, mixed) == want


@pytest.mark.parametrize("mixed", [False, True])
def test_slices_class_slice_tokens(llama_bpe, mixed):
    """class_slice holds exactly the tokens of at most k bytes whose ASCII bytes are in the
    class and whose others are plain characters (mixed) or absent."""
    from cengine._trie import trie_of
    trie = trie_of(llama_bpe)
    lo, hi = ascii_minus(",")
    bits = trie.class_slice(lo, hi, 5, mixed)
    got = np.unpackbits(bits.view(np.uint8), bitorder="little")[:llama_bpe.size].astype(bool)
    want = np.zeros(llama_bpe.size, bool)
    for i, data in enumerate(llama_bpe.tokens):
        # the class: plain ASCII without the comma (DEL is plain, and not in this class)
        if not data or len(data) > 5 or i in llama_bpe.eos_ids or b"," in data \
                or b"\x7f" in data:
            continue
        want[i] = plain_prefix(data) if mixed else all(0x20 <= b < 0x7F and b not in b'"\\'
                                                      for b in data)
    assert np.array_equal(got, want)


# A search that closes (no new configuration, nothing left out for a bounded reason) records
# its lone-frame configurations as taking runs of any length; later searches from the next
# positions of the key stop there. Warm or cold, the depths are the same.
MEMO_CASES = [
    ({"type": "object", "properties": {k: {"type": "string"} for k in MANY_KEYS}}, False,
     [b'{"', b'{"camp', b'{"campaign', b'{"campaignx', b'{"sp_send_', b'{"zz']),
    # must not be recorded as unbounded: names of at most 4 characters
    ({"type": "object", "propertyNames": {"maxLength": 4},
      "additionalProperties": {"type": "integer"}}, False, [b'{"', b'{"a', b'{"abc']),
    ({"type": "object", "properties": {"ab": {"type": "string", "maxLength": 3},
                                       "cd": {"type": "string"}}}, False,
     [b'{"', b'{"ab": "', b'{"ab": "x', b'{"ab": "xy", "cd": "', b'{"ab": "xy", "zz": "']),
]


def _depths(g, vocab, prefixes, tables):
    out = []
    for prefix in prefixes:
        m = g.matcher(vocab)
        assert m.accept_bytes(prefix)
        out.append(max(tables.slice_depth(s[0]) for s, _ in m.stacks()))
    return out


@pytest.mark.parametrize("case", range(len(MEMO_CASES)))
def test_slices_memo_warm_equals_cold(llama_bpe, case):
    from cengine._mask import TokenTables
    schema, closed, prefixes = MEMO_CASES[case]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed)
    warm = _depths(g, llama_bpe, prefixes, TokenTables(g.automaton, llama_bpe))
    cold = [_depths(g, llama_bpe, [p], TokenTables(g.automaton, llama_bpe))[0]
            for p in prefixes]
    assert warm == cold


# A DFA state inside a string whose first bytes include characters that change state (the
# syntax of `format: regex`: brackets, groups, escapes): neither the plain slice nor the first
# bytes' class can be proved, so the state's table is built from the class of bytes on which
# it steps into a state that loops on them (_mask.loop_class), the slice search proving it.
LOOP_CLASS_DOC = b'{"re": "^(ab|c)[x-z]{2,3}\\\\d+ and more literal text$", "n": 1}'


def test_slices_loop_class_exact(llama_bpe):
    from cengine import _mask
    schema = {"type": "object", "properties": {"re": {"type": "string", "format": "regex"},
                                               "n": {"type": "integer"}}}
    cengine.CACHE.clear()
    _mask.TABLE_LOG = []
    try:
        g = cengine.compile_json_schema(schema, closed_objects=False)
        pieces = [LOOP_CLASS_DOC[i:i + 4] for i in range(0, len(LOOP_CLASS_DOC), 4)]
        n = len(pieces) + 1 + 4
        assert check_random_states(g, llama_bpe, n, seed=7, docs=[pieces]) == n
        log = list(_mask.TABLE_LOG)
    finally:
        _mask.TABLE_LOG = None
    # some state took a class slice (a negative _last_slice: its depth) with the loop class
    assert any(isinstance(e[3], int) and e[3] < 0 for e in log), [e[3] for e in log]


# Counted runs (an email's local part of 1-64 characters, a host name's labels of 1-63, the
# same under a length counter): every count is a new position, so no state loops and the
# first bytes include the separators ('.', '@') that a run stops on at once. Such a state
# takes the class of bytes on which it steps to a position that takes them again
# (_mask.chain_class); without it every count's first visit walked the whole trie (~3.5 ms).
CHAIN_CLASS_CASES = [
    ("email", {"type": "string", "format": "email"}, b'"user.name@mail.example.com"'),
    ("email-counted", {"type": "string", "format": "email", "minLength": 3},
     b'"user.name@mail.example.com"'),
    ("hostname", {"type": "string", "format": "hostname"}, b'"mail.example-host.com"'),
]


@pytest.mark.parametrize("name,prop,value", CHAIN_CLASS_CASES,
                         ids=[c[0] for c in CHAIN_CLASS_CASES])
def test_slices_chain_class_exact(llama_bpe, name, prop, value):
    from cengine import _mask
    schema = {"type": "object", "properties": {"e": prop}}
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=False)
    doc = b'{"e": ' + value + b'}'
    m = g.matcher(llama_bpe)
    mask = np.zeros(cengine.mask_words(llama_bpe.size), np.int32)
    in_string = []
    for i in range(len(doc)):
        _mask.TABLE_LOG = []
        try:
            m.fill_mask(mask)
            log = list(_mask.TABLE_LOG)
        finally:
            _mask.TABLE_LOG = None
        if len(b'{"e": "') <= i < len(doc) - 2:
            in_string += [(doc[:i], e[3]) for e in log]
        assert m.accept_bytes(doc[i:i + 1])
    # every table built inside the address took a class slice of some depth
    assert in_string and all(isinstance(s, int) and s <= -16 for _, s in in_string), in_string
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    n = len(pieces) + 1 + 4
    assert check_random_states(g, llama_bpe, n, seed=11, docs=[pieces]) == n
