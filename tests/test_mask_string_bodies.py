"""String-body tables (_mask.string_body): a position inside a string of any length (an
unbounded string, an open object's key) takes every plain token, refuses those with a raw
control before any quote or backslash, and walks only TokenTrie.string_rest, not the ~13k
nodes left beside the longest slice. Checked three ways: the static analysis on positions
whose answer is known, the masks against the slice walk (use_string_bodies(False)) along
documents, and the masks against brute force (every token tried on the matcher), over
llama-bpe."""
import json
from pathlib import Path

import numpy as np
import pytest

import cengine
from cengine import _mask
from cengine._tables import SHARED_TABLES
from material import vocab_gguf
from test_mask_character_runs import _masks_along
from test_mask_exact import check_random_states


@pytest.fixture(scope="module")
def llama_bpe():
    v = cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))
    cengine.prepare(v)
    return v


OPEN_OBJECT = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"},
    "identity": {"type": "string", "maxLength": 4}}, "required": ["id"]}

# (grammar maker, document prefix, string_body at the top of every stack after it)
BODY_CASES = {
    "string_value": (lambda: cengine.compile_json_schema({"type": "string"}), b'"', True),
    "string_value_mid": (lambda: cengine.compile_json_schema({"type": "string"}),
                         b'"ab\\n c', True),
    "open_key": (lambda: cengine.compile_json_schema(OPEN_OBJECT, closed_objects=False),
                 b'{"', True),
    "open_key_in_name": (lambda: cengine.compile_json_schema(
        OPEN_OBJECT, closed_objects=False, property_order="any"),
                         b'{"iden', True),
    # a closed object's key takes no control either (its plain runs die, which the slice
    # search finds: string_body is only about controls and pops)
    "closed_key": (lambda: cengine.compile_json_schema(OPEN_OBJECT), b'{"', True),
    # a pattern is about the decoded string: the JSON text still holds no raw control
    "pattern_any": (lambda: cengine.compile_json_schema({"type": "string",
                                                          "pattern": "^[^,]*$"}), b'"', True),
    # the class takes the controls
    "gbnf_not_quote": (lambda: cengine.compile_gbnf('root ::= "\\"" [^"]* "\\""'), b'"', False),
    # a newline after a run of plain bytes
    "gbnf_newline_after_run": (lambda: cengine.compile_gbnf('root ::= "<" [a-z]* "\\n"'),
                               b'<', False),
    # the run may end the root's rule (what comes after is not known)
    "gbnf_run_ends_rule": (lambda: cengine.compile_gbnf('root ::= "<" [a-z]*'), b'<', False),
    # a called rule (recursive: not inlined) that returns on a plain byte (`)`), after which
    # the root may end
    "gbnf_callee_returns_plain": (lambda: cengine.compile_gbnf(
        'root ::= "(" [a-z] inner ")"\ninner ::= [a-z] inner | ""'), b'(', False),
    # the same callee closed by a quote: nothing past it is reached by body bytes
    "gbnf_callee_returns_quote": (lambda: cengine.compile_gbnf(
        'root ::= "(" [a-z] inner "\\"" "\\n"\ninner ::= [a-z] inner | ""'), b'(', True),
}


@pytest.mark.parametrize("name", sorted(BODY_CASES))
def test_string_body_positions(llama_bpe, name):
    make, prefix, want = BODY_CASES[name]
    cengine.CACHE.clear()
    g = make()
    m = g.matcher(llama_bpe)
    assert m.accept_bytes(prefix)
    tables = g.token_tables(llama_bpe)
    got = [tables.string_body(stack[0]) for stack, _ in m.stacks() if stack]
    assert got and all(x == want for x in got), got


def test_string_body_rejects_bad_position(llama_bpe):
    g = cengine.compile_json_schema({"type": "string"})
    with pytest.raises(IndexError):
        g.token_tables(llama_bpe).string_body(g.automaton.n_positions)


ANY_OF_OBJECTS = {"type": "array", "items": {"anyOf": [
    {"type": "object", "properties": {"id": {"type": "string"}, "kind": {"const": "a"}},
     "required": ["kind"]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "size": {"type": "number"}}},
]}}

# (grammar maker, document): documents through open keys (declared, extra, escaped,
# non-ASCII), unbounded strings and a GBNF string body
EXACT_CASES = {
    "open_object": (lambda: cengine.compile_json_schema(OPEN_OBJECT, closed_objects=False,
                                                        property_order="any"),
                    b'{"id": 3, "n\\u00e4me": "x", "identit\xc3\xa4t": [1, {"a": "\\""}], '
                    b'"name": "a \xe2\x82\xac long \\t text"}'),
    "any_of_open_objects": (lambda: cengine.compile_json_schema(
        ANY_OF_OBJECTS, closed_objects=False, property_order="any"),
        b'[{"id": "x1", "kind": "a"}, {"size": 2.5, "id": 7, "other": null}]'),
    "string": (lambda: cengine.compile_json_schema({"type": "string"}),
               b'"' + b"w\xc3\xb6rds \\\" and \\u00e9 " * 4 + b'"'),
    "gbnf_quoted": (lambda: cengine.compile_gbnf(
        'root ::= "say " str ";"\nstr ::= "\\"" ([^"\\\\\\x00-\\x1f] | "\\\\" ["nt])* "\\""'),
        b'say "hi \\"there\\" \xc3\xa9";'),
}
# where every plain run survives but a control is taken after one: no string-body table,
# the tokens with a newline stay in
CONTROL_CASES = {
    "gbnf_not_quote": (lambda: cengine.compile_gbnf('root ::= "\\"" [^"]* "\\""'),
                       b'"two\nlines \\ \xc3\xa9"'),
    "gbnf_newline_later": (lambda: cengine.compile_gbnf(
        'root ::= "<" ([^"\\\\\\x00-\\x1f] | "\\"" "\\n")* ">"'), b'<a b"\ncd>'),
}


@pytest.mark.parametrize("name", sorted(EXACT_CASES) + sorted(CONTROL_CASES))
def test_string_bodies_equal_slice_walk(llama_bpe, name):
    make, doc = EXACT_CASES[name] if name in EXACT_CASES else CONTROL_CASES[name]
    _mask.TABLE_LOG = []
    try:
        ours = _masks_along(make, llama_bpe, doc)
        used = [e for e in _mask.TABLE_LOG if e[3] == ("body",)]
    finally:
        _mask.TABLE_LOG = None
    assert bool(used) == (name in EXACT_CASES), used
    _mask.use_string_bodies(False)
    try:
        _mask.TABLE_LOG = []
        general = _masks_along(make, llama_bpe, doc)
        assert not [e for e in _mask.TABLE_LOG if e[3] == ("body",)]
    finally:
        _mask.TABLE_LOG = None
        _mask.use_string_bodies(True)
        SHARED_TABLES.clear()
    for i, (a, b) in enumerate(zip(ours, general)):
        assert np.array_equal(a, b), (i, doc[:i])


@pytest.mark.parametrize("name", sorted(EXACT_CASES) + sorted(CONTROL_CASES))
def test_string_bodies_masks_exact(llama_bpe, name):
    make, doc = EXACT_CASES[name] if name in EXACT_CASES else CONTROL_CASES[name]
    cengine.CACHE.clear()
    SHARED_TABLES.clear()
    g = make()
    pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
    n = len(pieces) + 1 + 6
    assert check_random_states(g, llama_bpe, n, seed=5, docs=[pieces]) == n


CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "maskbench-dev"


def _masks_along_pieces(schema, vocab, pieces):
    cengine.CACHE.clear()
    SHARED_TABLES.clear()
    g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None,
                                    property_order="any")
    m = g.matcher(vocab)
    out = []
    for piece in pieces + [None]:
        mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
        m.fill_mask(mask)
        out.append(mask)
        if piece is None or not m.accept_bytes(piece):
            break
    return out


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no ../shared/corpora/maskbench-dev")
def test_string_bodies_equal_slice_walk_on_corpus(llama_bpe):
    """Every 25th corpus schema, the start of its first valid instance in 3-byte pieces: the
    masks with string-body tables are the slice walk's (the whole corpus, 210,755 masks along
    tokens, compared alike when this was written)."""
    n_body = n_masks = 0
    for path in sorted(CORPUS.glob("*.json"))[::25]:
        entry = json.loads(path.read_text())
        valid = [t for t in entry.get("tests", []) if t["valid"]]
        if not valid:
            continue
        doc = json.dumps(valid[0]["data"], ensure_ascii=False).encode()[:240]
        pieces = [doc[i:i + 3] for i in range(0, len(doc), 3)]
        _mask.TABLE_LOG = []
        try:
            try:
                ours = _masks_along_pieces(entry["schema"], llama_bpe, pieces)
            except cengine.CompileError:
                continue
            n_body += sum(1 for e in _mask.TABLE_LOG if e[3] == ("body",))
        finally:
            _mask.TABLE_LOG = None
        _mask.use_string_bodies(False)
        try:
            general = _masks_along_pieces(entry["schema"], llama_bpe, pieces)
        finally:
            _mask.use_string_bodies(True)
            SHARED_TABLES.clear()
        assert len(ours) == len(general), path.stem
        for i, (a, b) in enumerate(zip(ours, general)):
            assert np.array_equal(a, b), (path.stem, doc[:3 * i])
        n_masks += len(ours)
    assert n_body > 50 and n_masks > 1000, (n_body, n_masks)
