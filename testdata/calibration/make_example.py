"""Writes decisions-example.jsonl: synthetic labelled decisions in the shape the server's
llamay_choice_logprobs returns (plus "label" and a "task" field the report ignores).

A simulated classifier that is somewhat overconfident: its logits put `skill` on the true
alternative plus Gaussian noise, sharpened by 1/temperature; it picks the arg-max greedily.
Run from the repository root: python testdata/calibration/make_example.py
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TASKS = {
    "intent": ["refund", "cancel", "track", "other"],
    "sentiment": ["positive", "negative", "neutral"],
    "yes_no": ["yes", "no"],
}


def main(n: int = 150, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    names = list(TASKS)
    lines = []
    for _ in range(n):
        task = names[rng.integers(len(names))]
        alts = TASKS[task]
        label = int(rng.integers(len(alts)))
        logits = rng.normal(0.0, 1.0, len(alts))
        logits[label] += 1.2
        logits /= 0.6                                  # temperature < 1: overconfident
        post = np.exp(logits - logits.max())
        post /= post.sum()
        # sequence log-probabilities: the posterior times the (unknown) mass of all other outputs
        logprobs = np.log(post) + np.log(rng.uniform(0.2, 0.9))
        lines.append(json.dumps({
            "task": task,
            "alternatives": alts,
            "logprobs": [round(float(x), 4) for x in logprobs],
            "posterior": [round(float(x), 6) for x in post],
            "chosen": alts[int(post.argmax())],
            "label": alts[label],
        }))
    out = Path(__file__).with_name("decisions-example.jsonl")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
