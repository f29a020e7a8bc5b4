"""Batch mask fill: a step's masks for 1, 8 and 64 sequences at once, cengine against
llguidance's batch fill, on the same schemas, tokens and vocabulary (llama-bpe, 128k tokens).

    python scripts/bench_batch_fill.py [--batches 1,8,64] [--threads 1,2] [--rounds 3]

The sequences are the project's tool schemas with their valid instances
(testdata/bench_schemas/tools), taken in turn until the batch is full; each sequence's tokens
are its instance as json.dumps writes it, tokenised by llama.cpp. Every sequence is walked once
before the timing, so both engines' per-grammar tables are warm (a serving engine's steady
state; first visits are issue 30's). Then, step by step, one timed call fills the masks of
every sequence still running, and each sequence consumes its next token.

- cengine: `Matcher.fill_mask` per sequence, in a loop (1 thread) or from a thread pool
  (the fill releases the GIL), as `cengine.contrib.hf.LogitsProcessor(n_threads=...)` does;
- llguidance: `llguidance.numpy.fill_next_token_bitmask_par` over an `LLExecutor` of that many
  threads.

Prints per step: mean milliseconds for the whole batch, and microseconds per sequence.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import bench_schemas  # noqa: E402
from bench_mask import Engines  # noqa: E402


def sequences(eng: Engines, n: int):
    """n (cengine grammar, llguidance grammar text, tokens), the tool instances in turn
        (schemas both engines compile)."""
    per_schema = []
    for e in bench_schemas.tool_entries():
        try:        # (a schema one of the engines refuses is left out)
            g = eng.cengine.compile_json_schema(e.schema, **eng.compile_options)
            ll = eng.llguidance.LLMatcher.grammar_from_json_schema(e.schema)
            if eng.llguidance.LLMatcher(eng.lltok, ll).is_error():
                continue
        except (eng.cengine.CompileError, ValueError):
            continue
        per_schema.append([(g, ll, eng.tokenize(json.dumps(inst))) for inst in e.instances])
    # round robin over the schemas: a batch mixes as many schemas as it has room for
    pool = [s[k] for k in range(max(map(len, per_schema), default=0))
            for s in per_schema if k < len(s)]
    # (an instance one of the engines does not walk to its end is left out)
    pool = [q for q in pool if _walks(eng, q)]
    if not pool:
        raise SystemExit("no tool schemas found")
    return [pool[i % len(pool)] for i in range(n)]


def _walks(eng: Engines, seq) -> bool:
    g, ll, toks = seq
    ours = g.matcher(eng.vocab)
    theirs = eng.llguidance.LLMatcher(eng.lltok, ll)
    return all(ours.accept_token(t) for t in toks) and \
        all(theirs.consume_token(t) for t in toks)


def _steps(seqs, fill_live, consume, engine: str):
    """Step by step: one timed fill of every running sequence's mask, then each consumes its
    next token. -> [(ns, running sequences)]"""
    steps = []
    k = 0
    while True:
        live = [i for i, (_, _, toks) in enumerate(seqs) if k < len(toks)]
        if not live:
            return steps
        t0 = time.perf_counter_ns()
        fill_live(live)
        steps.append((time.perf_counter_ns() - t0, len(live)))
        for i in live:
            if not consume(i, seqs[i][2][k]):
                raise SystemExit(f"{engine} refused a token of sequence {i}")
        k += 1


def run_ours(eng: Engines, seqs, threads: int):
    words = eng.cengine.mask_words(eng.vocab.size)
    masks = np.zeros((len(seqs), words), np.int32)
    matchers = [g.matcher(eng.vocab) for g, _, _ in seqs]
    pool = concurrent.futures.ThreadPoolExecutor(threads) if threads > 1 else None

    def fill(i):
        matchers[i].fill_mask(masks[i])

    def fill_live(live):
        if pool is not None and len(live) > 1:
            list(pool.map(fill, live))
        else:
            for i in live:
                fill(i)
    try:
        return _steps(seqs, fill_live, lambda i, t: matchers[i].accept_token(t), "cengine")
    finally:
        if pool is not None:
            pool.shutdown()


def run_ll(eng: Engines, seqs, threads: int):
    import llguidance.numpy as lln
    ex = eng.llguidance.LLExecutor(threads)
    matchers = [eng.llguidance.LLMatcher(eng.lltok, ll) for _, ll, _ in seqs]
    masks = lln.allocate_token_bitmask(len(seqs), eng.lltok.vocab_size)

    def fill_live(live):
        lln.fill_next_token_bitmask_par(ex, [(matchers[i], i) for i in live], masks)
    return _steps(seqs, fill_live, lambda i, t: matchers[i].consume_token(t), "llguidance")


def summary(steps):
    ns = np.array([s for s, _ in steps], np.float64)
    per = np.array([s / n for s, n in steps], np.float64)
    return ns.mean() / 1e6, per.mean() / 1e3, np.percentile(ns, 99) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each cell; the fastest kept")
    args = ap.parse_args()
    eng = Engines()
    batches = [int(x) for x in args.batches.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    seqs_all = sequences(eng, max(batches))
    # warm: every grammar's tables on both engines
    run_ours(eng, seqs_all, 1)
    run_ll(eng, seqs_all, 1)
    n_schemas = len({id(g) for g, _, _ in seqs_all})
    print(f"vocabulary llama-bpe ({eng.vocab.size} tokens), {n_schemas} tool schemas, tables "
          f"warm, fastest of {args.rounds} runs a cell, {os.cpu_count()} cores\n")
    print("| batch | threads | engine | step mean ms | µs a sequence | step p99 ms |")
    print("|---:|---:|---|---:|---:|---:|")
    for b in batches:
        seqs = seqs_all[:b]
        for t in threads:
            for name, fn in (("cengine", run_ours), ("llguidance", run_ll)):
                best = min((summary(fn(eng, seqs, t)) for _ in range(args.rounds)),
                           key=lambda r: r[0])
                print(f"| {b} | {t} | {name} | {best[0]:.3f} | {best[1]:.1f} | {best[2]:.3f} |",
                      flush=True)


if __name__ == "__main__":
    main()
