"""The numpy sampler: greedy, temperature, top-k/top-p/min-p, repeat penalty, logprobs."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.runtime.sampling import NoTokenAllowed, Sampler, apply_repeat_penalty, logprobs_of

NEG = -np.inf


def draws(sampler: Sampler, logits, n: int):
    return [sampler.sample(np.array(logits, np.float32)) for _ in range(n)]


@pytest.mark.parametrize("logits, expected", [
    ([0.0, 3.0, 1.0], 1),
    ([5.0, 5.0, 1.0], 0),              # ties go to the lowest id
    ([NEG, NEG, -10.0], 2),            # the only finite logit
    ([NEG, 2.0, 9.0, NEG], 2),
])
def test_greedy_picks_the_largest_finite_logit(logits, expected):
    assert Sampler(temperature=0.0).sample(np.array(logits, np.float32)) == expected


def test_everything_masked_raises():
    with pytest.raises(NoTokenAllowed):
        Sampler(temperature=0.7, seed=1).sample(np.full(8, NEG, np.float32))


@pytest.mark.parametrize("kwargs", [
    dict(temperature=-1.0), dict(top_p=0.0), dict(top_p=1.5), dict(top_k=-1), dict(min_p=2.0),
])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        Sampler(**kwargs)


@pytest.mark.parametrize("kwargs, allowed", [
    (dict(top_k=1), {3}),
    (dict(top_k=2), {3, 1}),
    (dict(top_p=0.5), {3}),                    # p(3) alone is above 0.5
    (dict(top_p=0.95), {3, 1}),
    (dict(min_p=0.5), {3}),                    # p(1)/p(3) = e^-1 < 0.5
    (dict(min_p=0.3), {3, 1}),
])
def test_truncation_keeps_only_the_head(kwargs, allowed):
    logits = [0.0, 4.0, -3.0, 5.0, -2.0]      # p: 3 >> 1 >> rest
    s = Sampler(temperature=1.0, seed=7, **kwargs)
    seen = set(draws(s, logits, 400))
    assert seen <= allowed
    assert len(seen) == len(allowed)          # 400 draws reach every kept token


def test_same_seed_same_draws_and_other_seed_differs():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(200).astype(np.float32)
    a = draws(Sampler(temperature=1.0, seed=42), logits, 50)
    b = draws(Sampler(temperature=1.0, seed=42), logits, 50)
    c = draws(Sampler(temperature=1.0, seed=43), logits, 50)
    assert a == b
    assert a != c


def test_temperature_follows_the_softmax():
    logits = np.log(np.array([0.6, 0.3, 0.1], np.float64)).astype(np.float32)
    n = 6000
    counts = np.bincount(draws(Sampler(temperature=1.0, seed=3), logits, n), minlength=3) / n
    assert np.allclose(counts, [0.6, 0.3, 0.1], atol=0.03)
    # a low temperature sharpens: the top token dominates
    cold = np.bincount(draws(Sampler(temperature=0.2, seed=3), logits, 2000), minlength=3) / 2000
    assert cold[0] > 0.95


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(-20, 20)), min_size=1, max_size=40),
       st.floats(0.05, 3.0), st.integers(0, 5), st.floats(0.05, 1.0), st.integers(0, 2**31))
def test_masked_tokens_are_never_drawn(values, temperature, top_k, top_p, seed):
    if all(v is None for v in values):
        values[0] = 0.0
    logits = np.array([NEG if v is None else v for v in values], np.float32)
    s = Sampler(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    for _ in range(20):
        t = s.sample(logits)
        assert np.isfinite(logits[t])


def test_repeat_penalty_makes_recent_tokens_less_likely():
    logits = np.array([2.0, -2.0, 1.0, NEG], np.float32)
    apply_repeat_penalty(logits, [0, 1, 1, 3], 2.0)
    assert logits[0] == pytest.approx(1.0)      # positive: divided
    assert logits[1] == pytest.approx(-4.0)     # negative: multiplied (each id once)
    assert logits[2] == pytest.approx(1.0)      # not recent
    assert logits[3] == NEG                     # a masked token stays masked
    same = np.array([2.0, -2.0], np.float32)
    apply_repeat_penalty(same, [0, 1], 1.0)
    assert same.tolist() == [2.0, -2.0]


def test_logprobs_are_a_normalised_distribution():
    logits = np.array([1.0, NEG, 3.0, 2.0], np.float32)
    lp, top = logprobs_of(logits, 2, 3)
    assert [t for t, _ in top] == [2, 3, 0]
    assert lp == pytest.approx(top[0][1])
    assert sum(math.exp(v) for _, v in top) == pytest.approx(1.0)
    assert lp == pytest.approx(3.0 - math.log(math.exp(1) + math.exp(3) + math.exp(2)))
    lp_masked, _ = logprobs_of(logits, 1, 0)
    assert lp_masked == NEG
    _, top1 = logprobs_of(logits, 0, 10)        # k beyond the finite ones: all of them
    assert len(top1) == 3


# The fast paths (greedy by one argmax, no gather of an unmasked row, top-p and min-p by the
# candidates above a threshold instead of a sort of every probability) must draw what the
# first sampler drew: the same tokens for the same parameters and seed.
_PARAMS = st.fixed_dictionaries({
    "temperature": st.sampled_from([0.0, 0.3, 1.0, 2.5]),
    "top_p": st.sampled_from([1.0, 0.99, 0.9, 0.5, 0.05]),
    "top_k": st.sampled_from([0, 1, 5, 40]),
    "min_p": st.sampled_from([0.0, 0.01, 0.05, 0.5]),
})


def _logits(rng, n: int, kind: str) -> np.ndarray:
    if kind == "ties":
        x = rng.integers(-3, 3, n).astype(np.float32)      # many equal probabilities
    elif kind == "flat":
        x = (rng.standard_normal(n) * 0.01).astype(np.float32)
    else:
        x = (rng.standard_normal(n) * 4).astype(np.float32)
    if kind == "masked":
        x[rng.random(n) < 0.9] = NEG
        x[rng.integers(0, n)] = 1.0                         # at least one allowed
    return x


@settings(max_examples=120, deadline=None)
@given(_PARAMS, st.integers(0, 2**32 - 1), st.integers(1, 3000),
       st.sampled_from(["sharp", "flat", "ties", "masked"]))
def test_fast_sampler_draws_what_the_reference_draws(params, seed, n, kind):
    from oracles.sampling_reference import ReferenceSampler
    logits = _logits(np.random.default_rng(seed), n, kind)
    fast, ref = Sampler(seed=seed, **params), ReferenceSampler(seed=seed, **params)
    assert [fast.sample(logits) for _ in range(12)] == [ref.sample(logits) for _ in range(12)]


@pytest.mark.parametrize("params", [
    dict(temperature=0.8, top_p=0.95), dict(temperature=1.0, min_p=0.05),
    dict(temperature=0.7, top_p=0.9, min_p=0.02), dict(temperature=0.0),
    dict(temperature=0.8, top_k=40, top_p=0.9)])
def test_fast_sampler_on_a_whole_vocabulary(params):
    from oracles.sampling_reference import ReferenceSampler
    rng = np.random.default_rng(5)
    for kind in ("sharp", "flat", "masked"):
        logits = _logits(rng, 49152, kind)
        fast, ref = Sampler(seed=9, **params), ReferenceSampler(seed=9, **params)
        assert [fast.sample(logits) for _ in range(20)] == [ref.sample(logits) for _ in range(20)]


def test_greedy_falls_back_on_rows_it_cannot_take_at_once():
    # NaN and +inf are never chosen (not finite), as before the argmax fast path
    row = np.array([1.0, np.nan, 3.0, np.inf, 2.0], np.float32)
    assert Sampler(temperature=0.0).sample(row) == 2
