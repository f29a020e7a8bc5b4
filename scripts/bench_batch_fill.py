"""Batch mask fill: a step's masks for 1, 8 and 64 sequences at once, cengine against
llguidance's and xgrammar's batch fills, on the same schemas, tokens and vocabulary (llama-bpe,
128k tokens).

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
  threads;
- xgrammar (where installed): `BatchGrammarMatcher(max_threads).batch_fill_next_token_bitmask`,
  its tokenizer from transformers' conversion of the same GGUF vocabulary. Only the schemas
  and instances all three engines compile and walk are used.

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


class XGrammar:
    """xgrammar over the same vocabulary (None where it is not installed)."""

    def __init__(self, eng: Engines):
        import transformers
        import xgrammar
        from tests.material import vocab_gguf
        self.xgr = xgrammar
        path = vocab_gguf("llama-bpe")
        tok = transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                                   gguf_file=path.name)
        self.info = xgrammar.TokenizerInfo.from_huggingface(tok, vocab_size=eng.vocab.size)
        self.compiler = xgrammar.GrammarCompiler(self.info)

    def compile(self, schema):
        # any_whitespace and strict_mode=False: JSON Schema's question, as the others answer
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True,
                                                 strict_mode=False)

    @classmethod
    def load(cls, eng: Engines):
        try:
            return cls(eng)
        except ImportError:
            return None


def sequences(eng: Engines, n: int, xg=None):
    """n (cengine grammar, llguidance grammar text, tokens, xgrammar compiled or None), the
    tool instances in turn (schemas every engine compiles)."""
    per_schema = []
    for e in bench_schemas.tool_entries():
        try:        # (a schema one of the engines refuses is left out)
            g = eng.cengine.compile_json_schema(e.schema, **eng.compile_options)
            ll = eng.llguidance.LLMatcher.grammar_from_json_schema(e.schema)
            if eng.llguidance.LLMatcher(eng.lltok, ll).is_error():
                continue
            x = xg.compile(e.schema) if xg is not None else None
        except (eng.cengine.CompileError, ValueError, RuntimeError):
            continue
        per_schema.append([(g, ll, eng.tokenize(json.dumps(inst)), x) for inst in e.instances])
    # round robin over the schemas: a batch mixes as many schemas as it has room for
    pool = [s[k] for k in range(max(map(len, per_schema), default=0))
            for s in per_schema if k < len(s)]
    # (an instance one of the engines does not walk to its end is left out)
    pool = [q for q in pool if _walks(eng, q, xg)]
    if not pool:
        raise SystemExit("no tool schemas found")
    return [pool[i % len(pool)] for i in range(n)]


def _walks(eng: Engines, seq, xg=None) -> bool:
    g, ll, toks, x = seq
    ours = g.matcher(eng.vocab)
    theirs = eng.llguidance.LLMatcher(eng.lltok, ll)
    xm = xg.xgr.GrammarMatcher(x) if xg is not None else None
    return all(ours.accept_token(t) for t in toks) and \
        all(theirs.consume_token(t) for t in toks) and \
        (xm is None or all(xm.accept_token(t) for t in toks))


def _steps(seqs, fill_live, consume, engine: str):
    """Step by step: one timed fill of every running sequence's mask, then each consumes its
    next token. -> [(ns, running sequences)]"""
    steps = []
    k = 0
    while True:
        live = [i for i, seq in enumerate(seqs) if k < len(seq[2])]
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
    matchers = [seq[0].matcher(eng.vocab) for seq in seqs]
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
    matchers = [eng.llguidance.LLMatcher(eng.lltok, seq[1]) for seq in seqs]
    masks = lln.allocate_token_bitmask(len(seqs), eng.lltok.vocab_size)

    def fill_live(live):
        lln.fill_next_token_bitmask_par(ex, [(matchers[i], i) for i in live], masks)
    return _steps(seqs, fill_live, lambda i, t: matchers[i].consume_token(t), "llguidance")


def run_xg(xg, seqs, threads: int):
    xgr = xg.xgr
    batch = xgr.BatchGrammarMatcher(max_threads=threads)
    matchers = [xgr.GrammarMatcher(seq[3]) for seq in seqs]
    masks = xgr.allocate_token_bitmask(len(seqs), xg.info.vocab_size)

    def fill_live(live):
        batch.batch_fill_next_token_bitmask([matchers[i] for i in live], masks, indices=live)
    return _steps(seqs, fill_live, lambda i, t: matchers[i].accept_token(t), "xgrammar")


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
    xg = XGrammar.load(eng)
    batches = [int(x) for x in args.batches.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    seqs_all = sequences(eng, max(batches), xg)
    runners = [("cengine", lambda s, t: run_ours(eng, s, t)),
               ("llguidance", lambda s, t: run_ll(eng, s, t))]
    if xg is not None:
        runners.append(("xgrammar", lambda s, t: run_xg(xg, s, t)))
    # warm: every grammar's tables on every engine
    for _, fn in runners:
        fn(seqs_all, 1)
    n_schemas = len({id(seq[0]) for seq in seqs_all})
    print(f"vocabulary llama-bpe ({eng.vocab.size} tokens), {n_schemas} tool schemas, tables "
          f"warm, fastest of {args.rounds} runs a cell, {os.cpu_count()} cores\n")
    print("| batch | threads | engine | step mean ms | µs a sequence | step p99 ms |")
    print("|---:|---:|---|---:|---:|---:|")
    for b in batches:
        seqs = seqs_all[:b]
        for t in threads:
            for name, fn in runners:
                best = min((summary(fn(seqs, t)) for _ in range(args.rounds)),
                           key=lambda r: r[0])
                print(f"| {b} | {t} | {name} | {best[0]:.3f} | {best[1]:.1f} | {best[2]:.3f} |",
                      flush=True)


if __name__ == "__main__":
    main()
