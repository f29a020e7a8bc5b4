"""fill_mask is exact: on random reachable states it equals the brute-force answer (every
token's bytes tried on the matcher), over real vocabularies (llama-bpe 128k, qwen2 152k, an
SPM vocabulary) and over a small synthetic one where every corner is cheap to reach."""
import random

import numpy as np
import pytest

import cengine
from cengine import Grammar
from grammars_ir import json_like
from material import vocab_gguf

TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"const": "get_weather"},
        "arguments": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "exact": {"type": "boolean"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["city", "days"],
        },
    },
    "required": ["name", "arguments"],
}

JSON_GBNF_NAME = "json"


def bits_of(mask, n):
    return np.unpackbits(mask.view(np.uint8), bitorder="little")[:n].astype(bool)


def brute_force(m, vocab):
    ok = np.zeros(vocab.size, bool)
    accepting = m.is_accepting()
    for i, data in enumerate(vocab.tokens):
        if i in vocab.eos_ids:
            ok[i] = accepting
        elif data:
            ok[i] = m.can_accept_bytes(data)
    return ok


def check_random_states(grammar, vocab, n_states, seed, docs=()):
    rng = random.Random(seed)
    words = cengine.mask_words(vocab.size)
    checked = 0
    walks = [d for d in docs] + [None] * (n_states // 2)     # scripted documents first
    for walk in walks:
        m = grammar.matcher(vocab)
        script = list(walk) if walk is not None else None
        steps = len(script) if script is not None else rng.randint(0, 25)
        for k in range(steps + 1):
            mask = np.zeros(words, np.int32)
            m.fill_mask(mask)
            got = bits_of(mask, vocab.size)
            want = brute_force(m, vocab)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, [(int(i), vocab.tokens[i], bool(got[i])) for i in bad[:8]]
            checked += 1
            if checked >= n_states:
                return checked
            if script:
                data = script.pop(0)
                if not m.accept_bytes(data):
                    break
                continue
            allowed = np.flatnonzero(got)
            if allowed.size == 0 or m.is_accepting() and rng.random() < 0.3:
                break
            tok = int(allowed[rng.randrange(allowed.size)])
            assert m.accept_token(tok)
            if m.is_terminated():
                break
    return checked


class SyntheticVocab:
    """Every byte, plus random strings over the grammar's alphabet."""

    def __init__(self, seed=0):
        import hashlib
        rng = random.Random(seed)
        alpha = b'{}[]",: \ntrue nul-0123abx\xc3\xa9\\'
        toks = [bytes([b]) for b in range(256)]
        toks += [bytes(rng.choice(alpha) for _ in range(rng.randint(2, 7))) for _ in range(4000)]
        toks += [b"", b'"a"', b'": [', b"  ", b"true]}", b'{"a":', b"[[[[", b"]]]]"]
        self.tokens = toks + [b""]
        self.eos_ids = frozenset([len(toks)])
        self.size = len(self.tokens)
        self.fingerprint = hashlib.sha256(b"\x00".join(self.tokens)).hexdigest()


@pytest.mark.parametrize("depth,budget", [(3, 5), (2, None), (64, 0)])
def test_mask_exact_synthetic(depth, budget):
    g = Grammar.from_ir(json_like(max_depth=depth, whitespace_budget=budget))
    assert check_random_states(g, SyntheticVocab(), 250, seed=depth) > 50


@pytest.fixture(scope="module", params=["llama-bpe", "qwen2", "llama-spm"])
def real_vocab(request):
    return cengine.Vocabulary.from_gguf(vocab_gguf(request.param))


def test_mask_exact_real_vocab_tool_schema(real_vocab):
    g = cengine.compile_json_schema(TOOL_SCHEMA)
    doc = (b'{"name": "get_weather", "arguments": {"city": "Z\xc3\xbcrich", "days": 3, '
           b'"tags": ["a b", "\\u00e9"]}}')
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    assert check_random_states(g, real_vocab, 24, seed=1, docs=[pieces]) >= 12


def test_mask_exact_real_vocab_gbnf(real_vocab):
    from material import gbnf_grammars
    g = cengine.compile_gbnf(gbnf_grammars()[JSON_GBNF_NAME])
    assert check_random_states(g, real_vocab, 12, seed=2) >= 6


def test_mask_eos_only_when_accepting():
    v = SyntheticVocab()
    g = Grammar.from_ir(json_like())
    m = g.matcher(v)
    words = cengine.mask_words(v.size)
    eos = next(iter(v.eos_ids))
    mask = np.zeros(words, np.int32)
    m.fill_mask(mask)
    assert not bits_of(mask, v.size)[eos]
    assert not m.accept_token(eos)
    assert m.accept_bytes(b"true")
    m.fill_mask(mask)
    assert bits_of(mask, v.size)[eos]
    assert m.accept_token(eos) and m.is_terminated()
    m.fill_mask(mask)
    assert not bits_of(mask, v.size).any()


def test_apply_mask_sets_disallowed_to_minus_inf():
    logits = np.arange(70, dtype=np.float32)
    mask = np.zeros(3, np.int32)
    mask[0] = 0b101
    mask[2] = 1 << 5                     # token 69
    cengine.apply_mask(logits, mask)
    finite = np.flatnonzero(np.isfinite(logits))
    assert finite.tolist() == [0, 2, 69]
    assert logits[2] == 2.0
    with pytest.raises(ValueError):
        cengine.apply_mask(np.zeros(100, np.float32), np.zeros(2, np.int32))


def test_fill_mask_rejects_bad_buffers():
    v = SyntheticVocab()
    m = Grammar.from_ir(json_like()).matcher(v)
    with pytest.raises(ValueError):
        m.fill_mask(np.zeros(2, np.int32))
    with pytest.raises(TypeError):
        m.fill_mask(np.zeros(cengine.mask_words(v.size), np.int64))


# Shapes that exercise the slice search (runs of plain characters proven acceptable) and the
# first-visit direct walks: open objects whose extra keys must avoid the declared names (a key
# trie), strings bounded above and below (counters), enums, escapes in names.
SLICE_SCHEMAS = {
    "open_object_keys": ({"type": "object", "properties": {"name": {"type": "string"},
                                                          "na\"me": {"type": "integer"},
                                                          "n\u00e4me": {"type": "boolean"}}},
                         False,
                         b'{"name": "ab", "nam": "x y", "namex": 1, "n\xc3\xa4me": true, '
                         b'"z": [1]}'),
    "bounded_strings": ({"type": "object", "properties": {
        "short": {"type": "string", "maxLength": 5},
        "mid": {"type": "string", "minLength": 3, "maxLength": 40},
        "long": {"type": "string", "minLength": 2}}, "required": ["short", "mid", "long"]},
        True,
        b'{"short": "h\xc3\xa9llo", "mid": "a string of some thirty characters", "long": "x\\"y"}'),
    # past 32 the character is a call: pair tables, shared by positions far from the end
    "long_bounded_string": ({"type": "object", "properties": {
        "text": {"type": "string", "minLength": 40, "maxLength": 150},
        "n": {"type": "integer"}}, "required": ["text"]},
        True,
        b'{"text": "' + b"A long summary with \\u00e9scapes, \xc3\xa9 and \xe2\x82\xac "
        + b"signs and plenty of words, running past the point where its table is shared "
        + b'with the others.", "n": 3}'),
    # `.` refuses U+2028/U+2029 (E2 80 A8/A9): the slice class leaves them out, and the em
    # dash (E2 80 94) and incomplete characters (4-byte pieces) are walked around them
    "pattern_dot": ({"type": "object", "properties": {"f": {"type": "string",
                                                            "pattern": "^.*\\.md$"}}},
                    True, b'{"f": "notes \xe2\x80\x94 caf\xc3\xa9 x.md"}'),
    # many declared names in an open object: the slice search stops at the generic key
    # string (it takes every plain run alone) instead of hitting its cap
    "open_object_many_keys": ({"type": "object", "properties": {
        k: {"type": "string"} for k in ("campaign", "company", "datetime", "description",
                                        "lead", "munchkinId", "name", "program", "social",
                                        "step", "unsubscribe_link", "view_as_webpage_link")}},
        False, b'{"campaign": "x", "camp": 1, "company": "y", "stepx": null}'),
    # class slices: restricted ASCII classes (with the other plain characters for a negated
    # class), pruned subtrees; a first byte whose class differs from the rest's
    "pattern_classes": ({"type": "object", "properties": {
        "a": {"type": "string", "pattern": "^[^,]+$"},
        "b": {"type": "string", "pattern": "^[a-z\\d\\./-]+$"},
        "c": {"type": "string", "pattern": "^[\\S]+$"},
        "d": {"type": "string", "pattern": "^[A-Z][a-z]{0,5}$"}}},
        True, b'{"a": "Jo\xc3\xa9 D", "b": "x.y-2", "c": "n\xc3\xa9-x", "d": "Abc"}'),
    "enum_and_array": ({"type": "array", "items": {"enum": ["red", "green", "blue green"]},
                        "maxItems": 4}, True, b'["red", "blue green", "green"]'),
}


@pytest.fixture(scope="module")
def llama_bpe():
    return cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))


@pytest.mark.parametrize("name", sorted(SLICE_SCHEMAS))
def test_mask_exact_slices_and_first_visits(llama_bpe, name):
    schema, closed, doc = SLICE_SCHEMAS[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed)
    pieces = [doc[i:i + 4] for i in range(0, len(doc), 4)]
    # the scripted walk twice: first visits walk the trie directly, second ones use tables
    n = 2 * (len(pieces) + 1) + 10
    assert check_random_states(g, llama_bpe, n, seed=3, docs=[pieces, list(pieces)]) == n


# Whitespace runs: between JSON tokens whitespace loops back to the same state, and the mask
# walks the rests of whitespace-led tokens once per run length (TokenTrie.ws_split); budgets
# that run out part-way through a run, and grammars whose whitespace costs nothing.
WS_DOC = b'{ "a" :  1 ,\n  "b":\t[ 1 ,  2\r\n ] , "c" : "x  y" }  '


@pytest.mark.parametrize("budget", [3, 9, None])
def test_mask_exact_whitespace_runs(llama_bpe, budget):
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(
        {"type": "object", "properties": {"a": {"type": "integer"},
                                          "b": {"type": "array", "items": {"type": "integer"}},
                                          "c": {"type": "string"}}},
        whitespace_budget=budget)
    pieces = [WS_DOC[i:i + 2] for i in range(0, len(WS_DOC), 2)]
    n = 2 * (len(pieces) + 1) + 10
    # the document spends more whitespace than the small budgets allow: the scripted walk stops
    # where the budget runs out, random continuations fill in the rest
    assert check_random_states(g, llama_bpe, n, seed=4, docs=[pieces, list(pieces)]) == n


def test_mask_exact_whitespace_runs_free_whitespace(llama_bpe):
    cengine.CACHE.clear()
    g = cengine.compile_gbnf('root ::= "[" ws ( "1" ws ( "," ws "1" ws )* )? "]" ws\n'
                             'ws ::= [ \\t\\n]*')
    doc = b"[ 1 ,\t1\n,  1 ]  \n"
    pieces = [doc[i:i + 2] for i in range(0, len(doc), 2)]
    n = 2 * (len(pieces) + 1) + 6
    assert check_random_states(g, llama_bpe, n, seed=5, docs=[pieces, list(pieces)]) == n


# property_order="any": one state per subset of the properties written, members as rules called
# from every state (several stacks at a key's start), extra keys anywhere; the scripted walks
# write the keys out of declared order
ANY_ORDER_SCHEMAS = {
    "tool_arguments": (TOOL_SCHEMA["properties"]["arguments"], True,
                       b'{"tags": ["x"], "days": 3, "note": null, "city": "Oslo", "exact": true}'),
    "open_with_patterns": ({"type": "object", "properties": {
        "name": {"type": "string"}, "nam": {"type": "integer"}, "size": {"enum": [1, 2]}},
        "patternProperties": {"^x-": {"type": "boolean"}},
        "additionalProperties": {"type": "array"}, "required": ["size"], "maxProperties": 4},
        False, b'{"x-a": true, "namex": [1], "size": 2, "nam": 5}'),
}


@pytest.mark.parametrize("name", sorted(ANY_ORDER_SCHEMAS))
def test_mask_exact_any_property_order(llama_bpe, name):
    schema, closed, doc = ANY_ORDER_SCHEMAS[name]
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=closed, property_order="any")
    m = g.matcher()
    assert m.accept_bytes(doc) and m.is_accepting()      # the script is a document
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    n = 2 * (len(pieces) + 1) + 12
    assert check_random_states(g, llama_bpe, n, seed=6, docs=[pieces, list(pieces)]) == n
