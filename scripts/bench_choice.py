"""What llamay_choice_logprobs costs: time per request with and without probing.

    python scripts/bench_choice.py [-m MODEL.gguf] [--requests N] [--threads T] [--json OUT]
    python scripts/bench_choice.py --branches-cost [--prompt-cached] ...

Two cases on the default model (SmolLM2-135M-Instruct) unless -m is given:
* enum: a routing object {"intent": one of 6, "urgent": boolean} (two decisions);
* tools: 6 tools offered, tool_choice required, one call (the tool name is a 6-way decision;
  each tool's one argument is an enum of 3, a second decision).
Each request is a chat prompt (the GGUF's template, tools in the Hermes system block) with its
own user message, greedy (temperature 0, so both runs produce the same output), budget 96
tokens. The KV cache is emptied before every request, so a request pays for its prompt as a
server request with a new conversation does (`--prompt-cached`: the prompt is put in the
cache beforehand, untimed, so only generation is timed: the worst case for the ratio).
Each message runs both ways, alternating which
goes first. The table gives the median and mean wall time per request, the ratio, decisions
per request, the tokens probed per request and the output tokens.

`--branches-cost`: generation without probing only, on a context without branch sequences
(n_branches=0, llama.cpp n_seq_max 1) and on the default one (63 branches, n_seq_max 64,
unified cache), interleaved request by request: what the extra sequences cost a request that
does not probe.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cengine  # noqa: E402
from server.runtime.default_model import default_model_path  # noqa: E402
from server.runtime.model import Model  # noqa: E402
from server.runtime.types import (ChoiceScope, DecisionsEvent, FinishEvent,  # noqa: E402
                                  SamplingParams)
from server.tools import ToolSpec, hermes  # noqa: E402

INTENTS = ["refund", "cancel", "track", "change_address", "billing", "product_question"]
ROUTING = {"type": "object",
           "properties": {"intent": {"enum": INTENTS}, "urgent": {"type": "boolean"}},
           "required": ["intent", "urgent"]}
TOOLS = [ToolSpec(name, desc, {"type": "object",
                               "properties": {"mode": {"enum": ["fast", "normal", "careful"]}},
                               "required": ["mode"]})
         for name, desc in [("get_weather", "Weather forecast for a city"),
                            ("send_email", "Send an email"),
                            ("book_table", "Book a restaurant table"),
                            ("convert_currency", "Convert an amount between currencies"),
                            ("set_reminder", "Set a reminder"),
                            ("search_flights", "Search for flights")]]
MESSAGES = [
    "I want my money back for order 1234.", "Please cancel my subscription.",
    "Where is my parcel? It has been a week.", "I moved, send it to my new address.",
    "Why was I charged twice this month?", "Does the blender work with frozen fruit?",
    "What's the weather in Oslo tomorrow?", "Email Anna that I'm late.",
    "Book a table for two at 8pm.", "How many euros is 100 dollars?",
    "Remind me to call mum at 6.", "Find me a flight to Lisbon on Friday.",
]


def run_one(model, prompt, grammar, scope, cached=False):
    model.runtime.truncate(0)       # a new conversation: the prompt is evaluated in full
    if cached:                      # ... unless the prompt is already in the cache (untimed)
        ids = model.tokenize(prompt)
        model.runtime.eval(ids[:-1])
    t0 = time.perf_counter()
    decisions, finish = [], None
    for ev in model.generate(prompt, grammar=grammar,
                             params=SamplingParams(max_tokens=96, temperature=0.0),
                             choice=scope):
        if isinstance(ev, DecisionsEvent):
            decisions = ev.decisions
        elif isinstance(ev, FinishEvent):
            finish = ev
    return time.perf_counter() - t0, decisions, finish


def bench_case(model, name, prompts, grammar, scope, rounds, cached=False):
    plain, probed, n_dec, n_tok, n_out = [], [], [], [], []
    for r in range(rounds):
        for i, prompt in enumerate(prompts):
            order = [None, scope] if (i + r) % 2 == 0 else [scope, None]
            for sc in order:
                dt, decisions, finish = run_one(model, prompt, grammar, sc, cached)
                if sc is None:
                    plain.append(dt)
                else:
                    probed.append(dt)
                    n_dec.append(len(decisions))
                    n_tok.append(sum(len(q) for d in decisions for q in d.probe_sequences))
                    n_out.append(finish.completion_tokens)
    return {"case": name, "requests": len(plain),
            "plain_median_ms": 1e3 * statistics.median(plain),
            "probed_median_ms": 1e3 * statistics.median(probed),
            "plain_mean_ms": 1e3 * statistics.fmean(plain),
            "probed_mean_ms": 1e3 * statistics.fmean(probed),
            "ratio_median": statistics.median(probed) / statistics.median(plain),
            "ratio_mean": statistics.fmean(probed) / statistics.fmean(plain),
            "decisions": statistics.fmean(n_dec), "probed_tokens": statistics.fmean(n_tok),
            "output_tokens": statistics.fmean(n_out)}


def bench_branches(path, threads, name, prompts, grammar, rounds, cached):
    without = Model(path, n_ctx=2048, n_threads=threads, n_branches=0)
    with_ = Model(path, n_ctx=2048, n_threads=threads)
    times = {0: [], 1: []}
    for r in range(rounds):
        for i, prompt in enumerate(prompts):
            order = [0, 1] if (i + r) % 2 == 0 else [1, 0]
            for k in order:
                dt, _, _ = run_one((without, with_)[k], prompt, grammar, None, cached)
                times[k].append(dt)
    without.close()
    with_.close()
    return {"case": name, "requests": len(times[0]),
            "none_median_ms": 1e3 * statistics.median(times[0]),
            "none_mean_ms": 1e3 * statistics.fmean(times[0]),
            "branches_median_ms": 1e3 * statistics.median(times[1]),
            "branches_mean_ms": 1e3 * statistics.fmean(times[1]),
            "ratio_median": statistics.median(times[1]) / statistics.median(times[0])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", help="GGUF file (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--requests", type=int, default=12, help="distinct messages per case")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the messages")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--prompt-cached", action="store_true",
                    help="time generation only: the prompt is in the KV cache beforehand")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--branches-cost", action="store_true",
                    help="generation without probing, without and with the branch sequences")
    args = ap.parse_args(argv)
    path = args.model or str(default_model_path())
    model = Model(path, n_ctx=2048, n_threads=args.threads)
    msgs = [MESSAGES[i % len(MESSAGES)] for i in range(args.requests)]

    enum_prompts = [model.render_chat([
        {"role": "system", "content": "Classify the customer message. Answer in JSON with the "
                                      "intent (one of " + ", ".join(INTENTS) + ") and whether it "
                                      "is urgent."},
        {"role": "user", "content": m}]) for m in msgs]
    tool_prompts = [model.render_chat([{"role": "user", "content": m}],
                                      tools=[t.openai_shape() for t in TOOLS],
                                      tool_format=hermes) for m in msgs]
    enum_grammar = cengine.compile_json_schema(ROUTING)
    tool_grammar = hermes.HERMES.call_grammar(TOOLS, parallel=False)
    if args.branches_cost:
        model.close()
        rows = [bench_branches(path, args.threads, "6-way enum in an object", enum_prompts,
                               enum_grammar, args.rounds, args.prompt_cached),
                bench_branches(path, args.threads, "6-tool union (required)", tool_prompts,
                               tool_grammar, args.rounds, args.prompt_cached)]
        print(f"model {Path(path).name}, generation without probing, {rows[0]['requests']} "
              f"requests per case and context" + (", prompt cached" if args.prompt_cached
                                                    else "") + "\n")
        print("| case | no branches (n_seq_max 1) ms (median / mean) | 63 branches (n_seq_max "
              "64) ms (median / mean) | ratio (median) |")
        print("|---|---:|---:|---:|")
        for r in rows:
            print(f"| {r['case']} | {r['none_median_ms']:.1f} / {r['none_mean_ms']:.1f} | "
                  f"{r['branches_median_ms']:.1f} / {r['branches_mean_ms']:.1f} | "
                  f"{r['ratio_median']:.2f}x |")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2))
        return 0
    rows = [
        bench_case(model, "6-way enum in an object", enum_prompts, enum_grammar,
                   ChoiceScope("json", schema=ROUTING), args.rounds, args.prompt_cached),
        bench_case(model, "6-tool union (required)", tool_prompts, tool_grammar,
                   ChoiceScope("calls", name_pointer=hermes.CALL_POINTERS[0],
                               arguments_pointer=hermes.CALL_POINTERS[1]), args.rounds,
                   args.prompt_cached),
    ]
    print(f"model {Path(path).name}, {model.runtime.n_threads} thread(s), "
          f"{rows[0]['requests']} requests per case and mode"
          + (", prompt cached" if args.prompt_cached else "") + "\n")
    print("| case | without probing ms (median / mean) | with probing ms (median / mean) | "
          "ratio (median / mean) | decisions | probed tokens | output tokens |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['plain_median_ms']:.1f} / {r['plain_mean_ms']:.1f} | "
              f"{r['probed_median_ms']:.1f} / {r['probed_mean_ms']:.1f} | "
              f"{r['ratio_median']:.2f}x / {r['ratio_mean']:.2f}x | {r['decisions']:.1f} | "
              f"{r['probed_tokens']:.1f} | {r['output_tokens']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
