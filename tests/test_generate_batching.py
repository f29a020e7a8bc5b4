"""Continuous batching (server/runtime/batching.py, llama_backend.Decoder): several generations
on their own threads share one forward pass a step and each still gets what it would alone.

Equality of tokens is checked from fresh caches, on prompts under 64 tokens. llama.cpp's CPU
flash attention picks its path by the batch's rows and the cache's size, and two of them
round differently from the rest: the tiled path (64 rows or more, walking the cache in tiles
whose edges fall where the cells happen to lie: batching.py, SHARED_BATCH) and the split one
(a batch of one row over 512 cells or more). So once the cache holds other content, two runs
of one prompt can differ in the last bits, batched or not (docs/batching.md).
"""
from __future__ import annotations

import json
import threading
from typing import List, Optional

import jsonschema
import numpy as np
import pytest

import cengine
from server.runtime.batching import SHARED_BATCH, Stepper, Work
from server.runtime.model import Model
from server.runtime.types import (ChoiceScope, DecisionsEvent, FinishEvent, SamplingParams,
                                  TokenEvent)

N_CTX = 512
PROMPTS = [f"Agent {i}: tell me about item {i}. " * (1 + i % 4) for i in range(8)]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "n": {"type": "integer"},
                                           "ok": {"type": "boolean"}},
          "required": ["name", "n", "ok"], "additionalProperties": False}


@pytest.fixture
def single(fixture_model_path):
    return Model(str(fixture_model_path), n_ctx=N_CTX)


@pytest.fixture
def batched(fixture_model_path):
    return Model(str(fixture_model_path), n_ctx=N_CTX, n_parallel=8)


def generate(model: Model, prompt: str, *, seed: int, temperature: float, max_tokens: int = 40,
             grammar=None, cancel: Optional[threading.Event] = None, cancel_after: int = 0,
             choice: Optional[ChoiceScope] = None):
    """(token ids, output bytes, finish event, decisions)."""
    ids: List[int] = []
    out = bytearray()
    fin = decisions = None
    for ev in model.generate(prompt, grammar=grammar, cancel=cancel, choice=choice,
                             params=SamplingParams(max_tokens=max_tokens, seed=seed,
                                                   temperature=temperature)):
        if isinstance(ev, TokenEvent):
            ids.append(ev.token_id)
            out += ev.text
            if cancel is not None and len(ids) == cancel_after:
                cancel.set()
        elif isinstance(ev, DecisionsEvent):
            decisions = ev.decisions
        elif isinstance(ev, FinishEvent):
            fin = ev
    return ids, bytes(out), fin, decisions


def at_once(model: Model, jobs):
    """Run every job (a function of no arguments) on its own thread, all started together."""
    results = [None] * len(jobs)
    errors: list = []
    go = threading.Barrier(len(jobs))

    def run(i):
        try:
            go.wait(30)
            results[i] = jobs[i]()
        except BaseException as exc:   # re-raised below, on the test's thread
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert model.runtime.in_use() == 0
    return results


def test_prompts_stay_under_the_shared_batch(single):
    assert max(len(single.tokenize(p)) for p in PROMPTS) <= SHARED_BATCH


@pytest.fixture
def smollm2_pair(smollm2_model_path):
    return (Model(str(smollm2_model_path), n_ctx=N_CTX),
            Model(str(smollm2_model_path), n_ctx=N_CTX, n_parallel=8))


def same_tokens(single, batched, temperature, grammar):
    alone = [generate(single, p, seed=i, temperature=temperature, grammar=grammar)[0]
             for i, p in enumerate(PROMPTS)]
    before = batched.runtime.step_counts()
    together = at_once(batched, [
        (lambda i=i, p=p: generate(batched, p, seed=i, temperature=temperature,
                                   grammar=grammar)[0]) for i, p in enumerate(PROMPTS)])
    after = batched.runtime.step_counts()
    assert together == alone
    # and they did share steps: more works than llama_decode calls
    assert after["works"] - before["works"] > 2 * (after["calls"] - before["calls"])


@pytest.mark.parametrize("constrained", [False, True])
def test_batched_gives_the_tokens_of_unbatched_greedy(single, batched, constrained):
    # the eight run one at a time on one sequence, then together in one batch a step
    same_tokens(single, batched, 0.0,
                cengine.compile_json_schema(SCHEMA) if constrained else None)


@pytest.mark.parametrize("temperature", [0.0, 0.9])
@pytest.mark.parametrize("constrained", [False, True])
def test_batched_gives_the_tokens_of_unbatched_on_the_default_model(smollm2_pair, temperature,
                                                                    constrained):
    # with per-request seeds too. On the default model (Q4_1) a decode row's logits are the
    # same bit for bit in any batch under SHARED_BATCH rows; the random fixture model's F32
    # matmuls round by batch shape (~1e-3), which can move a sampled token at temperature > 0
    single, batched = smollm2_pair
    same_tokens(single, batched, temperature,
                cengine.compile_json_schema(SCHEMA) if constrained else None)


def test_truncation_gate_holds_with_eight_in_flight(batched):
    # every document is closed when its budget runs out, whatever shares its steps
    grammar = cengine.compile_json_schema(SCHEMA)
    got = at_once(batched, [
        (lambda i=i, p=p: generate(batched, p, seed=i, temperature=1.0, grammar=grammar,
                                   max_tokens=3 + i)) for i, p in enumerate(PROMPTS)])
    for ids, out, fin, _ in got:
        jsonschema.validate(json.loads(out), SCHEMA)
        assert fin.reason in ("length", "stop")
    assert any(fin.reason == "length" and fin.closer for _, _, fin, _ in got)


def test_decision_probes_hold_with_eight_in_flight(single, batched):
    # the probes' branches come from one pool the eight share; each request's decisions are
    # the ones it gets alone
    grammar = cengine.compile_json_schema(SCHEMA)
    scope = ChoiceScope("json")
    alone = [generate(single, p, seed=i, temperature=0.0, grammar=grammar, choice=scope)
             for i, p in enumerate(PROMPTS)]
    together = at_once(batched, [
        (lambda i=i, p=p: generate(batched, p, seed=i, temperature=0.0, grammar=grammar,
                                   choice=scope)) for i, p in enumerate(PROMPTS)])
    assert batched.runtime._free_branches and \
        len(batched.runtime._free_branches) == batched.runtime.n_branches
    for (ids_a, _, _, dec_a), (ids_b, _, _, dec_b) in zip(alone, together):
        assert ids_a == ids_b
        assert [d.pointer for d in dec_a] == [d.pointer for d in dec_b]
        assert [d.chosen for d in dec_a] == [d.chosen for d in dec_b]
        # the probes' levels share calls with other requests' rows: the fixture model's F32
        # matmuls round by batch shape (~1e-3 in a logprob)
        for da, db in zip(dec_a, dec_b):
            assert db.logprobs == pytest.approx(da.logprobs, abs=1e-2)


def test_a_cancelled_request_frees_its_sequence_and_the_others_finish(batched):
    cancel = threading.Event()
    jobs = [(lambda i=i, p=p: generate(batched, p, seed=i, temperature=0.0, max_tokens=30))
            for i, p in enumerate(PROMPTS[:3])]
    jobs.append(lambda: generate(batched, PROMPTS[3], seed=3, temperature=0.0, max_tokens=200,
                                 cancel=cancel, cancel_after=3))
    got = at_once(batched, jobs)
    assert got[3][2].reason == "cancelled" and len(got[3][0]) == 3
    assert all(fin.reason in ("length", "stop") for _, _, fin, _ in got[:3])
    assert batched.runtime.in_use() == 0


def test_more_requests_than_sequences_wait_for_one(fixture_model_path):
    model = Model(str(fixture_model_path), n_ctx=N_CTX, n_parallel=2)
    got = at_once(model, [(lambda i=i, p=p: generate(model, p, seed=i, temperature=0.0,
                                                     max_tokens=8)) for i, p in enumerate(PROMPTS)])
    assert all(len(ids) == 8 for ids, _, _, _ in got)


def test_a_prompt_copied_from_a_busy_sequence_is_never_stale(batched):
    # a request whose prompt starts like another decoder's content takes that prefix (shared
    # cells); a changed earlier token invalidates from there, and the logits are a fresh
    # evaluation's
    rt = batched.runtime
    base = batched.tokenize(PROMPTS[3])
    # two decoders driven from this one thread: not acquired (an acquired decoder counts as
    # busy until it submits, and a step would wait for it forever), as the single-sequence
    # API uses decoder 0
    a, b = rt._decoders[0], rt._decoders[1]
    a.truncate(0)
    b.truncate(0)
    # a is another request's: off the idle list (whose content a new request moves out)
    with rt._idle_cv:
        rt._idle.remove(a)
    try:
        a.eval(base)
        changed = list(base)
        changed[5] = changed[5] + 1 if changed[5] + 1 < rt.n_vocab else changed[5] - 1
        keep = b.reuse_prefix(changed + [11])
        assert keep == 5 and b.tokens == base[:5]
        got = b.eval(changed[5:] + [11])
        b.truncate(0)
        fresh = b.eval(changed + [11])
        np.testing.assert_array_equal(got, fresh)
        keep = b.reuse_prefix(base + [11])
        assert keep == len(base) and b.tokens == base
        assert a.tokens == base
        np.testing.assert_array_equal(b.eval([11]), a.eval([11]))
    finally:
        with rt._idle_cv:
            rt._idle.append(a)


# --- the stepper alone ----------------------------------------------------------------------
class FakeDecode:
    """Records each call's entries; every wanted entry's row is [token]."""

    def __init__(self, fail_on=None):
        self.calls: List[list] = []
        self.fail_on = fail_on

    def __call__(self, entries):
        self.calls.append(list(entries))
        if self.fail_on is not None and any(e[0] == self.fail_on for e in entries):
            raise RuntimeError("decode failed")
        return [np.array([e[0]], np.float32) for e in entries if e[3]]


def entries(seq, tokens, want_last=True):
    return [(t, i, (seq,), want_last and i == len(tokens) - 1) for i, t in enumerate(tokens)]


@pytest.mark.parametrize("sizes, expected_calls", [
    ([1, 1, 1], [[1, 1, 1]]),
    ([40, 30], [[40], [30]]),                 # together they would pass SHARED_BATCH
    ([1, 200, 2], [[1, 2], [200]]),           # a prompt goes alone, after the small ones
    ([1, 700], [[1], [512]]),                 # a chunk of n_batch a step
])
def test_stepper_packs_small_works_together_and_prompts_alone(sizes, expected_calls):
    fake = FakeDecode()
    st = Stepper(fake, n_batch=512)
    works = [Work(entries(k, [k] * n)) for k, n in enumerate(sizes)]
    with st.cv:
        st.queue.extend(works)
        calls = st._pack()
    assert [[b - a for _, a, b in call] for call in calls] == expected_calls


def test_stepper_waits_for_every_busy_sequence_then_runs_one_step():
    fake = FakeDecode()
    st = Stepper(fake, n_batch=512)
    n = 4
    for _ in range(n):
        st.join()
    rows = [None] * n
    started = threading.Barrier(n)

    def seq(k):
        started.wait(10)
        rows[k] = st.run(Work(entries(k, [10 + k]))).rows
        st.leave()
    threads = [threading.Thread(target=seq, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [float(r[0][0]) for r in rows] == [10, 11, 12, 13]
    assert len(fake.calls) == 1 and len(fake.calls[0]) == n


def test_a_failed_call_fails_only_its_own_works():
    fake = FakeDecode(fail_on=99)
    st = Stepper(fake, n_batch=64)
    small = Work(entries(0, [1]))
    big = Work(entries(1, [99] * 100))
    failed = []
    big.on_fail = failed.append
    st.join()
    st.join()
    out = {}

    def run(name, w):
        try:
            out[name] = st.run(w).rows
        except RuntimeError as exc:
            out[name] = exc
        st.leave()
    threads = [threading.Thread(target=run, args=a) for a in (("small", small), ("big", big))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert isinstance(out["big"], RuntimeError) and len(failed) == 1
    assert [float(r[0]) for r in out["small"]] == [1.0]
