"""TriggeredTags and AnyText (cengine/compose.py): free text in which a trigger can only be
written as the start of its tag, enforced inside the automaton; any text up to a tag's end.
Checked against a plain-Python oracle of the language on fixed and random texts, and token
masks against accepting each token's bytes one by one."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cengine
import material
from cengine import (AnyText, CompileError, JsonSchema, Regex, Tagged, TriggeredTags,
                     compile_structural)

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}},
        "required": ["city"], "additionalProperties": False}
CALL = Tagged("<call>", JsonSchema(CITY), "</call>")
CALLS = TriggeredTags(["<call>"], [CALL])


def accepts(part, text) -> bool:
    m = compile_structural(part).matcher()
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    return m.accept_bytes(data) and m.is_accepting()


def oracle_calls(text: str, *, at_least_one=False, stop_after_first=False) -> bool:
    """The language of CALLS with those flags, by hand: split at the trigger."""
    pieces = text.split("<call>")
    if len(pieces) == 1:
        return not at_least_one
    for k, rest in enumerate(pieces[1:], 1):
        body, sep, after = rest.partition("</call>")
        if not sep:
            return False
        try:
            doc = json.loads(body)
        except ValueError:
            return False
        # (a city of at most 5 characters cannot hold the trigger: splitting is safe)
        if not (isinstance(doc, dict) and set(doc) == {"city"} and isinstance(doc["city"], str)
                and len(doc["city"]) <= 5):
            return False
        if body.strip() != body:            # no whitespace around the document
            return False
        if stop_after_first and (after or k < len(pieces) - 1):
            return False
        pieces[k] = after
    return True


@pytest.mark.parametrize("text", [
    "", "plain text", "Sure. <call>{\"city\":\"Oslo\"}</call>", "<call>{\"city\":\"A\"}</call>",
    "a <call>{\"city\":\"A\"}</call> b <call>{\"city\":\"B\"}</call> c", "<cal", "<ca ll>",
    "<call>", "<call>{\"city\":\"Oslo\"}", "x<call>{\"town\":\"Oslo\"}</call>",
    "<<call>{\"city\":\"\"}</call>", "<call>{\"city\":\"toolongname\"}</call>",
    "héllo ☃ <call>{\"city\":\"Zürich\"}</call>",
])
@pytest.mark.parametrize("flags", [{}, {"at_least_one": True}, {"stop_after_first": True},
                                   {"at_least_one": True, "stop_after_first": True}])
def test_triggered_tags_language(text, flags):
    part = TriggeredTags(["<call>"], [CALL], **flags)
    assert accepts(part, text) == oracle_calls(text, **flags)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet="<cal>/ x\n", max_size=8),
                          st.sampled_from(['<call>{"city":"a"}</call>', "<call>", "</call>"])),
                max_size=6))
def test_triggered_tags_agree_with_the_oracle_on_random_texts(pieces):
    text = "".join(pieces)
    assert accepts(CALLS, text) == oracle_calls(text)


def test_free_text_must_be_utf8():
    assert accepts(CALLS, "naïve ☃ 𝄞")
    assert not accepts(CALLS, b"\xff")
    assert not accepts(CALLS, b"\xed\xa0\x80")         # a surrogate
    m = compile_structural(CALLS).matcher()
    assert m.accept_bytes(b"ab\xe2\x98") and not m.is_accepting()
    assert m.completion() == b"\x80"                    # the closer ends the character


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12) | st.text(max_size=6).map(lambda t: t.encode("utf-8", "replace")))
def test_any_text_is_exactly_valid_utf8(data):
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert accepts(cengine.AnyText(), data) is valid


def test_closer_finishes_an_open_trigger_and_its_tag():
    m = compile_structural(CALLS).matcher()
    assert m.accept_bytes(b"ok <cal")
    assert m.completion() == b""                        # free text may end here
    assert m.accept_bytes(b"l>")
    tail = m.completion()
    assert accepts(CALLS, "ok <call>" + tail.decode())


def test_several_triggers_and_tags_sharing_one():
    part = TriggeredTags(["<f=", "[["], [
        Tagged("<f=a>", Regex("[0-9]+"), "</f>"), Tagged("<f=b>", Regex("[a-z]+"), "</f>"),
        Tagged("[[", Regex("x"), "]]")])
    assert accepts(part, "1 <f=a>12</f> 2 <f=b>zz</f> [[x]] end")
    assert not accepts(part, "<f=c>1</f>") and not accepts(part, "<f=a>zz</f>")
    assert not accepts(part, "[[y]]") and not accepts(part, "[x [[")


def test_a_begin_that_starts_with_two_triggers_goes_to_the_shorter():
    part = TriggeredTags(["<f", "<fun"], [Tagged("<fun>", Regex("1"), "</>")])
    assert accepts(part, "a <fun>1</> b")
    assert not accepts(part, "a <fo")


def test_any_text_in_a_tag_runs_to_the_first_end():
    part = Tagged("<think>", AnyText(), "</think>")
    assert accepts(part, "<think>anything < / > at all</think>")
    assert accepts(part, "<think></think>")
    assert not accepts(part, "<think>a</think>b</think>")
    m = compile_structural(part).matcher()
    assert m.accept_bytes(b"<think>hm </thi") and m.completion() == b"nk>"
    assert accepts(AnyText(), "anything\n at all") and not accepts(AnyText(), b"\xc0")


@pytest.mark.parametrize("args, message", [
    (([], [CALL]), "at least one trigger"),
    ((["<call>", "<call>"], [CALL]), "twice"),
    ((["<x>"], [CALL]), "starts with none"),
    ((["<call>"], []), "at least one tag"),
    ((["<call>"], ["<call>"]), "each a Tagged"),
    ((["", "<call>"], [CALL]), "none of them empty"),
])
def test_triggered_tags_refusals(args, message):
    with pytest.raises(CompileError, match=message):
        TriggeredTags(*args)


def test_masks_agree_with_accepting_each_token():
    """The mask of free text mid-trigger and inside a tag, on a real vocabulary, equals
    accepting each token's bytes."""
    vocab = cengine.Vocabulary.from_gguf(material.vocab_gguf("gpt-2"))
    g = compile_structural(CALLS)
    words = np.zeros(cengine.mask_words(vocab.size), np.int32)
    for prefix in [b"", b"Hi <ca", b"x <call>", b'<call>{"city":"O', b'<call>{"city":"O"}</c']:
        m = g.matcher(vocab)
        assert m.accept_bytes(prefix)
        m.fill_mask(words)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab.size]
        for t in range(0, vocab.size, 7):
            data = vocab.tokens[t]
            want = t in vocab.eos_ids and m.is_accepting() or \
                bool(data) and t not in vocab.eos_ids and m.can_accept_bytes(data)
            assert bool(bits[t]) == want, (prefix, t, data)


def test_structure_is_cached_by_source():
    a = compile_structural(TriggeredTags(["<call>"], [CALL]))
    b = compile_structural(TriggeredTags(["<call>"], [Tagged("<call>", JsonSchema(CITY),
                                                             "</call>")]))
    assert a is b
