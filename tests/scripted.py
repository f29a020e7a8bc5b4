"""A sampler that writes a script: the decode loop's own masks and grammars run, the tokens
are chosen by the test (tests of what the loop does with a given model output)."""
from __future__ import annotations

import numpy as np


class ScriptedSampler:
    """Samples the scripted token ids in order (each must be allowed by the mask; with
    `lenient`, a refused one is recorded in `refused` and skipped), then the most likely
    allowed token."""

    script: list = []
    refused: list = []
    lenient = False

    def __init__(self, **kw):
        self.left = list(ScriptedSampler.script)

    def sample(self, logits):
        while self.left:
            t = self.left.pop(0)
            if np.isfinite(logits[t]):
                return t
            ScriptedSampler.refused.append(t)
            if not ScriptedSampler.lenient:
                raise AssertionError(f"the mask refused scripted token {t}")
        return int(np.flatnonzero(np.isfinite(logits))[np.argmax(
            logits[np.isfinite(logits)])])
