"""Decision points found and probed in the decode loop, on the tiny fixture model.

The model is random: every check is about where decisions are found, what they report and
that the numbers are the model's, never about what a sensible model would choose.
* pointers: each schema's decisions are at the expected pointers (one per array item), with
  the legal alternatives, and `chosen` is the value the output holds there;
* numbers: the posterior sums to 1 and is the softmax of the logprobs, probed_mass is the sum
  of their exponentials; each logprob equals a brute-force sum over the same tokens computed
  from scratch with llama-cpp-python (prompt + output up to the decision + the alternative's
  tokens evaluated in one go), and those tokens spell the output so far plus the alternative;
* tokenisation: re-derived from a vocabulary scan and fresh logits (greedy most probable
  prefix token while several alternatives are possible, the tokenizer's split after);
* probing leaves decoding alone: the same seed gives the same bytes with and without it.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import cengine
from server.runtime.llama_backend import Decoder
from server.runtime.model import Model
from server.runtime.types import (ChoiceScope, DecisionsEvent, FinishEvent, SamplingParams,
                                  TokenEvent)
from server.tools import ToolSpec, hermes

from test_decisions_pointer import resolve
from tool_text import parse_output

N_CTX = 1024
PROMPT = "Route this request: I want my money back."

ROUTING = {"type": "object",
           "properties": {"intent": {"enum": ["refund", "cancel", "track", "change_address",
                                              "billing", "product_question"]},
                          "urgent": {"type": "boolean"}},
           "required": ["intent", "urgent"]}
ARRAY = {"type": "object", "properties": {"tags": {"type": "array", "minItems": 1, "maxItems": 3,
                                                   "items": {"enum": ["red", "green", "blue"]}}},
         "required": ["tags"]}
NESTED = {"type": "object", "properties": {"a": {"type": "object", "properties": {
    "b": {"type": "object", "properties": {"level": {"enum": ["low", "high"]}},
          "required": ["level"]},
    "note": {"type": "string", "maxLength": 4}}, "required": ["b", "note"]}},
    "required": ["a"]}
BRANCHES = {"anyOf": [
    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "integer"}},
     "required": ["kind", "r"]},
    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer"}},
     "required": ["kind", "side"]}]}
WHOLE = {"enum": ["yes", "no", "maybe"]}
# several multi-token alternatives that part at different depths (probed side by side, one
# batch per level of their token tree)
DEEP = {"type": "object", "properties": {"k": {"enum": [
    "alpha_beta_gamma", "alpha_beta_delta", "alpha_omega", "zeta_eta_theta", "zeta_eta",
    "omicron"]}}, "required": ["k"]}

# schema -> {pointer pattern: alternatives}; "/tags/*" stands for every item
CASES = [
    (ROUTING, {"/intent": ROUTING["properties"]["intent"]["enum"], "/urgent": [False, True]}),
    (ARRAY, {"/tags/*": ["red", "green", "blue"]}),
    (NESTED, {"/a/b/level": ["low", "high"]}),
    (BRANCHES, {"/kind": ["circle", "square"]}),
    (WHOLE, {"": ["yes", "no", "maybe"]}),
]


@pytest.fixture(scope="module")
def model(fixture_model_path):
    m = Model(str(fixture_model_path), n_ctx=N_CTX)
    yield m
    m.close()


def run(model, prompt=PROMPT, *, scope=ChoiceScope("json"), seed=0, max_tokens=120, **kw):
    out, decisions, finish = bytearray(), None, None
    for ev in model.generate(prompt, params=SamplingParams(max_tokens=max_tokens, seed=seed),
                             choice=scope, **kw):
        if isinstance(ev, TokenEvent):
            out += ev.text
        elif isinstance(ev, DecisionsEvent):
            decisions = ev.decisions
        else:
            assert isinstance(ev, FinishEvent) and decisions is not None
            finish = ev
    assert finish is not None
    run.finish = finish
    return bytes(out), decisions


def check_numbers(d):
    assert len(d.alternatives) == len(d.logprobs) == len(d.posterior) >= 2
    assert all(lp is not None and lp < 0 for lp in d.logprobs)
    assert sum(d.posterior) == pytest.approx(1.0, abs=1e-12)
    z = sum(math.exp(lp) for lp in d.logprobs)
    assert d.probed_mass == pytest.approx(z, rel=1e-9)
    if z > 0:
        assert d.posterior == pytest.approx([math.exp(lp) / z for lp in d.logprobs], rel=1e-6)
    json.dumps(d.as_dict(), allow_nan=False)        # the response's JSON stays valid


def expected_for(pattern_map, pointer):
    for pat, alts in pattern_map.items():
        if pat.endswith("/*"):
            head = pat[:-1]
            if pointer.startswith(head) and pointer[len(head):].isdigit():
                return alts
        elif pat == pointer:
            return alts
    raise AssertionError(f"unexpected decision at {pointer!r}")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("schema, expected", CASES, ids=["object", "array", "nested", "anyOf",
                                                         "whole"])
def test_decisions_at_the_right_pointers(model, schema, expected, seed):
    out, decisions = run(model, grammar=cengine.compile_json_schema(schema), seed=seed)
    doc = json.loads(out)
    pointers = [d.pointer for d in decisions]
    want = []

    def walk(v, ptr):
        try:
            expected_for(expected, ptr)
            want.append(ptr)
            return
        except AssertionError:
            pass
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, ptr + "/" + k)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{ptr}/{i}")
    walk(doc, "")
    assert pointers == want, out        # every decision point, in document order
    for d in decisions:
        assert sorted(map(json.dumps, d.alternatives)) == \
            sorted(map(json.dumps, expected_for(expected, d.pointer)))
        assert d.chosen == resolve(doc, d.pointer)
        check_numbers(d)


TOOLS = [ToolSpec(name, "", {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}},
                             "required": ["unit"]})
         for name in ["get_weather", "get_time", "send_email", "book_table"]]


@pytest.mark.parametrize("parallel", [False, True])
def test_decisions_tool_name_among_several_tools(model, parallel):
    out, decisions = run(model, "hi", scope=ChoiceScope("calls"), seed=3,
                         grammar=hermes.HERMES.call_grammar(TOOLS, parallel=parallel))
    calls = parse_output(hermes.HERMES, out.decode(), TOOLS)[1]
    assert calls and (parallel or len(calls) == 1)
    want = [(i, p) for i in range(len(calls)) for p in ("tool", "/unit")]
    got = [(d.call, d.pointer) for d in decisions]
    if run.finish.reason == "length" and len(got) < len(want):
        # the budget ran out inside the last call: the closer wrote the rest, and a value the
        # closer writes is no decision of the model's
        want = want[:len(got)]
        assert got[-1][0] == len(calls) - 2 or got[-1] == (len(calls) - 1, "tool")
    assert got == want, out
    for d in decisions:
        call = calls[d.call]
        if d.pointer == "tool":
            assert sorted(d.alternatives) == sorted(t.name for t in TOOLS)
            assert d.chosen == call.name
        else:
            assert d.alternatives == ["c", "f"] and d.chosen == call.arguments["unit"]
        check_numbers(d)
        assert d.as_dict()["call"] == d.call


def test_decisions_tool_name_under_a_lazy_grammar(model):
    # auto: text is free until the trigger, the matcher starts after it. The fixture model
    # rarely writes `<tool_call>`, so the call region is put behind a trigger it writes
    # early ("e"); the bytes after the trigger in that token are respelled or accepted as
    # the lazy path does, and the call that follows carries the decisions.
    _, grammar = hermes.HERMES.lazy_call_grammar(TOOLS)
    out, decisions = run(model, "hi", scope=ChoiceScope("calls"), seed=5, max_tokens=200,
                         lazy_grammar=("e", grammar))
    text = out.decode("utf-8", "replace")
    head, _, rest = text.partition("e")
    calls = parse_output(hermes.HERMES, hermes.OPEN + rest, TOOLS)[1]
    assert calls, text
    assert [(d.call, d.pointer) for d in decisions][:2] == [(0, "tool"), (0, "/unit")]
    assert decisions[0].chosen == calls[0].name
    for d in decisions:
        check_numbers(d)


def _log_softmax(logits) -> np.ndarray:
    x = np.asarray(logits, dtype=np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def brute_force(logits_after, state, seq) -> list:
    """log P of each token of seq, its logits from evaluating state + seq[:j] from scratch."""
    return [float(_log_softmax(logits_after(list(state) + list(seq[:j])))[t])
            for j, t in enumerate(seq)]


def llama_cpp_python_logits(llama):
    def after(ids):
        llama.reset()           # n_tokens = 0: eval drops the whole cache and starts over
        llama.eval(ids)
        return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()
    return after


@pytest.fixture(scope="module")
def fresh_runtime(fixture_model_path):
    from server.runtime.llama_backend import LlamaRuntime
    rt = LlamaRuntime(str(fixture_model_path), n_ctx=N_CTX)
    yield rt
    rt.close()


def fresh_runtime_logits(rt):
    def after(ids):
        rt.truncate(0)
        return rt.eval(ids)
    return after


@pytest.mark.parametrize("schema, ws_budget", [(ROUTING, 64), (ARRAY, 64), (BRANCHES, 64),
                                                # no whitespace: a value's first bytes are forced
                                                ({"type": "object", "properties": {"k": {
                                                    "enum": ["pre_alpha", "pre_beta",
                                                             "pre_gamma"]}},
                                                  "required": ["k"]}, 0),
                                                (DEEP, 64), (DEEP, 0)])
def test_probed_logprobs_equal_a_brute_force_from_the_same_state(model, fixture_llama,
                                                                   fresh_runtime, fixture_vocab,
                                                                   schema, ws_budget):
    grammar = cengine.compile_json_schema(schema, whitespace_budget=ws_budget)
    out, decisions = run(model, grammar=grammar, seed=2)
    assert decisions
    prompt_ids = model.tokenize(PROMPT)
    for d in decisions:
        state = d.state_tokens
        assert state[:len(prompt_ids)] == prompt_ids
        so_far = b"".join(fixture_vocab.tokens[t] for t in state[len(prompt_ids):])
        assert out.startswith(so_far)
        for alt, seq, lp in zip(d.alternatives, d.probe_sequences, d.logprobs):
            spelled = so_far + b"".join(fixture_vocab.tokens[t] for t in seq)
            # the tokens spell the output up to the decision, then the alternative
            assert spelled.endswith(json.dumps(alt).encode())
            # ... legally: the grammar accepts them one after another
            m = grammar.matcher(fixture_vocab)
            assert all(m.accept_token(t) for t in state[len(prompt_ids):] + seq)
            # the same numbers from scratch, in one batch: in a second context of llamay's
            # runtime (the decoder built the cache token by token: other summation orders,
            # ~1e-4 per token), and in llama-cpp-python, whose Llama loads with weight
            # repacking (other matmul kernels: a few 1e-3 per token on this model). A wrong
            # state or token would be off by whole nats.
            ours = brute_force(fresh_runtime_logits(fresh_runtime), state, seq)
            assert lp == pytest.approx(sum(ours), abs=2e-3 * len(seq))
            theirs = brute_force(llama_cpp_python_logits(fixture_llama), state, seq)
            assert np.allclose(ours, theirs, rtol=0, atol=0.02), (ours, theirs)
            assert lp == pytest.approx(sum(theirs), abs=0.01 * len(seq))


def test_forced_value_start_decides_at_the_next_sampled_token(model):
    schema = {"type": "object", "properties": {"k": {"enum": ["pre_alpha", "pre_beta"]}},
              "required": ["k"]}
    out, decisions = run(model, grammar=cengine.compile_json_schema(schema, whitespace_budget=0))
    assert out.startswith(b'{"k":"pre_')
    [d] = decisions
    assert d.pointer == "/k" and sorted(d.alternatives) == ["pre_alpha", "pre_beta"]
    # decided inside the value, after (part of) the forced "pre_": the probed tokens spell
    # only the rest of each alternative, the same rest for the shared part
    rests = [b"".join(model.vocab.tokens[t] for t in seq) for seq in d.probe_sequences]
    for alt, rest in zip(d.alternatives, rests):
        full = json.dumps(alt).encode()
        assert full.endswith(rest) and len(full) - len(rest) >= len(b'"pre')
    assert rests[0][:-len(b'alpha"')] == rests[1][:-len(b'beta"')]


@pytest.mark.parametrize("schema", [ROUTING, ARRAY, NESTED])
def test_probing_leaves_decoding_unchanged(model, schema):
    grammar = cengine.compile_json_schema(schema)
    plain = bytearray()
    for ev in model.generate(PROMPT, grammar=grammar,
                             params=SamplingParams(max_tokens=120, seed=11)):
        if isinstance(ev, TokenEvent):
            plain += ev.text
    probed, decisions = run(model, grammar=grammar, seed=11)
    assert decisions and probed == bytes(plain)


def test_words_scope_is_one_decision_over_the_lexicon(model):
    words = ["alpha", "beta", "gamma"]
    out, decisions = run(model, scope=ChoiceScope("words", words=words), max_tokens=4,
                         grammar=cengine.compile_lexicon(words))
    [d] = decisions
    assert d.pointer == "" and d.alternatives == words
    check_numbers(d)
    text = out.decode().strip()
    assert d.chosen == (text if text in words else None)


def expected_tokenisation(model, rt, state, spellings, i, vocab):
    """The documented tokenisation of spellings[i], re-derived by scanning the whole vocabulary
    for prefix tokens and reading logits from a fresh context: the most probable prefix token
    while the bytes so far start several spellings, the tokenizer's split (tokens_for_bytes)
    once they start only this one."""
    target = spellings[i]
    seq, pos = [], 0
    while pos < len(target):
        written = target[:pos]
        if pos and sum(1 for s in spellings if len(s) > pos and s.startswith(written)) == 1:
            return seq + model.tokens_for_bytes(target[pos:])[0]
        rt.truncate(0)
        logits = rt.eval(list(state) + seq)
        rest = target[pos:]
        cands = [t for t, b in enumerate(vocab.tokens)
                 if b and rest.startswith(b) and t not in model.stop_ids]
        best = max(cands, key=lambda t: (float(logits[t]), -t))
        seq.append(best)
        pos += len(vocab.tokens[best])
    return seq


@pytest.mark.parametrize("schema", [ROUTING, BRANCHES])
def test_probe_tokenisation_is_greedy_until_determined(model, fresh_runtime, fixture_vocab,
                                                      schema):
    out, decisions = run(model, grammar=cengine.compile_json_schema(schema), seed=7)
    prompt_len = len(model.tokenize(PROMPT))
    for d in decisions:
        so_far = b"".join(fixture_vocab.tokens[t] for t in d.state_tokens[prompt_len:])
        rest_of_output = out[len(so_far):]
        # every alternative's spelling: the output from the decision up to the value, then it
        value_at = rest_of_output.find(json.dumps(d.chosen).encode())
        lead = rest_of_output[:value_at]
        spellings = [lead + json.dumps(a).encode() for a in d.alternatives]
        for i, seq in enumerate(d.probe_sequences):
            assert seq == expected_tokenisation(model, fresh_runtime, d.state_tokens, spellings,
                                                i, fixture_vocab)


def evaluations(spellings, seqs, taken, model):
    """What the probe must evaluate on branches, per level of the alternatives' token tree:
    one token per shared prefix while the bytes so far start several spellings, then each
    alternative's forced rest in one more level (the last token's logits are never needed),
    less what the decoder evaluated itself along `taken`, its own tokens from the decision
    state. Returns {level: tokens evaluated there}."""
    levels = {}
    steps = set()
    for i, seq in enumerate(seqs):
        pos, unique = 0, len(seq) - 1
        for k, t in enumerate(seq[:-1]):
            pos += len(model.token_bytes(t))
            if sum(1 for s in spellings if len(s) > pos and s.startswith(spellings[i][:pos])) == 1:
                unique = k
                break
            steps.add(tuple(seq[:k + 1]))
        rest = seq[unique:len(seq) - 1]
        on_path = 0
        while on_path < len(rest) and list(seq[:unique + on_path + 1]) == \
                list(taken[:unique + on_path + 1]):
            on_path += 1
        if len(rest) > on_path:
            levels[unique + 1] = levels.get(unique + 1, 0) + len(rest) - on_path
    for step in steps:
        if list(step) != list(taken[:len(step)]):
            levels[len(step)] = levels.get(len(step), 0) + 1
    return levels


@pytest.mark.parametrize("n_branches", [None, 2])
def test_probe_batches_one_level_at_a_time(model, fixture_model_path, n_branches, monkeypatch):
    # the alternatives' token tree is evaluated one batch per level, not one pass per
    # alternative, and the decoder's own path is not evaluated again; with fewer branches than
    # alternatives it takes several rounds and gives the same numbers
    probe_model = model if n_branches is None else \
        Model(str(fixture_model_path), n_ctx=N_CTX, n_branches=n_branches)
    calls = []
    real = Decoder.eval_branches

    def counting(self, items):
        calls.append(sum(len(ids) for _, ids, _ in items))
        return real(self, items)
    # the probes evaluate on the request's decoder sequence
    monkeypatch.setattr(Decoder, "eval_branches", counting)
    grammar = cengine.compile_json_schema(DEEP)
    _, decisions_ = run(probe_model, grammar=grammar, seed=4)
    taken = probe_model.runtime.tokens[len(decisions_[0].state_tokens):]
    monkeypatch.undo()
    [d] = decisions_
    assert len(d.alternatives) == 6
    spellings = [b"".join(model.token_bytes(t) for t in q) for q in d.probe_sequences]
    levels = evaluations(spellings, d.probe_sequences, taken, model)
    # the decoder went along the chosen alternative: its tokens were not evaluated again
    chosen = d.probe_sequences[d.alternatives.index(d.chosen)]
    assert list(taken[:len(chosen) - 1]) == list(chosen[:-1])
    if n_branches is None:
        # one batch per level that has something left to evaluate, with exactly that
        assert calls == [levels[k] for k in sorted(levels)]
    else:
        assert probe_model.runtime.n_branches == 2 and len(calls) > len(levels)
        assert sum(calls) >= sum(levels.values())
        _, reference = run(model, grammar=grammar, seed=4)
        assert d.probe_sequences == reference[0].probe_sequences
        # other batches, other summation orders (see the brute-force test)
        for lp, ref, q in zip(d.logprobs, reference[0].logprobs, d.probe_sequences):
            assert lp == pytest.approx(ref, abs=2e-3 * len(q))
        probe_model.close()
