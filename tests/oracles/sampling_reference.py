"""The sampler as it was written first (server/runtime/sampling.py before its fast paths): a
stable sort of every finite logit for top-p and min-p, the finite logits gathered even when
all are. Kept as the oracle the fast sampler must agree with draw for draw
(tests/test_generate_sampling.py): same parameters, same seed, same tokens."""
from __future__ import annotations

import numpy as np

from server.runtime.sampling import NoTokenAllowed, Sampler


class ReferenceSampler(Sampler):
    """Sampler's parameters and generator, the first sample()."""

    def sample(self, logits: np.ndarray) -> int:
        idx = np.flatnonzero(np.isfinite(logits))
        if idx.size == 0:
            raise NoTokenAllowed("no token is allowed at this point")
        x = logits[idx].astype(np.float64)
        if self.temperature == 0.0 or idx.size == 1:
            return int(idx[int(np.argmax(x))])      # ties: the lowest id
        x = x / self.temperature
        if 0 < self.top_k < x.size:
            keep = np.argpartition(-x, self.top_k - 1)[:self.top_k]
            idx, x = idx[keep], x[keep]
        p = np.exp(x - x.max())
        p /= p.sum()
        if self.top_p < 1.0 or self.min_p > 0.0:
            order = np.argsort(-p, kind="stable")
            idx, p = idx[order], p[order]
            n = p.size
            if self.top_p < 1.0:
                n = min(n, int(np.searchsorted(np.cumsum(p), self.top_p)) + 1)
            if self.min_p > 0.0:
                n = min(n, max(1, int(np.count_nonzero(p >= self.min_p * p[0]))))
            idx, p = idx[:n], p[:n]
            p = p / p.sum()
        r = self.rng.random()
        j = int(np.searchsorted(np.cumsum(p), r, side="right"))
        return int(idx[min(j, idx.size - 1)])
