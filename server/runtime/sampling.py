"""Token sampling over numpy logits: repeat penalty, greedy, temperature, top-k, top-p, min-p.

Order (documented in docs/generation.md): the grammar mask first (disallowed logits are -inf),
then the repeat penalty, then temperature scaling, then top-k, top-p and min-p on the scaled
distribution, then one draw from the seeded generator. Only the finite logits are ever
sorted or exponentiated: under a grammar that is usually a small fraction of the vocabulary.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

import numpy as np

# llama.cpp's default window for the repeat penalty
REPEAT_LAST_N = 64


class NoTokenAllowed(RuntimeError):
    """Every logit is -inf: nothing can be sampled (a grammar dead end)."""


def apply_repeat_penalty(logits: np.ndarray, recent: Iterable[int], penalty: float) -> None:
    """CTRL-style penalty in place: each distinct recent token's logit is divided by `penalty`
    when positive and multiplied by it when negative (so it always becomes less likely)."""
    if penalty == 1.0:
        return
    ids = np.unique(np.fromiter(recent, dtype=np.int64))
    if ids.size == 0:
        return
    ids = ids[(ids >= 0) & (ids < logits.shape[0])]
    v = logits[ids]
    finite = np.isfinite(v)
    v = np.where(v > 0, v / penalty, v * penalty)
    logits[ids[finite]] = v[finite]


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max()
    z = x - m
    return z - np.log(np.exp(z).sum())


def logprobs_of(logits: np.ndarray, chosen: int, k: int) -> Tuple[float, List[Tuple[int, float]]]:
    """Log-probability of `chosen` and the k most likely ids (log-probs), over the finite logits
    as given (masked and penalised, before temperature)."""
    idx = np.flatnonzero(np.isfinite(logits))
    lp = _log_softmax(logits[idx].astype(np.float64))
    pos = np.searchsorted(idx, chosen)
    chosen_lp = float(lp[pos]) if pos < idx.size and idx[pos] == chosen else float("-inf")
    top: List[Tuple[int, float]] = []
    if k > 0:
        kk = min(k, idx.size)
        part = np.argpartition(-lp, kk - 1)[:kk]
        part = part[np.lexsort((idx[part], -lp[part]))]
        top = [(int(idx[j]), float(lp[j])) for j in part]
    return chosen_lp, top


class Sampler:
    """One generation's sampler: the parameters and a seeded random generator."""

    def __init__(self, *, temperature: float = 0.8, top_p: float = 1.0, top_k: int = 0,
                 min_p: float = 0.0, seed: Optional[int] = None):
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0.0 < top_p <= 1.0:
            raise ValueError("top_p must be in (0, 1]")
        if top_k < 0:
            raise ValueError("top_k must be >= 0")
        if not 0.0 <= min_p <= 1.0:
            raise ValueError("min_p must be in [0, 1]")
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.top_k = int(top_k)
        self.min_p = float(min_p)
        self.rng = np.random.default_rng(seed)

    def sample(self, logits: np.ndarray) -> int:
        if self.temperature == 0.0:
            # greedy: argmax over the whole row (the first of ties, the lowest id); only a
            # row whose largest entry is not finite (all masked, NaN, +inf) takes the long way
            j = int(np.argmax(logits))
            if np.isfinite(logits[j]):
                return j
        finite = np.isfinite(logits)
        if finite.all():
            # no mask: the row itself, with no gather (most text steps)
            idx = None
            x = logits.astype(np.float64)
        else:
            idx = np.flatnonzero(finite)
            if idx.size == 0:
                raise NoTokenAllowed("no token is allowed at this point")
            x = logits[idx].astype(np.float64)
        if self.temperature == 0.0 or x.size == 1:
            j = int(np.argmax(x))                   # ties: the lowest id
            return j if idx is None else int(idx[j])
        if idx is None:
            idx = np.arange(x.size)
        x /= self.temperature
        if 0 < self.top_k < x.size:
            keep = np.argpartition(-x, self.top_k - 1)[:self.top_k]
            idx, x = idx[keep], x[keep]
        x -= x.max()
        p = np.exp(x, out=x)
        p /= p.sum()
        if self.top_p < 1.0 or self.min_p > 0.0:
            idx, p = self._head(idx, p)
            p = p / p.sum()
        r = self.rng.random()
        j = int(np.searchsorted(np.cumsum(p), r, side="right"))
        return int(idx[min(j, idx.size - 1)])

    def _head(self, idx: np.ndarray, p: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The ids and probabilities top-p and min-p keep, most likely first (ties in the
        order given). The same head as a stable sort of every probability, without sorting
        them all (a stable sort of 49k float64s is ~4 ms, ten times the rest of a draw):
        only the candidates at or above a threshold are sorted, the threshold lowered until
        their mass reaches top_p. All the probabilities at or above it are in, so they are
        the sorted order's first entries, and the head's cumulative sums are the same."""
        top = float(p.max())
        # min-p keeps exactly the probabilities at or above min_p times the largest (the
        # largest among them), and top-p then no more than those; top-p alone starts higher
        cut = self.min_p * top if self.min_p > 0.0 else top * 1e-3
        while True:
            cand = np.flatnonzero(p >= cut)
            order = cand[np.argsort(-p[cand], kind="stable")]
            head = p[order]
            n = head.size
            if self.top_p < 1.0:
                cs = np.cumsum(head)
                if cs[-1] >= self.top_p:
                    n = int(np.searchsorted(cs, self.top_p)) + 1
                elif self.min_p == 0.0 and n < p.size:
                    cut = cut * 1e-3 if cut > 1e-300 else 0.0
                    continue
            break
        return idx[order[:n]], head[:n]
