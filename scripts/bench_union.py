"""Tool-union and large-enum benchmark: compile and mask time as the count grows, llamay
against llguidance on the llama-bpe vocabulary, one core.

Tool union: what the server compiles for N offered tools (server/tools/hermes.py):
OneOf over the tools of Tagged('{"name": "<name>", "arguments": ', JsonSchema(parameters), "}"),
whitespace_budget=64, max_depth=64. llguidance gets the same structure as a Lark grammar
(`start: call_0 | ... ; call_k: "{\\"name\\": \\"<name>\\", \\"arguments\\": " args_k "}"` with
`args_k: %json {...}`). The tools are testdata/bench_schemas/tools/*.json in name order,
those llamay compiles (the union needs each), cycled past them with a suffix on the name
(`get_weather_2`), so names are distinct
while schemas repeat. Enum: {"enum": [N distinct strings]} through compile_json_schema
(closed_objects=False, whitespace_budget=None) and llguidance's grammar_from_json_schema.
String: {"type": "string", "maxLength": N} the same way, walked over a sentence, a text of
2,000 characters and one of exactly N (prose with accents, escapes and emoji); the row also
gives the size of our automaton's tables (Automaton.nbytes).

Per count both engines compile cold (ours: CACHE and the shared mask tables cleared) and fill
one mask (time to first mask); then every tool's first instance (enum: up to 64 values) is
tokenised and walked token by token by both, each mask timed.

    python scripts/bench_union.py [--tools 1,4,16,64] [--enum 100,1000,10000]
                                  [--max-length 32767] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import bench_mask  # noqa: E402  (sets RAYON_NUM_THREADS=1 before llguidance loads)

TOOLS_DIR = ROOT / "testdata" / "bench_schemas" / "tools"
WHITESPACE_BUDGET = 64
MAX_DEPTH = 64
ENUM_WALKS = 64


def tool_files(cengine) -> list:
    """The tool definitions whose parameters llamay compiles (the union needs every one)."""
    out = []
    for f in sorted(TOOLS_DIR.glob("*.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        try:
            cengine.compile_json_schema(d["parameters"])
        except cengine.CompileError:
            continue
        out.append(d)
    return out


def tool_specs(defs: list, n: int) -> list:
    """n (name, parameters, instance) triples: the definitions in name order, cycled."""
    out = []
    for k in range(n):
        d = defs[k % len(defs)]
        name = d["name"] if k < len(defs) else f"{d['name']}_{k // len(defs) + 1}"
        out.append((name, d["parameters"], d["instances"][0]))
    return out


def call_text(name: str, arguments) -> str:
    return '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ' \
        + json.dumps(arguments, ensure_ascii=False) + "}"


def enum_values(n: int) -> list:
    # distinct, realistic-looking identifiers with shared prefixes (like product codes)
    return [f"item-{k:05d}-{'abcdefghij'[k % 10]}" for k in range(n)]


PROSE = ("Grüße from the \u201cstring\u201d benchmark \U0001F600: a line with \"quotes\", a tab\t"
         "and words of every length, repeated until the text is long enough. ")


def text_of(n: int) -> str:
    """Prose of exactly n code points."""
    return (PROSE * (n // len(PROSE) + 1))[:n]


def union_ours(cengine, tools):
    return cengine.OneOf(*[cengine.Tagged('{"name": ' + json.dumps(name, ensure_ascii=False)
                                          + ', "arguments": ', cengine.JsonSchema(params), "}")
                           for name, params, _ in tools])


def union_lark(tools) -> str:
    lines = ["start: " + " | ".join(f"call_{k}" for k in range(len(tools)))]
    for k, (name, params, _) in enumerate(tools):
        head = json.dumps('{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ')
        lines.append(f"call_{k}: {head} args_{k} \"}}\"")
        lines.append(f"args_{k}: %json {json.dumps(params)}")
    return "\n".join(lines)


def measure(eng, compile_ours, ll_grammar, texts):
    """(ours ttfm ns, ll ttfm ns, ours mask ns list, ll mask ns list, ours ok, ll ok)."""
    from cengine import _tables
    cengine = eng.cengine
    LLMatcher = eng.llguidance.LLMatcher
    cengine.CACHE.clear()
    _tables.SHARED_TABLES.clear()
    t0 = time.perf_counter_ns()
    g = compile_ours()
    m = g.matcher(eng.vocab)
    m.fill_mask(eng.ours_mask)
    ours_ttfm = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    ll = LLMatcher(eng.lltok, ll_grammar, log_level=0)
    if ll.is_error():
        raise SystemExit(f"llguidance refused the grammar: {ll.get_error()}")
    ll.deep_copy().unsafe_compute_mask_ptr(eng.ll_mask.ctypes.data, eng.ll_mask.nbytes)
    ll_ttfm = time.perf_counter_ns() - t0
    ours_ns, ll_ns, ours_ok, ll_ok = [], [], 0, 0
    for text in texts:
        toks = eng.tokenize(text)
        r = {"mask_rejects": [], "accept_fails": [], "eos_missing": False}
        ours_ns += eng.walk_ours(g, toks, r)
        ours_ok += not (r["mask_rejects"] or r["accept_fails"] or r["eos_missing"])
        r = {"mask_rejects": [], "accept_fails": [], "eos_missing": False}
        ll_ns += eng.walk_ll(ll.deep_copy(), toks, r)
        ll_ok += not (r["mask_rejects"] or r["accept_fails"] or r["eos_missing"])
    return ours_ttfm, ll_ttfm, ours_ns, ll_ns, ours_ok, ll_ok


def row(label, n, res, n_texts):
    o_t, l_t, o_m, l_m, o_ok, l_ok = res
    o, l_ = np.asarray(o_m, float) / 1e3, np.asarray(l_m, float) / 1e3
    return {"kind": label, "n": n, "ours_ttfm_ms": o_t / 1e6, "ll_ttfm_ms": l_t / 1e6,
            "ours_mask_mean_us": float(o.mean()), "ll_mask_mean_us": float(l_.mean()),
            "ours_mask_max_us": float(o.max()), "ll_mask_max_us": float(l_.max()),
            "masks": int(len(o)), "walks": n_texts, "ours_accepted": o_ok, "ll_accepted": l_ok}


def markdown(rows) -> str:
    out = ["| union | n | TTFM ms llamay | llguidance | ratio | mask mean µs llamay | llguidance "
           "| ratio | mask max µs llamay | llguidance | masks | accepted llamay / llguidance |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "ours_tables_kb" in r:
            out.append(f"| {r['kind']} | {r['n']} | tables: llamay {r['ours_tables_kb']:,.0f} KB "
                       f"({r['ours_positions']:,} positions) | | | | | | | | | |")
        out.append(f"| {r['kind']} | {r['n']} | {r['ours_ttfm_ms']:.1f} | {r['ll_ttfm_ms']:.1f} | "
                   f"{r['ours_ttfm_ms'] / r['ll_ttfm_ms']:.2f} | {r['ours_mask_mean_us']:.1f} | "
                   f"{r['ll_mask_mean_us']:.1f} | "
                   f"{r['ours_mask_mean_us'] / r['ll_mask_mean_us']:.2f} | "
                   f"{r['ours_mask_max_us']:,.0f} | {r['ll_mask_max_us']:,.0f} | {r['masks']} | "
                   f"{r['ours_accepted']}/{r['walks']} / {r['ll_accepted']}/{r['walks']} |")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default="1,4,16,64", help="tool counts, comma separated")
    ap.add_argument("--enum", default="100,1000,10000", help="enum sizes, comma separated")
    ap.add_argument("--max-length", default="32767",
                    help="maxLength of a string schema, comma separated")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    eng = bench_mask.Engines({"closed_objects": False, "whitespace_budget": None})
    cengine = eng.cengine
    LLMatcher = eng.llguidance.LLMatcher
    rows = []
    defs = tool_files(cengine)
    print(f"{len(defs)} tool definitions compile", file=sys.stderr)
    for n in [int(x) for x in args.tools.split(",") if x]:
        tools = tool_specs(defs, n)
        part = union_ours(cengine, tools)
        texts = [call_text(name, inst) for name, _, inst in tools]
        res = measure(eng, lambda: cengine.compile_structural(
            part, whitespace_budget=WHITESPACE_BUDGET, max_depth=MAX_DEPTH),
            LLMatcher.grammar_from_lark(union_lark(tools)), texts)
        rows.append(row("tools", n, res, len(texts)))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    for n in [int(x) for x in args.enum.split(",") if x]:
        values = enum_values(n)
        schema = {"enum": values}
        step = max(1, n // ENUM_WALKS)
        texts = [json.dumps(v) for v in values[::step][:ENUM_WALKS]]
        res = measure(eng, lambda: cengine.compile_json_schema(
            schema, closed_objects=False, whitespace_budget=None),
            LLMatcher.grammar_from_json_schema(schema), texts)
        rows.append(row("enum", n, res, len(texts)))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    for n in [int(x) for x in args.max_length.split(",") if x]:
        schema = {"type": "string", "maxLength": n}
        texts = [json.dumps(text_of(k), ensure_ascii=False) for k in (60, min(n, 2000), n)]
        res = measure(eng, lambda: cengine.compile_json_schema(
            schema, closed_objects=False, whitespace_budget=None),
            LLMatcher.grammar_from_json_schema(schema), texts)
        rows.append(row("string maxLength", n, res, len(texts)))
        a = cengine.compile_json_schema(schema, closed_objects=False,
                                        whitespace_budget=None).automaton
        rows[-1]["ours_tables_kb"] = a.nbytes() / 1024
        rows[-1]["ours_positions"] = a.n_positions
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
