"""Generation benchmark on the default model (SmolLM2-135M-Instruct, Q4_1), one run each, greedy.

    python scripts/bench_generate.py [-m MODEL.gguf] [--tokens 128] [--threads 1] [--repeat 1]

Prints a markdown table:
- tokens/s unconstrained vs constrained (same prompt, same max_tokens, grammar tables warm):
  a grammar allowing any text (greedy: the very same tokens) and a JSON schema;
- a schema with long fixed keys with and without fast-forward (forward passes, tokens/s);
- time to first token with a cold grammar (cache cleared: compile + first-visit mask tables)
  and with a cached one (cengine.CACHE hit).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cengine  # noqa: E402
from server.runtime.default_model import default_model_path  # noqa: E402
from server.runtime.model import Model  # noqa: E402
from server.runtime.types import FinishEvent, SamplingParams, TokenEvent  # noqa: E402

STORY_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "story": {"type": "string"}},
    "required": ["title", "story"],
}
ANY_TEXT = "[^\\x00]*"
LONG_KEYS_SCHEMA = {
    "type": "object",
    "properties": {
        "customer_full_legal_name": {"type": "string"},
        "customer_primary_billing_address": {"type": "string"},
        "order_identifier_from_the_shop_system": {"type": "integer"},
        "was_the_order_delivered_on_time": {"type": "boolean"},
        "customer_satisfaction_rating_category": {"enum": ["happy", "neutral", "unhappy"]},
    },
    "required": ["customer_full_legal_name", "customer_primary_billing_address",
                 "order_identifier_from_the_shop_system", "was_the_order_delivered_on_time",
                 "customer_satisfaction_rating_category"],
}


REPEAT = 1


def timed(model, prompt, grammar, max_tokens):
    """Fastest of REPEAT runs: (seconds, time to first token, finish event)."""
    return min((_timed_once(model, prompt, grammar, max_tokens) for _ in range(REPEAT)),
               key=lambda r: r[0])


def _timed_once(model, prompt, grammar, max_tokens):
    t0 = time.perf_counter()
    first = None
    fin = None
    for ev in model.generate(prompt, grammar=grammar,
                             params=SamplingParams(max_tokens=max_tokens, temperature=0.0)):
        if isinstance(ev, TokenEvent) and first is None:
            first = time.perf_counter() - t0
        elif isinstance(ev, FinishEvent):
            fin = ev
    return time.perf_counter() - t0, first, fin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per row, keep the fastest (greedy runs are identical; on a shared "
                         "machine the fastest is the least disturbed)")
    args = ap.parse_args()
    global REPEAT
    REPEAT = max(1, args.repeat)
    path = args.model or str(default_model_path())
    t = time.perf_counter()
    model = Model(path, n_ctx=2048, n_threads=args.threads)
    load = time.perf_counter() - t

    rows = []

    def row(name, secs, fin, ttft=None):
        n = fin.completion_tokens
        rows.append((name, n, fin.forward_passes, fin.fast_forward_tokens, secs,
                     n / secs if secs > 0 else float("nan"), ttft))

    story = model.render_chat([{"role": "user", "content":
                                "Write a long story about a lighthouse keeper and a storm, as JSON "
                                "with a title and the story."}])
    # one warm-up so llama.cpp's first-call allocations are not charged to either side
    timed(model, story, None, 4)

    secs, _, fin = timed(model, story, None, args.tokens)
    row("unconstrained", secs, fin)
    # a grammar that allows every text: greedy picks the same tokens as unconstrained, so
    # the difference is the cost of masking alone at the same length
    ga = cengine.compile_regex(ANY_TEXT)
    timed(model, story, ga, args.tokens)
    secs, _, fin = timed(model, story, ga, args.tokens)
    row(f"constrained, regex {ANY_TEXT} (same tokens)", secs, fin)
    g = cengine.compile_json_schema(STORY_SCHEMA)
    timed(model, story, g, args.tokens)            # warm the grammar's mask tables
    secs, _, fin = timed(model, story, g, args.tokens)
    row("constrained (JSON schema, warm tables)", secs, fin)

    order = model.render_chat([{"role": "user", "content":
                                "Extract the order: Ada Lovelace, 12 St James's Square, London, "
                                "order 80421, arrived two days late, she was annoyed."}])
    gk = cengine.compile_json_schema(LONG_KEYS_SCHEMA)
    model.fast_forward = True
    timed(model, order, gk, args.tokens)           # warm
    for ff in (False, True):
        model.fast_forward = ff
        secs, _, fin = timed(model, order, gk, args.tokens)
        row(f"long fixed keys, fast-forward {'on' if ff else 'off'}", secs, fin)
    model.fast_forward = True

    # time to first token: cold (cache cleared, new tables) vs cached grammar
    cengine.CACHE.clear()
    t0 = time.perf_counter()
    gc = cengine.compile_json_schema(LONG_KEYS_SCHEMA)
    secs, ttft_cold, fin = _timed_once(model, order, gc, 1)
    cold = time.perf_counter() - t0 - secs + ttft_cold
    t0 = time.perf_counter()
    gc2 = cengine.compile_json_schema(LONG_KEYS_SCHEMA)
    assert gc2 is gc, "the second compile should hit cengine.CACHE"
    secs, ttft_warm, fin = _timed_once(model, order, gc2, 1)
    warm = time.perf_counter() - t0 - secs + ttft_warm

    print(f"model: {Path(path).name}, threads: {model.runtime.n_threads}, "
          f"load {load:.2f} s, cpu count {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print()
    print("| run | tokens | forward passes | fast-forwarded | seconds | tokens/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, passes, ffn, secs, tps, _ in rows:
        print(f"| {name} | {n} | {passes} | {ffn} | {secs:.2f} | {tps:.1f} |")
    print()
    print("| time to first token | ms |")
    print("|---|---:|")
    print(f"| cold grammar (compile + first mask tables) | {cold * 1000:.1f} |")
    print(f"| cached grammar (cengine.CACHE hit) | {warm * 1000:.1f} |")


if __name__ == "__main__":
    main()
