"""What a unified KV cache's spread costs a decoding step (issue 28's text gap to llama-server).

llamay keeps every sequence (decoders, probe branches, prompt-cache slots) in one unified KV
cache, so that a copied prefix shares cells; llama-server `-np N` gives each slot a stream of
its own (`kv_unified` is off by default). In a unified cache every row of a step attends over
all cells up to the highest one in use (llama.cpp's n_kv), masked to its own sequence, so
cells held far up the cache (other requests' content, parked prompts) cost every step.

    python scripts/bench_kv_cells.py [--spread 0,1000,4000,12000] [--steps 48] [--repeat 2]

Per configuration, a fresh context (SmolLM2-135M, 8 sequences of 2,048 cells, 1 decode and
2 batch threads): 8 prompts of 40 tokens, then `--steps` steps of one token for each of the 8
sequences; prints the median and fastest step. `compact`: a unified cache holding only
them; `split`: one stream a sequence (llama-server's default); `spread N`: a unified cache
where a ninth sequence first filled N cells and then dropped all but its last 8, so the 8
sequences sit low while a few cells stay in use up at N.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run_one(mode: str, spread: int, steps: int) -> list:
    import llama_cpp as L
    from server.runtime.default_model import default_model_path
    L.llama_backend_init()
    model = L.llama_model_load_from_file(str(default_model_path()).encode(),
                                         L.llama_model_default_params())
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = 2048 * 8, 512, 512
    cp.n_seq_max = 8 if mode == "split" else 9
    cp.kv_unified = mode != "split"
    cp.n_threads, cp.n_threads_batch, cp.no_perf = 1, 2, True
    ctx = L.llama_init_from_model(model, cp)
    mem = L.llama_get_memory(ctx)
    batch = L.llama_batch_init(512, 0, 9)

    def decode(items):
        batch.n_tokens = len(items)
        for i, (tok, pos, seq, want) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, want
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    if mode == "spread":
        pos = 0
        while pos < spread:
            n = min(512, spread - pos)
            decode([(100 + (i % 50), pos + i, 8, False) for i in range(n)])
            pos += n
        L.llama_memory_seq_rm(mem, 8, 0, spread - 8)
    for s in range(8):
        decode([(200 + s + i, i, s, i == 39) for i in range(40)])
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        decode([(300 + s, 40 + step, s, True) for s in range(8)])
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spread", default="1000,4000,12000")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        times = run_one(args.one[0], int(args.one[1]), args.steps)
        print(statistics.median(times), min(times))
        return
    configs = [("compact", 0), ("split", 0)] + [("spread", int(n))
                                               for n in args.spread.split(",") if n]
    got: dict = {}
    for _ in range(args.repeat):
        for mode, n in configs:
            # each configuration in a process of its own: a fresh context, nothing shared
            out = subprocess.run([sys.executable, __file__, "--one", mode, str(n),
                                  "--steps", str(args.steps)], capture_output=True, text=True,
                                 check=True).stdout.split()
            med, best = float(out[-2]), float(out[-1])
            prev = got.get((mode, n))
            got[(mode, n)] = (min(prev[0], med), min(prev[1], best)) if prev else (med, best)
    base = got[("compact", 0)][0]
    print("| cache | cells in use up to | step median ms | fastest ms | vs compact |")
    print("|---|---:|---:|---:|---:|")
    for (mode, n), (med, best) in got.items():
        print(f"| {mode} | {n if n else 8 * 40 + args.steps * 8} | {1e3 * med:.1f} | "
              f"{1e3 * best:.1f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
