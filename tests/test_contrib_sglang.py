"""cengine.contrib.sglang against SGLang's own classes, driven as its scheduler drives a
grammar backend: the registry and `--grammar-backend` choice, get_cached_or_future_value on
the backend's executor (a cached grammar is copied), allocate / fill_vocab_mask_batched /
move / apply over a batch, accept_token of what was sampled, rollback, copy, jump-forward and
termination. The tokenizer is GPT-2's, converted by transformers from llama.cpp's vocab file;
the "model" is random logits, so every accepted document came from the masks alone.

Needs sglang (with torch), which the test extra does not install: skipped without it.
scripts/check_engine_adapters.sh builds the environment these ran in (docs/integrations.md).
"""
from __future__ import annotations

import json
import re

import pytest

import cengine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
base = pytest.importorskip("sglang.srt.constrained.base_grammar_backend")
pytest.importorskip("gguf")

from cengine.contrib import sglang as adapter  # noqa: E402

from adapter_cases import GBNF, REGEX, SCHEMA, gbnf_ok, regex_ok  # noqa: E402
from adapter_cases import schema_ok as _valid_schema  # noqa: E402

CALL_TAG = {"type": "tag", "begin": "<tool_call>", "end": "</tool_call>",
            "content": {"type": "json_schema", "json_schema": SCHEMA}}
TAG = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "tag", "begin": "<think>", "content": {"type": "regex", "pattern": "[a-z]{1,8}"},
     "end": "</think>"},
    {"type": "tags_with_separator", "tags": [CALL_TAG], "separator": "\n",
     "at_least_one": True}]}}
TRIGGERED = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [CALL_TAG],
    "at_least_one": True, "stop_after_first": True}}
LEGACY = {"type": "structural_tag", "triggers": ["<f="],
          "structures": [{"begin": "<f=get>", "schema": SCHEMA, "end": "</f>"}]}


def _tag_doc(text):
    m = re.fullmatch(r"<think>(.*?)</think>((?:<tool_call>.*?</tool_call>\n?)+)", text, re.S)
    assert m is not None and "</think>" not in m.group(1), text
    bodies = re.findall(r"<tool_call>(.*?)</tool_call>", m.group(2), re.S)
    return bool(bodies) and all(_valid_schema(b) for b in bodies)


def _legacy_doc(text):
    for free in re.split(r"<f=get>.*?</f>", text, flags=re.S):
        assert "<f=" not in free
    for body in re.findall(r"<f=get>(.*?)</f>", text, flags=re.S):
        _valid_schema(body)
    return True


CASES = [      # (SGLang key, check of the finished text)
    (("json", json.dumps(SCHEMA)), _valid_schema),
    (("regex", REGEX), regex_ok),
    (("ebnf", GBNF), gbnf_ok),
    (("structural_tag", json.dumps(TAG)), _tag_doc),
]


@pytest.fixture(scope="module")
def tokenizer(gpt2_hf_tokenizer):
    return gpt2_hf_tokenizer


@pytest.fixture(scope="module")
def backend(tokenizer):
    adapter.register()
    init = base.GRAMMAR_BACKEND_REGISTRY[adapter.NAME]
    return init(None, tokenizer, len(tokenizer), {tokenizer.eos_token_id})


def _grammar(backend, key):
    """What GrammarManager does: a future on a miss (its result cached as a copy), a copy on
    a hit."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        backend.set_cache(key, value.copy())
    return value


def _decode(backend, tokenizer, keys, *, seed, steps=300):
    """Decode a batch to the end of each row's document (or `steps`), as SamplingBatchInfo and
    the scheduler do: allocate, fill the live rows, move, apply, sample, accept."""
    grammars = [_grammar(backend, k) for k in keys]
    out = [[] for _ in keys]
    gen = torch.Generator().manual_seed(seed)
    eos = tokenizer.eos_token_id
    for _ in range(steps):
        live = [b for b, g in enumerate(grammars) if not g.is_terminated()]
        if not live:
            break
        mask = grammars[0].allocate_vocab_mask(vocab_size=len(tokenizer), batch_size=len(keys),
                                               device="cpu")
        entries = [base.GrammarRow(row=b, grammar=grammars[b]) for b in live]
        grammars[0].fill_vocab_mask_batched(entries, mask)
        mask = grammars[0].move_vocab_mask(mask, "cpu")
        logits = torch.randn(len(keys), len(tokenizer), generator=gen) * 3
        logits[:, eos] += 2        # so documents end before the step budget
        base.GrammarMask(grammars[0], mask).apply(logits)
        picks = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0].tolist()
        for b in live:
            grammars[b].accept_token(picks[b])
            out[b].append(picks[b])
    return grammars, out


def _text(tokenizer, backend, ids, kind):
    vocab = backend.special_vocab if kind == "structural_tag" else backend.vocab
    return cengine.plain_text(b"".join(vocab.tokens[t] for t in ids)).decode("utf-8")


def test_register_adds_the_choice_and_the_backend():
    adapter.register()
    adapter.register()          # idempotent
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    assert GRAMMAR_BACKEND_CHOICES.count("llamay") == 1
    assert base.GRAMMAR_BACKEND_REGISTRY["llamay"] is adapter._init_backend


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_of_every_kind_decodes_to_valid_documents(backend, tokenizer, seed):
    keys = [k for k, _ in CASES]
    grammars, out = _decode(backend, tokenizer, keys, seed=seed)
    for (key, check), g, ids in zip(CASES, grammars, out):
        assert g.is_terminated(), key
        assert ids[-1] == tokenizer.eos_token_id
        assert check(_text(tokenizer, backend, ids[:-1], key[0])), key


@pytest.mark.parametrize("spec, start", [(TRIGGERED, "Let me check. <tool_call>"),
                                         (LEGACY, "Sure <f=")])
def test_triggered_tags_hold_once_the_trigger_is_written(backend, tokenizer, spec, start):
    """Free text is the model's own (random logits would wander for ever): write free text
    and the trigger, then the masks must lead to a valid call. After it TRIGGERED stops; the
    legacy spelling goes back to free text, where no trigger may stand without its tag."""
    key = ("structural_tag", json.dumps(spec))
    for seed in range(3):
        g = _grammar(backend, key)
        ids = tokenizer.encode(start)
        for t in ids:
            g.accept_token(t)
        backend.cache[key] = g          # _decode takes a copy of it, as after a cache hit
        [g], [out] = _decode(backend, tokenizer, [key], seed=seed)
        backend.cache.pop(key)
        done = g.is_terminated()
        text = _text(tokenizer, backend, ids + out[:-1 if done else None], "structural_tag")
        if spec is TRIGGERED:
            assert done and _tag_doc_free(text)
        else:
            assert "</f>" in text and _legacy_doc(text if done else text[:text.rindex("</f>") + 4])


def _tag_doc_free(text):
    m = re.fullmatch(r"(.*?)<tool_call>(.*)</tool_call>", text, re.S)
    return m is not None and "<tool_call>" not in m.group(1) and _valid_schema(m.group(2))


def test_triggered_tags_mask_refuses_the_end_before_a_tag(backend, tokenizer):
    g = _grammar(backend, ("structural_tag", json.dumps(TRIGGERED)))
    for t in tokenizer.encode("Hello"):
        g.accept_token(t)
    mask = g.allocate_vocab_mask(len(tokenizer), 1, "cpu")
    g.fill_vocab_mask(mask, 0)
    bit = lambda t: (int(mask[0, t // 32]) >> (t % 32)) & 1      # noqa: E731
    assert not bit(tokenizer.eos_token_id)                     # at_least_one
    assert bit(tokenizer.encode(" world")[0])                  # free text goes on


def test_cache_hit_is_a_fresh_copy(backend, tokenizer):
    key = ("json", json.dumps(SCHEMA))
    a = _grammar(backend, key)
    a.accept_token(tokenizer.encode("{")[0])
    b, hit = backend.get_cached_or_future_value(key, False)
    assert hit and b is not a and b.matcher.completion() != a.matcher.completion()


def test_rollback_and_copy(backend, tokenizer):
    g = _grammar(backend, ("json", json.dumps(SCHEMA)))
    ids = tokenizer.encode('{"city":"Oslo","days":')
    for t in ids:
        g.accept_token(t)
    c = g.copy()
    g.rollback(3)
    assert c.matcher.completion() != g.matcher.completion()
    for t in ids[-3:]:
        g.accept_token(t)
    assert c.matcher.completion() == g.matcher.completion()


def test_jump_forward_returns_the_forced_tokens_without_advancing(backend, tokenizer):
    key = ("regex", "The answer is: (yes|no)")
    g = _grammar(backend, key)
    for t in tokenizer.encode("The"):
        g.accept_token(t)
    before = g.matcher.completion()
    ids, text = g.try_jump_forward(tokenizer)
    # the last forced token is left to the model, which may merge it with what follows
    assert " answer is: ".startswith(text) and text and len(ids) >= 2
    assert g.matcher.completion() == before                     # not advanced
    assert g.jump_forward_str_state((ids, text)) == (text, -1)
    g.jump_and_retokenize([], ids, -1)                          # the scheduler appends them
    assert g.matcher.completion() == before[len(text):]
    retok = tokenizer.encode(text)
    g.jump_and_retokenize(ids, retok, -1)                       # re-tokenized
    assert g.matcher.completion() == before[len(text):]
    g.jump_and_retokenize(retok, retok[:1], -1)                 # shorter: rolled back
    assert g.matcher.completion() == before[len(tokenizer.decode(retok[:1])):]


def test_nothing_forced_is_no_jump(backend, tokenizer):
    g = _grammar(backend, ("regex", REGEX))
    assert g.try_jump_forward(tokenizer) is None


@pytest.mark.parametrize("key, word", [
    (("json", json.dumps({"type": "object", "properties": {"a": {"type": "string",
                                                                "pattern": "(?=a)"}}})),
     "pattern"),
    (("json", "{not json"), "JSON"),
    (("ebnf", "root ::= undefined-rule"), "undefined"),
    (("structural_tag", json.dumps({"type": "structural_tag", "format": {
        "type": "json_schema", "json_schema": SCHEMA, "style": "qwen_xml"}})), "style"),
])
def test_refusals_are_invalid_grammar_objects(backend, key, word):
    g = _grammar(backend, key)
    assert isinstance(g, base.InvalidGrammarObject)
    assert word in g.error_message and g.error_message.startswith("llamay: ")


def test_mask_buffer_and_reset(backend, tokenizer):
    from sglang.srt.runtime_context import get_resources
    buf = backend.initialize_vocab_mask_buffer("llamay-test", len(tokenizer), 4, "cpu")
    assert buf.shape == (4, (len(tokenizer) + 31) // 32) and buf.dtype == torch.int32
    assert get_resources().buffers["llamay-test"] is buf
    g = _grammar(backend, ("regex", REGEX))
    g.fill_vocab_mask(buf, 2)
    assert (buf[2] != -1).any() and (buf[0] == -1).all()
    adapter.LlamayGrammar.reset_vocab_mask(buf)
    assert (buf == -1).all()


def test_launch_arguments_accept_the_backend():
    """What `python -m sglang.launch_server --grammar-backend llamay` parses, once the plugin
    entry point has run register()."""
    from sglang.srt.server_args import prepare_server_args
    adapter.register()
    args = prepare_server_args(["--model-path", "/nonexistent", "--grammar-backend", "llamay"])
    assert args.grammar_backend == "llamay"
