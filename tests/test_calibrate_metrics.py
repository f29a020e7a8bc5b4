"""calibrate.metrics: the contract's accuracy, multi-class Brier, ECE and MCE.

Checked three ways: hand-worked cases (arithmetic in the comments), scikit-learn's own
brier_score_loss / accuracy_score / calibration_curve on random data, and hypothesis properties.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, brier_score_loss

from calibrate.decisions import Decision
from calibrate.metrics import (DecisionArrays, bin_index, brier_score, evaluate,
                               expected_calibration_error, reliability_bins)


def dec(alternatives, posterior, chosen, label, line=1):
    return Decision(line, tuple(alternatives), tuple(float(p) for p in posterior), chosen, label)


AB = ("a", "b")

# Each case: decisions, bins, expected accuracy, brier, ece, mce, {bin index: count}.
HAND_CASES = [
    pytest.param(
        [dec(AB, [0.8, 0.2], "a", "a"),     # conf .8 right;  brier .2²+.2² = .08
         dec(AB, [0.6, 0.4], "a", "b"),     # conf .6 wrong;  brier .6²+.6² = .72
         dec(AB, [0.3, 0.7], "b", "b"),     # conf .7 right;  brier .3²+.3² = .18
         dec(AB, [0.45, 0.55], "a", "a")],  # conf .45 right (not the arg-max); brier .55²·2 = .605
        2,
        3 / 4,                              # 3 of 4 right
        (0.08 + 0.72 + 0.18 + 0.605) / 4,   # = 1.585 / 4 = 0.39625
        # bin 0 [0, .5): {.45} acc 1, conf .45, gap .55
        # bin 1 [.5, 1]: {.8, .6, .7} acc 2/3, conf .7, gap 1/30
        # ece = 1/4 · .55 + 3/4 · 1/30 = .1375 + .025 = .1625
        0.1625,
        0.55,
        {0: 1, 1: 3},
        id="two-alternatives-two-bins"),
    pytest.param(
        [dec("xyz", [0.5, 0.3, 0.2], "x", "y"),   # conf .5 wrong; brier .5²+.7²+.2² = .78
         dec("xyz", [0.1, 0.1, 0.8], "z", "z")],  # conf .8 right; brier .1²+.1²+.2² = .06
        10,
        1 / 2,
        (0.78 + 0.06) / 2,                   # = .42
        # bin 5 (⌊.5·10⌋): acc 0, conf .5, gap .5; bin 8: acc 1, conf .8, gap .2
        # ece = .5 · .5 + .5 · .2 = .35
        0.35,
        0.5,
        {5: 1, 8: 1},
        id="three-alternatives-default-bins"),
    pytest.param(
        [dec(AB, [1.0, 0.0], "a", "a"),      # conf 1 → bin min(10, 9) = 9, right; brier 0
         dec(AB, [0.0, 1.0], "a", "b")],     # conf 0 → bin 0, wrong; brier 0 (posterior was right)
        10,
        1 / 2,
        0.0,
        0.0,                                 # bin 0: acc 0 = conf 0; bin 9: acc 1 = conf 1
        0.0,
        {0: 1, 9: 1},
        id="confidence-zero-and-one"),
    pytest.param(
        [dec(AB, [0.9, 0.1], "a", "b"),                 # brier .9²+.9² = 1.62, conf .9 wrong
         dec("wxyz", [0.25] * 4, "w", "w")],            # brier .75²+3·.25² = .75, conf .25 right
        4,
        1 / 2,
        (1.62 + 0.75) / 2,                   # = 1.185
        # conf .9 → bin ⌊3.6⌋ = 3, gap .9; conf .25 → bin ⌊1.0⌋ = 1, gap .75
        # ece = .5 · .9 + .5 · .75 = .825
        0.825,
        0.9,
        {1: 1, 3: 1},
        id="mixed-widths-padded"),
    pytest.param(
        [dec("ab", [0.7, 0.3], "a", "a")] * 3 + [dec("ab", [0.7, 0.3], "a", "b")] * 2,
        10,
        3 / 5,
        # right: .3²+.3² = .18 (×3); wrong: .7²+.7² = .98 (×2); (.54 + 1.96) / 5 = .5
        0.5,
        0.1,                                 # one bin (7): acc .6, conf .7
        0.1,
        {7: 5},
        id="one-bin-overconfident"),
]


@pytest.mark.parametrize("decisions, bins, acc, brier, ece, mce, counts", HAND_CASES)
def test_hand_worked_cases(decisions, bins, acc, brier, ece, mce, counts):
    m = evaluate(decisions, bins)
    assert m.n == len(decisions)
    assert m.n_bins == bins
    assert m.accuracy == pytest.approx(acc, abs=1e-12)
    assert m.brier == pytest.approx(brier, abs=1e-12)
    assert m.ece == pytest.approx(ece, abs=1e-12)
    assert m.mce == pytest.approx(mce, abs=1e-12)
    assert {b.index: b.count for b in m.bins if b.count} == counts


@pytest.mark.parametrize("confidence, bins, expected", [
    (0.0, 10, 0), (0.0999, 10, 0), (0.1, 10, 1), (0.3, 10, 3), (0.7, 10, 7),
    (0.999, 10, 9), (1.0, 10, 9),          # 1.0 would be bin 10: clamped to the last
    (0.5, 2, 1), (0.4999, 2, 0), (0.25, 4, 1), (1.0, 1, 0), (0.0, 1, 0),
    (1 / 3, 3, 1), (2 / 3, 3, 2),
])
def test_bin_index_follows_the_contract(confidence, bins, expected):
    assert int(bin_index([confidence], bins)[0]) == expected


def test_bin_edges_and_empty_bins():
    bins = reliability_bins([0.05, 0.95], [True, False], 4)
    assert [(b.lower, b.upper) for b in bins] == \
        [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)]
    assert [b.count for b in bins] == [1, 0, 0, 1]
    assert bins[1].accuracy is None and bins[1].mean_confidence is None and bins[1].gap is None
    assert bins[3].accuracy == 0.0 and bins[3].gap == pytest.approx(-0.95)


@pytest.mark.parametrize("bad", [[-0.1], [1.5], [float("nan")]])
def test_bin_index_refuses_confidences_outside_unit_interval(bad):
    with pytest.raises(ValueError):
        bin_index(bad, 10)


def test_no_decisions_is_an_error():
    with pytest.raises(ValueError):
        evaluate([], 10)


def random_decisions(seed: int, n: int, k: int):
    """n decisions over k alternatives: Dirichlet posteriors, chosen drawn from the posterior,
    label drawn from a sharpened posterior (so the model is neither perfect nor useless)."""
    rng = np.random.default_rng(seed)
    alts = tuple(f"alt{i}" for i in range(k))
    out = []
    for i in range(n):
        p = rng.dirichlet(np.full(k, 0.7))
        chosen = int(rng.choice(k, p=p))
        sharp = p ** 2 / (p ** 2).sum()
        label = int(rng.choice(k, p=sharp))
        out.append(Decision(i + 1, alts, tuple(p.tolist()), alts[chosen], alts[label]))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_binary_brier_and_accuracy_match_sklearn(seed):
    ds = random_decisions(seed, 300, 2)
    m = evaluate(ds)
    p_first = np.array([d.posterior[0] for d in ds])
    y_first = np.array([d.label == "alt0" for d in ds])
    # the multi-class sum over 2 alternatives counts the binary error twice:
    # (p - y)² + ((1-p) - (1-y))²
    assert m.brier == pytest.approx(2 * brier_score_loss(y_first, p_first), rel=1e-12)
    assert m.accuracy == pytest.approx(accuracy_score([d.label for d in ds],
                                                      [d.chosen for d in ds]))


@pytest.mark.parametrize("seed, k", [(0, 3), (1, 4), (2, 6)])
def test_multiclass_brier_matches_sklearn(seed, k):
    ds = random_decisions(seed, 300, k)
    labels = list(ds[0].alternatives)
    proba = np.array([d.posterior for d in ds])
    expected = brier_score_loss([d.label for d in ds], proba, labels=labels, scale_by_half=False)
    assert evaluate(ds).brier == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed, bins", [(0, 10), (1, 5), (2, 20), (3, 7)])
def test_bins_ece_mce_match_independent_computation(seed, bins):
    # random confidences never sit exactly on a bin edge, where calibration_curve's
    # searchsorted and the contract's floor could disagree
    ds = random_decisions(seed, 400, 3)
    conf = np.array([d.confidence for d in ds])
    ok = np.array([d.correct for d in ds])
    m = evaluate(ds, bins)
    prob_true, prob_pred = calibration_curve(ok, conf, n_bins=bins, strategy="uniform")
    assert m.mce == pytest.approx(np.abs(prob_true - prob_pred).max(), rel=1e-9)
    counts, _ = np.histogram(conf, bins=np.linspace(0, 1, bins + 1))
    assert [b.count for b in m.bins] == counts.tolist()
    nonempty = counts[counts > 0]
    ece = float((nonempty / len(ds) * np.abs(prob_true - prob_pred)).sum())
    assert m.ece == pytest.approx(ece, rel=1e-9)


# --- properties ---------------------------------------------------------------------------

@st.composite
def decision(draw):
    k = draw(st.integers(1, 5))
    weights = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=k, max_size=k)
                   .filter(lambda w: sum(w) > 1e-6))
    total = sum(weights)
    alts = tuple(f"c{i}" for i in range(k))
    chosen = draw(st.integers(0, k - 1))
    label = draw(st.integers(0, k - 1))
    return Decision(1, alts, tuple(w / total for w in weights), alts[chosen], alts[label])


decision_lists = st.lists(decision(), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(decision_lists, st.integers(1, 30))
def test_metric_ranges(ds, bins):
    m = evaluate(ds, bins)
    assert 0.0 <= m.accuracy <= 1.0
    assert 0.0 <= m.brier <= 2.0 + 1e-12
    assert 0.0 <= m.ece <= 1.0
    assert 0.0 <= m.mce <= 1.0
    assert m.ece <= m.mce + 1e-12           # a weighted mean never exceeds the maximum
    assert sum(b.count for b in m.bins) == len(ds)


@settings(max_examples=100, deadline=None)
@given(decision_lists, st.integers(1, 30), st.randoms(use_true_random=False))
def test_order_of_lines_changes_nothing(ds, bins, rnd):
    shuffled = list(ds)
    rnd.shuffle(shuffled)
    a, b = evaluate(ds, bins), evaluate(shuffled, bins)
    assert a.n == b.n and a.accuracy == b.accuracy
    assert [x.count for x in a.bins] == [x.count for x in b.bins]
    for name in ("brier", "ece", "mce"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(decision_lists, st.randoms(use_true_random=False))
def test_order_of_alternatives_changes_nothing(ds, rnd):
    def permuted(d):
        order = list(range(len(d.alternatives)))
        rnd.shuffle(order)
        return Decision(d.line, tuple(d.alternatives[i] for i in order),
                        tuple(d.posterior[i] for i in order), d.chosen, d.label)
    a, b = evaluate(ds), evaluate([permuted(d) for d in ds])
    for name in ("accuracy", "brier", "ece", "mce"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 12)), min_size=1, max_size=12),
       st.integers(1, 20))
def test_exactly_calibrated_groups_have_zero_ece(groups, bins):
    # a group of m decisions at confidence k/m with exactly k right: every bin then holds whole
    # groups, so its accuracy Σk/Σm equals its mean confidence Σm·(k/m)/Σm
    ds = []
    for m, k in groups:
        k = min(k, m)
        c = k / m
        ds += [dec(AB, [c, 1 - c], "a", "a")] * k + [dec(AB, [c, 1 - c], "a", "b")] * (m - k)
    res = evaluate(ds, bins)
    assert res.ece == pytest.approx(0.0, abs=1e-12)
    assert res.mce == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_sampled_calibrated_data_has_small_ece(seed):
    # right with probability equal to the confidence: only sampling noise remains
    # (about 0.01 per bin at n = 20000), far below 0.03
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0, 1, 20000)
    ok = rng.uniform(0, 1, 20000) < conf
    bins = reliability_bins(conf, ok, 10)
    assert expected_calibration_error(bins) < 0.03


def test_sampled_overconfident_data_has_large_ece():
    # the counterpart, so the previous test cannot pass for a metric that is always small:
    # right with probability conf², a gap of c - c² (mean 1/6 over uniform c)
    rng = np.random.default_rng(0)
    conf = rng.uniform(0, 1, 20000)
    ok = rng.uniform(0, 1, 20000) < conf ** 2
    assert expected_calibration_error(reliability_bins(conf, ok, 10)) == \
        pytest.approx(1 / 6, abs=0.02)


def test_arrays_pad_narrow_decisions_with_zeros():
    arr = DecisionArrays.from_decisions([dec(AB, [0.9, 0.1], "b", "a"),
                                         dec("wxyz", [0.25] * 4, "z", "y")])
    assert arr.posterior.shape == (2, 4)
    assert arr.posterior[0].tolist() == [0.9, 0.1, 0.0, 0.0]
    assert arr.chosen_index.tolist() == [1, 3] and arr.label_index.tolist() == [0, 2]
    assert arr.confidence.tolist() == [0.1, 0.25] and arr.correct.tolist() == [False, False]
    assert brier_score(arr.posterior, arr.label_index) == pytest.approx(
        ((0.9 - 1) ** 2 + 0.1 ** 2 + (0.25 ** 2) * 3 + 0.75 ** 2) / 2)
