"""The decode loop on the tiny fixture model: masks, EOS, fast-forward, budgets, stops, lazy
grammars, cancellation, logprobs. The model is random, so every check is about the loop's
guarantees, never about what a sensible model would say."""
from __future__ import annotations

import json
import threading

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from server.runtime.model import Model
from server.runtime.types import FinishEvent, SamplingParams, TokenEvent

N_CTX = 512

LONG_KEYS_SCHEMA = {
    "type": "object",
    "properties": {
        "the_first_rather_long_property_name": {"type": "boolean"},
        "another_quite_long_fixed_property_key": {"enum": ["alpha", "beta"]},
    },
    "required": ["the_first_rather_long_property_name", "another_quite_long_fixed_property_key"],
}
GBNF = 'root ::= "answer: " ("yes" | "no") " (" [0-9] [0-9]? "%)"'
REGEX = "[a-z]{2,6}(, [a-z]{2,6}){0,3}\\."


@pytest.fixture(scope="module")
def model(fixture_model_path):
    m = Model(str(fixture_model_path), n_ctx=N_CTX)
    yield m
    m.close()


@pytest.fixture(scope="module")
def prompt(model):
    return model.render_chat([{"role": "user", "content": "Answer in the requested format."}])


def run(model, prompt, **kw):
    grammar = kw.pop("grammar", None)
    lazy = kw.pop("lazy_grammar", None)
    cancel = kw.pop("cancel", None)
    events = list(model.generate(prompt, grammar=grammar, lazy_grammar=lazy, cancel=cancel,
                                 params=SamplingParams(**kw)))
    fin = events[-1]
    assert isinstance(fin, FinishEvent)
    toks = events[:-1]
    assert all(isinstance(e, TokenEvent) for e in toks)
    return b"".join(e.text for e in toks), fin, toks


def accepts(grammar, data: bytes) -> bool:
    m = grammar.matcher()
    return m.accept_bytes(data) and m.is_accepting()


GRAMMARS = {
    "regex": lambda: cengine.compile_regex(REGEX),
    "gbnf": lambda: cengine.compile_gbnf(GBNF),
    "schema": lambda: cengine.compile_json_schema(LONG_KEYS_SCHEMA),
}


def test_greedy_loop_matches_a_hand_rolled_argmax_chain(model, prompt):
    out, fin, toks = run(model, prompt, max_tokens=8, temperature=0.0)
    # the same chain computed directly on the runtime, from an empty cache
    rt = model.runtime
    rt.truncate(0)
    ids = model.tokenize(prompt)
    chain = []
    logits = rt.eval(ids)
    for _ in range(8):
        t = int(np.argmax(logits))
        if t in model.stop_ids:
            break
        chain.append(t)
        logits = rt.eval([t])
    assert [e.token_id for e in toks] == chain
    assert fin.reason == ("length" if len(chain) == 8 else "stop")
    assert fin.prompt_tokens == len(ids) and fin.completion_tokens == len(chain)
    # a second identical run reuses the cached prompt and gives the same text
    again, _, _ = run(model, prompt, max_tokens=8, temperature=0.0)
    assert again == out


def test_unconstrained_budget_ends_with_length_and_no_closer(model, prompt):
    out, fin, toks = run(model, prompt, max_tokens=5, temperature=1.0, seed=3)
    assert (fin.reason, fin.closer, fin.completion_tokens, len(toks)) == ("length", b"", 5, 5)


@pytest.mark.parametrize("kind", sorted(GRAMMARS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constrained_output_is_always_in_the_language(model, prompt, kind, seed):
    g = GRAMMARS[kind]()
    out, fin, toks = run(model, prompt, grammar=g, max_tokens=40, temperature=1.0, seed=seed)
    assert accepts(g, out), out
    assert fin.reason in ("stop", "length")
    if fin.reason == "stop":
        assert fin.closer == b""
    else:
        assert toks[-1].forced and toks[-1].token_id == -1 and toks[-1].text == fin.closer
    if kind == "schema":
        jsonschema.validate(json.loads(out), LONG_KEYS_SCHEMA)


@pytest.mark.parametrize("budget", [0, 1, 2, 4, 7])
def test_budget_inside_the_document_appends_the_closer(model, prompt, budget):
    g = GRAMMARS["gbnf"]()
    out, fin, toks = run(model, prompt, grammar=g, max_tokens=budget, temperature=1.0, seed=budget)
    assert accepts(g, out)
    assert fin.completion_tokens <= budget
    if fin.reason == "length":
        assert fin.completion_tokens == budget
        assert out.endswith(fin.closer)
        # the closer is bytes, not tokens: usage counts only what went through the model
        assert fin.completion_tokens == sum(1 for e in toks if e.token_id >= 0)


def test_fast_forward_appends_forced_tokens_without_passes(model, prompt):
    g = GRAMMARS["schema"]()
    results = {}
    try:
        for ff in (True, False):
            model.fast_forward = ff
            results[ff] = run(model, prompt, grammar=g, max_tokens=60, temperature=0.0)
    finally:
        model.fast_forward = True
    for out, fin, toks in results.values():
        jsonschema.validate(json.loads(out), LONG_KEYS_SCHEMA)
    out, fin, toks = results[True]
    assert fin.fast_forward_tokens >= 8          # the long keys went in without sampling
    assert fin.fast_forward_tokens == sum(1 for e in toks if e.forced and e.token_id >= 0)
    assert fin.forward_passes <= fin.completion_tokens - fin.fast_forward_tokens + 1
    out0, fin0, toks0 = results[False]
    assert fin0.fast_forward_tokens == 0 and not any(e.forced and e.token_id >= 0 for e in toks0)
    assert fin0.forward_passes >= fin0.completion_tokens
    assert fin.forward_passes < fin0.forward_passes


def test_a_fully_forced_document_needs_no_forward_pass(model, prompt):
    g = cengine.compile_regex('\\{"status": "ok"\\}')
    out, fin, toks = run(model, prompt, grammar=g, max_tokens=50, temperature=1.0, seed=0)
    assert out == b'{"status": "ok"}'
    assert fin.reason == "stop" and fin.forward_passes == 0
    assert fin.fast_forward_tokens == fin.completion_tokens == len(toks)
    assert all(e.forced for e in toks)


def test_forced_tokens_spell_exactly_the_forced_bytes(model):
    g = cengine.compile_regex("fixed prefix: (a|b)")
    m = g.matcher(model.vocab)
    ids = model._fast_forward(m, limit=100)
    spelled = b"".join(model.vocab.tokens[t] for t in ids)
    assert ids and b"fixed prefix: ".startswith(spelled)
    assert len(spelled) < len(b"fixed prefix: ")    # the last token is left to the sampler
    assert model._fast_forward(g.matcher(model.vocab), limit=1).__len__() == 1


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.integers(0, 0xFD), min_size=1, max_size=40).map(bytes))
def test_any_bytes_can_be_spelled_exactly(model, data):
    # byte-level BPE has a token for every byte, so spelling never falls short; 0xFE and 0xFF
    # are the special-token marks of the matcher's vocabulary (cengine/special.py), which no
    # ordinary token spells: no UTF-8 text holds them
    ids, covered = model.tokens_for_bytes(data)
    assert covered == len(data)
    assert b"".join(model.vocab.tokens[t] for t in ids) == data
    assert not set(ids) & model.stop_ids


def test_stop_sequence_across_tokens_cuts_the_text(model, prompt):
    full, _, toks = run(model, prompt, max_tokens=12, temperature=0.0)
    texts = [e.text for e in toks]
    # a stop string made of the end of token 3 and the start of token 4
    stop_b = texts[3][-2:] + texts[4][:2]
    stop = stop_b.decode("utf-8")
    out, fin, _ = run(model, prompt, max_tokens=12, temperature=0.0, stop=["zzzz-never", stop])
    assert fin.reason == "stop_sequence" and fin.stop_sequence == stop
    assert out == full[:full.index(stop_b)]


def test_a_single_stop_string_and_none_are_accepted(model, prompt):
    full, _, toks = run(model, prompt, max_tokens=6, temperature=0.0)
    stop = toks[2].text.decode("utf-8")
    out, fin, _ = run(model, prompt, max_tokens=6, temperature=0.0, stop=stop)
    assert fin.reason == "stop_sequence" and out == full[:full.index(toks[2].text)]
    out, fin, _ = run(model, prompt, max_tokens=6, temperature=0.0, stop=None)
    assert out == full


def test_stop_sequences_do_not_cut_a_constrained_document(model, prompt):
    g = GRAMMARS["gbnf"]()
    out, fin, _ = run(model, prompt, grammar=g, max_tokens=30, temperature=0.0, stop=["answer"])
    assert out.startswith(b"answer: ") and accepts(g, out)
    assert fin.reason != "stop_sequence"


@pytest.mark.parametrize("cut", ["whole_token", "inside_token"])
def test_lazy_grammar_constrains_what_follows_the_trigger(model, prompt, cut):
    free, _, toks = run(model, prompt, max_tokens=6, temperature=0.0)
    texts = [e.text for e in toks]
    before = b"".join(texts[:2])
    if cut == "whole_token":
        trigger_b = texts[2]
    else:
        k = next(i for i in range(2, 6) if len(texts[i]) >= 3)
        before = b"".join(texts[:k])
        trigger_b = texts[k][:2]
    trigger = trigger_b.decode("utf-8")
    g = cengine.compile_regex("=[0-9]{3}")
    out, fin, _ = run(model, prompt, lazy_grammar=(trigger, g), max_tokens=30, temperature=0.0)
    head = before + trigger_b
    assert out.startswith(head)
    assert free.startswith(head)
    assert accepts(g, out[len(head):]), out
    assert fin.reason in ("stop", "length")


def test_cancel_stops_generation(model, prompt):
    ev = threading.Event()
    ev.set()
    out, fin, toks = run(model, prompt, max_tokens=20, temperature=0.0, cancel=ev)
    assert (fin.reason, toks) == ("cancelled", [])
    ev2 = threading.Event()
    seen = 0
    gen = model.generate(prompt, params=SamplingParams(max_tokens=50, temperature=0.0), cancel=ev2)
    for e in gen:
        if isinstance(e, TokenEvent):
            seen += 1
            if seen == 3:
                ev2.set()
        else:
            assert e.reason == "cancelled" and e.completion_tokens == 3


def test_logprobs_under_a_grammar(model, prompt):
    g = GRAMMARS["regex"]()
    out, fin, toks = run(model, prompt, grammar=g, max_tokens=10, temperature=0.0, logprobs=4)
    sampled = [e for e in toks if not e.forced]
    assert sampled
    for e in sampled:
        assert e.logprob <= 0.0
        lps = [v for _, v in e.top_logprobs]
        assert lps == sorted(lps, reverse=True) and len(lps) <= 4
        assert e.top_logprobs[0] == (e.text, e.logprob)      # greedy takes the top one
    first = sampled[0]
    # the alternatives are all legal under the grammar: lowercase letters only at the start
    assert all(b and b[:1].isalpha() and b[:1].islower() for b, _ in first.top_logprobs)
    plain = [e for e in run(model, prompt, max_tokens=3, temperature=0.0)[2]]
    assert all(e.logprob is None and e.top_logprobs is None for e in plain)


def test_context_end_closes_the_document(model):
    g = GRAMMARS["regex"]()
    filler = model.tokenize(" word" * 600, add_bos=False)[:N_CTX - 3]
    out, fin, _ = run(model, filler, grammar=g, max_tokens=None, temperature=1.0, seed=1)
    assert fin.reason == "length" and accepts(g, out)
    assert fin.prompt_tokens + fin.completion_tokens <= N_CTX


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_tokens=-1), "max_tokens"),
    (dict(temperature=-0.5), "temperature"),
    (dict(logprobs=-2), "logprobs"),
])
def test_bad_parameters_raise_before_any_event(model, prompt, kwargs, message):
    with pytest.raises(ValueError, match=message):
        model.generate(prompt, params=SamplingParams(**kwargs))


def test_prompt_longer_than_the_context_is_refused(model):
    ids = model.tokenize(" word" * 600, add_bos=False)
    with pytest.raises(ValueError, match="context"):
        model.generate(ids, params=SamplingParams())


def test_grammar_and_lazy_grammar_are_exclusive(model, prompt):
    g = GRAMMARS["regex"]()
    with pytest.raises(ValueError):
        model.generate(prompt, grammar=g, lazy_grammar=("x", g), params=SamplingParams())


def test_model_facts_and_chat_template(model):
    assert model.name.startswith("tiny-llama")
    assert model.vocab.size == model.runtime.n_vocab
    assert model.chat_template and "tools" in model.chat_template
    text = model.render_chat([{"role": "user", "content": "hi"}],
                             tools=[{"type": "function",
                                     "function": {"name": "f", "parameters": {}}}])
    assert '"name": "f"' in text and text.endswith("<|im_start|>assistant\n")
    assert model.detokenize(model.tokenize("hello world", add_bos=False)) == b"hello world"


@pytest.mark.parametrize("data", [bytes.fromhex("f4908080"),
                                  b"ok " + bytes.fromhex("f4908080") + b" x",
                                  b"\xfd\xf8", bytes.fromhex("eda080")])
def test_bytes_llama_cpp_would_abort_on_are_spelled_by_the_byte_path(model, data):
    # llama.cpp's tokenizer aborts the process on a 4-byte form above U+10FFFF: tokens_for_bytes
    # never hands it invalid UTF-8 (this test used to kill the test run, found by hypothesis)
    ids, covered = model.tokens_for_bytes(data)
    assert covered == len(data)
    assert b"".join(model.vocab.tokens[t] for t in ids) == data
    with pytest.raises(ValueError):
        model.runtime.tokenize(data, add_special=False, parse_special=False)
