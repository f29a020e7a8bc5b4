"""Calibration metrics over decisions, exactly as the contract defines them.

Over n decisions with posterior p (over K alternatives), chosen alternative c and label y:
  accuracy   = share of decisions with c == y
  brier      = mean over decisions of sum_k (p_k - [k == y])^2          (multi-class, in [0, 2])
  confidence = p_c, the posterior of the chosen alternative
  bins       = equal-width over [0, 1]; confidence x falls in bin min(floor(x * bins), bins - 1)
  ece        = sum over bins of (n_b / n) * |accuracy_b - mean confidence_b|
  mce        = max over non-empty bins of |accuracy_b - mean confidence_b|
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .decisions import Decision

DEFAULT_BINS = 10


@dataclass(frozen=True)
class Bin:
    """One equal-width confidence bin; accuracy and mean_confidence are None when it is empty."""
    index: int
    lower: float
    upper: float
    count: int
    accuracy: Optional[float]
    mean_confidence: Optional[float]

    @property
    def gap(self) -> Optional[float]:
        """accuracy - mean confidence: > 0 underconfident, < 0 overconfident."""
        if self.accuracy is None or self.mean_confidence is None:     # an empty bin
            return None
        return self.accuracy - self.mean_confidence


@dataclass(frozen=True)
class CalibrationMetrics:
    n: int
    accuracy: float
    brier: float
    ece: float
    mce: float
    bins: Tuple[Bin, ...]

    @property
    def n_bins(self) -> int:
        return len(self.bins)


@dataclass(frozen=True)
class DecisionArrays:
    """Decisions as arrays; posterior rows are padded with zeros to the widest decision, which
    adds nothing to the Brier sum since a padded column is never the label."""
    posterior: np.ndarray       # (n, K_max) float64
    chosen_index: np.ndarray    # (n,) int64
    label_index: np.ndarray     # (n,) int64

    @classmethod
    def from_decisions(cls, decisions: Sequence[Decision]) -> "DecisionArrays":
        n = len(decisions)
        width = max((len(d.alternatives) for d in decisions), default=1)
        posterior = np.zeros((n, width), dtype=np.float64)
        for i, d in enumerate(decisions):
            posterior[i, :len(d.posterior)] = d.posterior
        chosen = np.fromiter((d.chosen_index for d in decisions), dtype=np.int64, count=n)
        label = np.fromiter((d.label_index for d in decisions), dtype=np.int64, count=n)
        return cls(posterior, chosen, label)

    @property
    def confidence(self) -> np.ndarray:
        return self.posterior[np.arange(len(self.chosen_index)), self.chosen_index]

    @property
    def correct(self) -> np.ndarray:
        return self.chosen_index == self.label_index


def _nonempty(name: str, a: np.ndarray) -> None:
    if a.shape[0] == 0:
        raise ValueError(f"{name}: no decisions")


def accuracy(correct) -> float:
    correct = np.asarray(correct, dtype=bool)
    _nonempty("accuracy", correct)
    return float(correct.mean())


def brier_score(posterior, label_index) -> float:
    """Multi-class Brier score: mean of sum_k (p_k - onehot(label)_k)^2."""
    posterior = np.asarray(posterior, dtype=np.float64)
    label_index = np.asarray(label_index, dtype=np.int64)
    _nonempty("brier", posterior)
    target = np.zeros_like(posterior)
    target[np.arange(posterior.shape[0]), label_index] = 1.0
    return float(((posterior - target) ** 2).sum(axis=1).mean())


def bin_index(confidence, n_bins: int) -> np.ndarray:
    """The contract's bin of each confidence: min(floor(c * bins), bins - 1)."""
    if n_bins < 1:
        raise ValueError(f"bins must be >= 1, got {n_bins}")
    c = np.asarray(confidence, dtype=np.float64)
    if np.any((c < 0) | (c > 1)) or not np.all(np.isfinite(c)):
        raise ValueError("confidences must lie in [0, 1]")
    return np.minimum(np.floor(c * n_bins).astype(np.int64), n_bins - 1)


def reliability_bins(confidence, correct, n_bins: int = DEFAULT_BINS) -> Tuple[Bin, ...]:
    """Per-bin count, accuracy and mean confidence over equal-width bins of [0, 1]."""
    c = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(correct, dtype=bool)
    if c.shape != ok.shape:
        raise ValueError("confidence and correct differ in length")
    idx = bin_index(c, n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    hits = np.bincount(idx, weights=ok.astype(np.float64), minlength=n_bins)
    conf_sums = np.bincount(idx, weights=c, minlength=n_bins)
    out = []
    for b in range(n_bins):
        k = int(counts[b])
        out.append(Bin(index=b, lower=b / n_bins, upper=(b + 1) / n_bins, count=k,
                       accuracy=float(hits[b] / k) if k else None,
                       mean_confidence=float(conf_sums[b] / k) if k else None))
    return tuple(out)


def expected_calibration_error(bins: Sequence[Bin]) -> float:
    n = sum(b.count for b in bins)
    if n == 0:
        raise ValueError("ece: no decisions")
    # counts times gaps summed exactly, divided once: the weights n_b / n add up to 1 exactly
    return math.fsum(b.count * abs(b.gap) for b in bins if b.gap is not None) / n


def maximum_calibration_error(bins: Sequence[Bin]) -> float:
    gaps = [abs(b.gap) for b in bins if b.gap is not None]
    if not gaps:
        raise ValueError("mce: no decisions")
    return float(max(gaps))


def evaluate(decisions: Sequence[Decision], n_bins: int = DEFAULT_BINS) -> CalibrationMetrics:
    """All metrics of the report over validated decisions."""
    if not decisions:
        raise ValueError("no decisions to evaluate")
    return evaluate_arrays(DecisionArrays.from_decisions(decisions), n_bins)


def evaluate_arrays(arrays: DecisionArrays, n_bins: int = DEFAULT_BINS) -> CalibrationMetrics:
    bins = reliability_bins(arrays.confidence, arrays.correct, n_bins)
    return CalibrationMetrics(
        n=int(arrays.chosen_index.shape[0]),
        accuracy=accuracy(arrays.correct),
        brier=brier_score(arrays.posterior, arrays.label_index),
        ece=expected_calibration_error(bins),
        mce=maximum_calibration_error(bins),
        bins=bins,
    )
