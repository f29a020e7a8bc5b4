"""The prompt cache (server/runtime/llama_backend.py): earlier requests' KV kept in slots in
host memory, so a conversation that alternates with others evaluates only what is new. A
prefix comes back only as the same tokens at the same positions (a changed earlier token
invalidates from there), the logits after a restored prefix are those of a fresh evaluation,
the slots are bounded in count and tokens (least recently used first) and hold no cells, idle
decoders' content leaves the cache when another request starts, and a decode short of cells
moves an idle decoder's content out instead of failing."""
from __future__ import annotations

import httpx
import numpy as np
import pytest

from server.runtime.llama_backend import PARK_MIN_TOKENS, LlamaRuntime
from server_harness import LiveServer

TEXTS = ["Alice asks about the weather in Paris and the trains to Lyon tomorrow morning.",
         "Bob wants a summary of the quarterly report, with the revenue table first.",
         "Carol is planning a garden: tomatoes, basil, and a row of sunflowers by the fence.",
         "Dave debugs a flaky test that fails only when the machine is under heavy load."]


def _prompt(rt, i, repeat=2):
    return rt.tokenize(((TEXTS[i] + " ") * repeat).encode(), add_special=True,
                       parse_special=False)


def _run(rt, prompt):
    """What the decoder does for a request: reuse a prefix, evaluate the rest."""
    keep = rt.reuse_prefix(prompt)
    return keep, rt.eval(prompt[keep:])


@pytest.fixture
def fresh(fixture_model_path):
    """A runtime without any cache, to compare logits against."""
    rt = LlamaRuntime(str(fixture_model_path), n_ctx=512, n_batch=128, cache_slots=0)
    yield rt
    rt.close()


def _same(x, y) -> bool:
    """Logits of one evaluation, up to the float noise of another batch split (a prompt
    evaluated whole or after a cached prefix sums in another order: ~1e-3 here); logits of
    another context differ by whole units."""
    return float(np.abs(x - y).max()) < 2e-2 and int(x.argmax()) == int(y.argmax())


def _fresh_logits(rt, prompt):
    rt.truncate(0)
    return rt.eval(prompt)


@pytest.fixture
def runtime(fixture_model_path):
    """Makes runtimes (n_ctx 512 unless given) and closes them after the test."""
    made = []

    def make(**kw):
        made.append(LlamaRuntime(str(fixture_model_path), n_ctx=kw.pop("n_ctx", 512),
                                 n_batch=128, **kw))
        return made[-1]
    yield make
    for rt in made:
        rt.close()


def test_alternating_prompts_come_back_from_their_slots(runtime, fresh):
    rt = runtime()
    a, b = _prompt(rt, 0), _prompt(rt, 1)
    assert len(a) > PARK_MIN_TOKENS and rt.cache_slots > 0
    assert _run(rt, a)[0] == 0
    keep_b, _ = _run(rt, b)
    assert keep_b < 3                                   # only a BOS in common
    keep, logits = _run(rt, a)                          # a's turn again
    assert keep == len(a) - 1
    assert _same(logits, _fresh_logits(fresh, a))
    keep, logits = _run(rt, b)
    assert keep == len(b) - 1
    assert _same(logits, _fresh_logits(fresh, b))
    assert not _same(_fresh_logits(fresh, a), _fresh_logits(fresh, b))


def test_three_conversations_in_any_order(runtime, fresh):
    rt = runtime()
    prompts = [_prompt(rt, i) for i in range(3)]
    for i in (0, 1, 2):
        _run(rt, prompts[i])
    for i in (1, 0, 2, 0, 1):                           # each from its own slot
        keep, logits = _run(rt, prompts[i])
        assert keep == len(prompts[i]) - 1
        assert _same(logits, _fresh_logits(fresh, prompts[i])), i


def test_a_longer_conversation_reuses_its_earlier_turn(runtime, fresh):
    rt = runtime()
    a, b = _prompt(rt, 0), _prompt(rt, 1)
    _run(rt, a)
    rt.eval(rt.tokenize(b" And the answer was long.", add_special=False,
                        parse_special=False))           # what the model generated
    _run(rt, b)
    a2 = a + rt.tokenize(b" Thanks. And on Sunday?", add_special=False, parse_special=False)
    keep, logits = _run(rt, a2)
    assert keep == len(a)
    assert _same(logits, _fresh_logits(fresh, a2))


def test_a_changed_earlier_token_invalidates_from_there(runtime, fresh):
    rt = runtime()
    a, b = _prompt(rt, 0), _prompt(rt, 1)
    _run(rt, a)
    _run(rt, b)
    changed = list(a)
    changed[10] = b[5] if b[5] != a[10] else b[6]
    keep, logits = _run(rt, changed)
    assert keep == 10
    assert _same(logits, _fresh_logits(fresh, changed))


def test_slots_are_bounded_least_recently_used_first(runtime):
    rt = runtime(cache_slots=2)
    prompts = [_prompt(rt, i) for i in range(4)]
    for p in prompts:
        _run(rt, p)
    # parked: 1 and 2 (0 was dropped for 2); the decoder holds 3
    assert rt.cached_prompts() == [len(prompts[1]), len(prompts[2])]
    assert _run(rt, prompts[0])[0] < 3
    assert _run(rt, prompts[2])[0] == len(prompts[2]) - 1


def test_slots_are_bounded_in_tokens(runtime):
    rt = runtime(cache_tokens=40)
    prompts = [_prompt(rt, i, repeat=1) for i in range(4)]
    assert all(PARK_MIN_TOKENS <= len(p) <= 40 for p in prompts)
    for p in prompts:
        _run(rt, p)
        assert sum(rt.cached_prompts()) <= 40
    assert rt.cached_prompts()                          # something was kept


def test_slots_hold_no_cells(runtime, fresh):
    # the slots are in host memory: a prompt that needs nearly every cell leaves them all
    rt = runtime(n_ctx=256)
    prompts = [_prompt(rt, i, repeat=4)[:70] for i in range(3)]
    for p in prompts:
        _run(rt, p)
    long_prompt = (_prompt(rt, 3, repeat=12))[:230]
    assert len(long_prompt) > 200
    keep, logits = _run(rt, long_prompt)
    assert keep < 3 and logits.shape == (rt.n_vocab,)
    assert len(rt.tokens) == len(long_prompt)
    assert rt.cached_prompts() == [len(p) for p in prompts[:2]] + [len(long_prompt)] \
        or rt.cached_prompts() == [len(p) for p in prompts]
    for p in prompts[:2]:
        keep, logits = _run(rt, p)
        assert keep == len(p) - 1
        assert _same(logits, _fresh_logits(fresh, p))


def _seq_len(rt, dec) -> int:
    """How many positions llama.cpp's cache holds for the decoder's sequence."""
    from server.runtime.llama_backend import L
    return int(L.llama_memory_seq_pos_max(rt._memory, dec.id)) + 1


def test_a_new_request_moves_idle_content_out_of_the_cache(runtime, fresh):
    # in a unified cache every step attends over every cell in use: what an idle decoder
    # holds goes to a slot in host memory when another request starts, and comes back from it
    rt = runtime(n_parallel=2)
    a, b = _prompt(rt, 0), _prompt(rt, 1)
    d = rt.acquire(a)
    assert d.reuse_prefix(a) == 0
    d.eval(a)
    rt.release(d)
    assert _seq_len(rt, d) == len(a)
    e = rt.acquire(b)
    assert e is not d                                   # the empty one
    e.reuse_prefix(b)
    assert d.tokens == [] and _seq_len(rt, d) == 0      # out of the cache
    assert rt.cached_prompts() == [len(a)]              # into a slot
    e.eval(b)
    rt.release(e)                   # (a thread holds one decoder at a time)
    f = rt.acquire(a)
    assert f is d                                       # the empty one again
    keep = f.reuse_prefix(a)
    assert keep == len(a) - 1 and _seq_len(rt, f) == keep
    assert e.tokens == [] and rt.cached_prompts() == [len(a), len(b)]  # b waits in a slot too
    assert _same(f.eval(a[keep:]), _fresh_logits(fresh, a))
    rt.release(f)


def test_a_decode_short_of_cells_moves_an_idle_decoder_out(runtime, fresh):
    rt = runtime(n_ctx=128, n_parallel=2, cache_slots=0)
    a, b = _prompt(rt, 0, repeat=10)[:120], _prompt(rt, 1, repeat=10)[:120]
    assert len(a) == len(b) == 120
    d = rt.acquire(a)
    d.eval(a)
    rt.release(d)                                       # idle, holding 120 cells
    e = rt.acquire(b)
    assert e is not d
    e.eval(b)                                           # (no reuse_prefix: d stays)
    assert _seq_len(rt, d) == len(a)
    with e.branches(2) as (s1, s2):
        e.fork(s1, 60)
        e.fork(s2, 60)
        # 2 x 60 new cells: more than the 256 - 240 free ones
        out = e.eval_branches([((s1,), b[60:120], False), ((s2,), a[60:120], False)])
        assert len(out) == 2
    assert d.tokens == [] and _seq_len(rt, d) == 0      # the idle one made room
    assert e.tokens == b and _seq_len(rt, e) == len(b)  # the busy one kept its content
    rt.release(e)


def test_requests_on_threads_always_get_fresh_logits(runtime, fresh):
    # three threads, each request a conversation that extends an earlier one or starts anew:
    # prefixes come from decoders in use, idle ones and slots moved to and from host memory,
    # under a token bound that drops slots; every request's logits are a fresh evaluation's
    import random
    import threading
    rt = runtime(n_parallel=3, cache_slots=3, cache_tokens=150)
    base = [_prompt(rt, i, repeat=1) for i in range(4)]
    more = rt.tokenize(b" And then?", add_special=False, parse_special=False)
    prompts = [b + more * k for b in base for k in range(4)]
    expected = [_fresh_logits(fresh, p) for p in prompts]
    failures: list = []
    kept: list = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(12):
            i = rng.randrange(len(prompts))
            d = rt.acquire(prompts[i])
            try:
                keep = d.reuse_prefix(prompts[i])
                got = d.eval(prompts[i][keep:])
                kept.append(keep)
                if not _same(got, expected[i]):
                    failures.append((seed, i, keep))
            except BaseException as exc:        # (reported below, not lost in the thread)
                failures.append((seed, i, repr(exc)))
            finally:
                rt.release(d)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not failures
    assert len(kept) == 36 and sum(1 for k in kept if k > 3) >= 6    # the cache was used
    assert sum(rt.cached_prompts()) <= 150


def test_no_slots_keeps_only_the_last_request(runtime):
    rt = runtime(cache_slots=0)
    a, b = _prompt(rt, 0), _prompt(rt, 1)
    _run(rt, a)
    _run(rt, b)
    assert rt.cached_prompts() == [] and _run(rt, a)[0] < 3


# --- through the server: two agents alternating ------------------------------------------

def _conversation(tag):
    system = f"You are agent {tag}. " + TEXTS[ord(tag) - ord("A")] * 3
    return [{"role": "system", "content": system}, {"role": "user", "content": "Start."}]


def _turn(live, messages):
    r = httpx.post(live.base + "/v1/chat/completions", timeout=120, json={
        "model": live.model_name, "messages": messages, "max_tokens": 6, "temperature": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    return (body["choices"][0]["message"]["content"], body["usage"]["prompt_tokens"],
            body["usage"]["prompt_tokens_details"]["cached_tokens"])


@pytest.mark.parametrize("slots, parallel", [(8, 1), (0, 1), (0, 2)])
def test_two_agents_alternating(slots, parallel):
    # one sequence: only the slots keep A's first turn while B runs; two sequences: B takes
    # the empty one and A's first turn stays in its own
    live = LiveServer(default_max_tokens=6, prompt_cache_slots=slots, parallel=parallel)
    try:
        a, b = _conversation("A"), _conversation("B")
        reply_a, prompt_a, _ = _turn(live, a)
        _turn(live, b)
        a2 = a + [{"role": "assistant", "content": reply_a}, {"role": "user", "content": "More."}]
        reply, prompt_a2, cached = _turn(live, a2)
        if slots or parallel > 1:
            assert cached >= prompt_a - 1               # the first turn's prompt, kept
        else:
            assert cached < prompt_a // 2               # only what B's prompt shares with it
        assert prompt_a2 > prompt_a
        # the same output as a server that evaluates the whole prompt
        fresh = LiveServer(default_max_tokens=6, prompt_cache_slots=0, parallel=1)
        try:
            assert _turn(fresh, a2)[0] == reply
        finally:
            fresh.stop()
    finally:
        live.stop()
