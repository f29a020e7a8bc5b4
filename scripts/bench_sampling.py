"""Sampling cost: the sampler (server/runtime/sampling.py) against the first one, kept as the
test oracle (tests/oracles/sampling_reference.py), per draw over a whole vocabulary's logits
and in one stream's decoding on the default model.

    python scripts/bench_sampling.py [--repeat 3] [--tokens 128] [--no-model]

Prints two markdown tables: µs per draw over 49,152 random logits (SmolLM2's vocabulary size)
for the usual parameter sets, and tokens/s of one stream (SmolLM2-135M-Instruct, one thread,
`Model.generate`) with each sampler, runs alternated, the same seed, so both draw the very
same tokens (checked).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from oracles.sampling_reference import ReferenceSampler  # noqa: E402
from server.runtime.sampling import Sampler  # noqa: E402

PARAMS = [("greedy", dict(temperature=0.0)), ("temperature 1", dict(temperature=1.0)),
          ("top-p 0.95", dict(temperature=0.8, top_p=0.95)),
          ("min-p 0.05", dict(temperature=0.8, min_p=0.05)),
          ("top-k 40", dict(temperature=0.8, top_k=40)),
          ("top-k 40, top-p 0.9", dict(temperature=0.8, top_k=40, top_p=0.9))]


def per_draw(repeat: int) -> None:
    logits = (np.random.default_rng(0).standard_normal(49152) * 3).astype(np.float32)
    print("| parameters | first sampler µs | sampler µs | ratio |")
    print("|---|---:|---:|---:|")
    for name, kw in PARAMS:
        best = {}
        for _ in range(repeat):
            for label, cls in (("ref", ReferenceSampler), ("new", Sampler)):
                s = cls(seed=1, **kw)
                t0 = time.perf_counter()
                for _ in range(100):
                    s.sample(logits)
                best[label] = min(best.get(label, 1e9), (time.perf_counter() - t0) / 100 * 1e6)
        ratio = best["new"] / best["ref"]
        print(f"| {name} | {best['ref']:.0f} | {best['new']:.0f} | {ratio:.2f} |")


def one_stream(repeat: int, tokens: int) -> None:
    import server.runtime.model as model_module
    from server.runtime.default_model import default_model_path
    from server.runtime.model import Model
    from server.runtime.types import SamplingParams, TokenEvent
    model = Model(str(default_model_path()), n_ctx=2048, n_threads=1)
    prompt = model.render_chat([{"role": "user", "content":
                                 "Write a long story about a lighthouse keeper and a storm."}])
    print()
    print("| parameters | tokens | first sampler tokens/s | sampler tokens/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, kw in PARAMS[1:3]:
        params = SamplingParams(max_tokens=tokens, seed=3, **kw)
        best, drawn = {}, {}
        for _ in range(repeat):
            for label, cls in (("ref", ReferenceSampler), ("new", Sampler)):
                model_module.Sampler = cls
                t0 = time.perf_counter()
                out = [ev.token_id for ev in model.generate(prompt, params=params)
                       if isinstance(ev, TokenEvent)]
                rate = len(out) / (time.perf_counter() - t0)
                best[label] = max(best.get(label, 0.0), rate)
                drawn.setdefault(label, out)
        model_module.Sampler = Sampler
        if drawn["ref"] != drawn["new"]:
            raise SystemExit(f"{name}: the samplers drew different tokens")
        print(f"| {name} | {len(drawn['new'])} | {best['ref']:.1f} | {best['new']:.1f} | "
              f"{best['new'] / best['ref']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--no-model", action="store_true", help="only the per-draw table")
    args = ap.parse_args()
    per_draw(args.repeat)
    if not args.no_model:
        one_stream(args.repeat, args.tokens)


if __name__ == "__main__":
    main()
