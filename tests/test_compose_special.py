"""Special tokens as grammar terminals (cengine.Special, Vocabulary.with_special_tokens): a
framing token is allowed as exactly that token, never as its text spelled with ordinary
tokens; where the vocabulary lacks it, a composer writes Text instead."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cengine
from cengine.special import has_marks

TEXT_TOKENS = [b"<", b"tool", b"_call", b">", b"{", b"}", b"a", b"b", b"\xfe", b"x\xff"]


def _vocab():
    # ids 0..9 ordinary, 10 <tool_call> (a special token), 11 the end of generation
    tokens = TEXT_TOKENS + [b"<tool_call>", b""]
    v = cengine.Vocabulary(tokens, eos_ids=[11], special_ids={10: "<tool_call>"})
    return v.with_special_tokens()


def _allowed(matcher, size):
    mask = np.zeros(cengine.mask_words(size), np.int32)
    matcher.fill_mask(mask)
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:size]
    return {int(i) for i in np.flatnonzero(bits)}


def test_the_special_token_alone_spells_a_special_part():
    v = _vocab()
    g = cengine.compile_structural(cengine.Concat(cengine.Special("<tool_call>"),
                                                  cengine.Regex("[ab]+")))
    m = g.matcher(v)
    assert _allowed(m, v.size) == {10}          # not "<" (id 0): the text is not the token
    assert m.accept_token(10)
    assert _allowed(m, v.size) == {6, 7}
    assert m.completion() == b"a"


def test_text_part_is_spelled_by_ordinary_tokens_only():
    v = _vocab()
    m = cengine.compile_structural(cengine.Text("<tool_call>")).matcher(v)
    assert _allowed(m, v.size) == {0}
    assert not m.accept_token(10)


def test_mark_bytes_leave_ordinary_tokens():
    v = _vocab()
    assert v.tokens[8] == b"" and v.tokens[9] == b""       # held 0xFE / 0xFF
    assert v.tokens[10] == cengine.special_bytes("<tool_call>")
    assert v.tokens[:8] == TEXT_TOKENS[:8]


def test_the_closer_writes_the_special_token_marked_and_plain_text_reads_it():
    v = _vocab()
    g = cengine.compile_structural(cengine.Concat(cengine.Regex("a"),
                                                  cengine.Special("<tool_call>"), "}"))
    m = g.matcher(v)
    assert m.accept_token(6)
    done = m.completion()
    assert has_marks(done) and cengine.plain_text(done) == b"<tool_call>}"


@given(st.text(min_size=1, max_size=20))
def test_plain_text_undoes_special_bytes(text):
    assert cengine.plain_text(cengine.special_bytes(text)) == text.encode("utf-8")
    assert cengine.plain_text(text.encode("utf-8")) == text.encode("utf-8")


def test_a_trigger_of_special_tokens_and_text():
    region = cengine.TriggeredRegion(
        cengine.Concat(cengine.Special("<|channel|>"), "commentary to=functions."),
        cengine.Regex("[a-z]+"), cengine.Special("<|call|>"))
    trigger, g = cengine.compile_triggered(region)
    assert trigger == cengine.special_bytes("<|channel|>") + b"commentary to=functions."
    m = g.matcher(cengine.Vocabulary([b"a", cengine.special_bytes("<|call|>")]))
    assert m.accept_token(0) and m.accept_token(1) and m.is_accepting()
    # a text-only trigger stays a string
    trigger, _ = cengine.compile_triggered(
        cengine.TriggeredRegion(cengine.Concat("<a", "b>"), cengine.Regex("x"), ""))
    assert trigger == "<ab>"


@pytest.mark.parametrize("bad", [cengine.Regex("x+"), cengine.JsonSchema({"type": "integer"})])
def test_a_trigger_must_be_fixed_text(bad):
    with pytest.raises(cengine.CompileError):
        cengine.TriggeredRegion(bad, cengine.Regex("x"), "")


def test_which_tokens_of_real_vocabularies_are_special(qwen2_vocab_path):
    from families import FAMILIES
    v = cengine.Vocabulary.from_gguf(FAMILIES["qwen3"].model_path())
    texts = v.special_token_texts()
    assert {"<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_start|>"} <= texts
    assert "<|im_end|>" not in texts          # an end of generation stays an eos id
    # single characters some vocabularies add as user-defined tokens are text, not framing
    import material
    ds = cengine.Vocabulary.from_gguf(material.vocab_gguf("deepseek-llm"))
    assert "ø" not in ds.special_token_texts()
    marked = v.with_special_tokens()
    i = next(i for i, t in v.special_ids.items() if t == "<tool_call>")
    assert v.tokens[i] == b"<tool_call>" and marked.tokens[i] == cengine.special_bytes(
        "<tool_call>")
    assert marked.fingerprint != v.fingerprint
