"""cengine.Vocabulary.from_hf_tokenizer: equal, token for token, to from_gguf on the same model.

The Hugging Face tokenizer of each vocab file is built by transformers itself from the GGUF
(`PreTrainedTokenizerFast.from_pretrained(folder, gguf_file=...)`, offline: transformers
converts a GGUF's tokenizer metadata). `AutoTokenizer` would also read a model config from
the file, which transformers only does with torch; the tokenizer class does not need one.
transformers' GGUF *reader* module imports torch at its top for the dtype names of tensor
loading, which metadata reading never uses; torch is not installed here (not a dependency of
this project), so that one module is imported under a placeholder `torch` holding only names,
removed from sys.modules right after. The conversion itself is transformers' own code.

transformers' converter is lossy in three ways, and only there may the two vocabularies
differ; each such id is checked against the HF tokenizer's own decode instead (the bytes
from_hf_tokenizer gives are what that tokenizer prints):
- "respelled": in a byte-level vocabulary, a GGUF token whose text has characters outside the
  GPT-2 byte alphabet (llama.cpp prints `[UNK_BYTE_…]` or, for control tokens, nothing) is
  re-spelled into the alphabet and becomes an ordinary token printing that text;
- "unknown": GGUF tokens typed UNKNOWN besides the tokenizer's unk (`[PAD<i>]` fillers,
  phi-3) become ordinary tokens printing their text;
- "lost": a token whose text equals another's after re-spelling keeps no id (gpt-neox: its
  runs of spaces "  " collide with "ĠĠ").
"""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import types
from collections import Counter

import pytest

from cengine.gguf_meta import read_metadata
from cengine.vocab import Vocabulary

import material

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")


def test_import_cengine_loads_no_hf_or_torch():
    code = ("import sys, cengine; v = cengine.Vocabulary([b'a'], [0]); "
            "print(sorted(m for m in ('transformers', 'tokenizers', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- against the GGUF ----------------------------------------------------------------

class _PlaceholderTorch(types.ModuleType):
    """Names only: enough for module-level annotations and dtype tables."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {})
        setattr(self, name, value)
        return value


def _gguf_reader_importable():
    if importlib.util.find_spec("torch") is not None \
            or "transformers.integrations.gguf.reader" in sys.modules:
        return
    sys.modules["torch"] = _PlaceholderTorch("torch")
    try:
        import transformers.integrations.gguf.reader  # noqa: F401
    finally:
        del sys.modules["torch"]


def hf_tokenizer_from_gguf(path):
    _gguf_reader_importable()
    return transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                                gguf_file=path.name)


# GPT-2's byte alphabet: the characters byte-level BPE spells bytes with
_ALPHABET = ({chr(c) for c in range(0x21, 0x7F)} | {chr(c) for c in range(0xA1, 0xAD)}
             | {chr(c) for c in range(0xAE, 0x100)} | {chr(c) for c in range(0x100, 0x144)})
_BYTE_TO_CHAR = importlib.import_module("transformers.convert_slow_tokenizer").bytes_to_unicode()
_TYPE_NORMAL, _TYPE_UNKNOWN, _TYPE_CONTROL, _TYPE_USER = 1, 2, 3, 4

# vocab files of tests/material.py that transformers converts (all but bert-bge)
HF_VOCABS = ["llama-bpe", "qwen2", "qwen35", "gpt-2", "llama-spm", "phi-3", "deepseek-coder",
             "deepseek-llm", "command-r", "gemma-4", "falcon", "starcoder", "gpt-neox", "mpt",
             "refact", "aquila", "baichuan", "nomic-bert-moe"]


def _respell(text):
    """transformers' converter: a byte-level token outside the alphabet, spelled in it."""
    if set(text) <= _ALPHABET:
        return text
    return "".join(_BYTE_TO_CHAR[b] for b in text.encode("utf-8"))


def _artifact(i, text, ttype, byte_level, hf_ids, dup_texts):
    """Why transformers' conversion changed token i, or None (see the module docstring)."""
    if i not in hf_ids:
        return "lost" if (_respell(text) if byte_level else text) in dup_texts else None
    if byte_level and ttype in (_TYPE_NORMAL, _TYPE_CONTROL, _TYPE_USER) \
            and not set(text) <= _ALPHABET:
        return "respelled"
    if ttype == _TYPE_UNKNOWN:
        return "unknown"
    return None


@pytest.mark.parametrize("name", HF_VOCABS)
def test_from_hf_tokenizer_equals_from_gguf(name):
    path = material.vocab_gguf(name)
    tok = hf_tokenizer_from_gguf(path)
    g = Vocabulary.from_gguf(path)
    # the model's logits: the GGUF's token count (transformers may add tokens past it)
    h = Vocabulary.from_hf_tokenizer(tok, vocab_size=g.size)
    assert h.size == g.size
    if len(tok) == g.size:
        assert Vocabulary.from_hf_tokenizer(tok).size == g.size

    meta = read_metadata(path, ["tokenizer.ggml.model", "tokenizer.ggml.tokens",
                                "tokenizer.ggml.token_type"])
    texts = [t.decode("utf-8", "replace") for t in meta["tokenizer.ggml.tokens"]]
    ttypes = [int(t) for t in meta["tokenizer.ggml.token_type"]]
    byte_level = meta["tokenizer.ggml.model"] == b"gpt2"
    hf_ids = set(tok.get_vocab().values())
    spelled = [_respell(t) if byte_level else t for t in texts]
    dup_texts = {t for t, c in Counter(spelled).items() if c > 1}
    kinds = {}
    for i in range(g.size):
        if g.tokens[i] != h.tokens[i]:
            kind = _artifact(i, texts[i], ttypes[i], byte_level, hf_ids, dup_texts)
            assert kind is not None, (i, texts[i], ttypes[i], g.tokens[i], h.tokens[i])
            kinds[i] = kind
            # what the HF tokenizer itself prints for this id
            printed = tok.decode([i], skip_special_tokens=False,
                                 clean_up_tokenization_spaces=False).encode("utf-8")
            assert h.tokens[i] == (printed if kind != "lost" else b""), (i, printed, h.tokens[i])
    # end of generation: the same ids, but for converter-changed ones (deepseek's eos is
    # re-spelled, and transformers re-adds it at a new id past the model's size)
    assert (g.eos_ids ^ h.eos_ids) <= set(kinds), (sorted(g.eos_ids), sorted(h.eos_ids))
    if g.bos_id not in kinds:
        assert h.bos_id == g.bos_id
    assert not h.eos_ids & h.withheld_ids
    # the converter's changes stay rare: a few hundredths of the vocabulary at most
    assert len(kinds) <= g.size // 100, Counter(kinds.values())


def test_bert_gguf_is_not_converted_by_transformers():
    # the one vocab file left out above, and why
    with pytest.raises(ValueError, match="bert"):
        hf_tokenizer_from_gguf(material.vocab_gguf("bert-bge"))


# --- hand-made tokenizers ----------------------------------------------------------------

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402


def _byte_level_bpe():
    vocab = {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "Ċ": 4, "ðŁ": 5, "é": 6, "ab": 7, "ĠĠ": 8}
    tok = Tokenizer(models.BPE(vocab, [("a", "b"), ("Ġ", "a"), ("Ġ", "Ġ")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|im_end|>", special=True)])          # id 9
    tok.add_tokens([AddedToken("<tool_call>", special=False)])                # id 10
    return tok


BYTE_LEVEL_EXPECTED = [b"a", b"b", b" ", b" a", b"\n", b"\xf0\x9f", b"\xe9", b"ab", b"  ",
                       b"", b"<tool_call>"]


def _spm_bpe():
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xE2>": 4, "▁": 5, "▁a": 6,
             "a": 7, "b": 8, "▁▁": 9, "<0x41>": 10}
    tok = Tokenizer(models.BPE(vocab, [("▁", "a"), ("▁", "▁")], unk_token="<unk>",
                               byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    return tok


SPM_EXPECTED = [b"", b"", b"", b"\n", b"\xe2", b" ", b" a", b"a", b"b", b"  ", b"A"]


def _wordpiece():
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, "##lo": 4, "world": 5, ",": 6}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(cleanup=False)   # no text clean-up
    tok.add_special_tokens([AddedToken(t, special=True) for t in ("[UNK]", "[CLS]", "[SEP]")])
    return tok


WORDPIECE_EXPECTED = [b"", b"", b"", b" hello", b"lo", b" world", b" ,"]

CASES = [
    # (builder, expected bytes per id, eos ids, special_texts, an id to wrap as eos_token)
    (_byte_level_bpe, BYTE_LEVEL_EXPECTED, {9}, {9: b"<|im_end|>"}, 7),
    (_spm_bpe, SPM_EXPECTED, {2}, {0: b"<unk>", 1: b"<s>", 2: b"</s>"}, 8),
    (_wordpiece, WORDPIECE_EXPECTED, set(), {0: b"[UNK]", 1: b"[CLS]", 2: b"[SEP]"}, 5),
]
CASE_IDS = ["byte-level-bpe", "spm-byte-fallback", "wordpiece"]


@pytest.mark.parametrize("build,expected,eos,special,wrap_eos", CASES, ids=CASE_IDS)
def test_hand_made_tokenizers(build, expected, eos, special, wrap_eos):
    raw = build()
    v = Vocabulary.from_hf_tokenizer(raw)
    assert v.tokens == expected
    assert v.eos_ids == eos          # a raw Tokenizer names no eos: these are found by text
    assert v.special_texts == special
    # wrapped by transformers with one of its tokens as eos_token: that token becomes a
    # special token (prints nothing) and ends generation; nothing else changes
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=raw,
                                                eos_token=raw.id_to_token(wrap_eos))
    assert fast.eos_token_id == wrap_eos
    w = Vocabulary.from_hf_tokenizer(fast)
    assert w.tokens == [b"" if i == wrap_eos else t for i, t in enumerate(expected)]
    assert w.eos_ids == eos | {wrap_eos}
    assert w.eos_id == wrap_eos


@pytest.mark.parametrize("build,expected", [c[:2] for c in CASES], ids=CASE_IDS)
def test_the_hf_tokenizers_own_decode_agrees(build, expected):
    # every token of the table whose bytes are UTF-8, decoded by the tokenizer itself after
    # an anchor token (SentencePiece's decoder strips the first token's leading space)
    raw = build()
    anchor = 3 if build is _wordpiece else raw.token_to_id("b")
    anchor_text = raw.decode([anchor], skip_special_tokens=True)
    checked = 0
    for i, want in enumerate(expected):
        try:
            text = want.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if want:
            assert raw.decode([anchor, i], skip_special_tokens=True) == anchor_text + text, i
            checked += 1
    assert checked >= 4


def test_vocab_size_pads_and_cuts():
    raw = _byte_level_bpe()
    v = Vocabulary.from_hf_tokenizer(raw, vocab_size=16, eos_ids=[3])
    assert v.size == 16 and v.tokens[:11] == BYTE_LEVEL_EXPECTED
    assert v.tokens[11:] == [b""] * 5 and not v.withheld_ids & set(range(11, 16))
    assert v.eos_ids == {9, 3}
    cut = Vocabulary.from_hf_tokenizer(raw, vocab_size=9)
    assert cut.tokens == BYTE_LEVEL_EXPECTED[:9] and cut.eos_ids == frozenset()
    with pytest.raises(ValueError, match="outside"):
        Vocabulary.from_hf_tokenizer(raw, eos_ids=[11])


def test_tokenizers_it_cannot_read_are_refused():
    word_level = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    with pytest.raises(ValueError, match="cannot tell"):
        Vocabulary.from_hf_tokenizer(word_level)
    bare_bpe = Tokenizer(models.BPE({"a": 0}, []))          # no decoder: bytes unknown
    with pytest.raises(ValueError, match="cannot tell"):
        Vocabulary.from_hf_tokenizer(bare_bpe)
    with pytest.raises(TypeError):
        Vocabulary.from_hf_tokenizer(object())
