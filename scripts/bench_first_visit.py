"""First visits: masks of a freshly compiled grammar walking its one document, llamay beside
llguidance in the same run, on the llama-bpe vocabulary (128k tokens), one core.

The shape of a one-shot request, and of every request in a serving engine whose requests
each bring their own schema: a grammar compiled for this request (ours: the grammar cache
cleared, so every per-position table is built on its first visit; the vocabulary's shared
tables are warm, as llguidance's tokenizer is), then one valid document walked token by token
with every mask timed. Both engines get the same documents, tokenised by llama.cpp.

Shapes (each document a fresh compile):
- tools N: the tool-call union the server compiles for N tools (bench_union's), one call of
  one tool a document, up to --docs documents;
- enum N: {"enum": [N strings]}, one value a document;
- string maxLength N (with and without a pattern): one string of 60 and one of N characters;
- corpus: the first valid instance of each schema of ../shared/corpora/maskbench-dev that
  both engines compile (--corpus N of them; 0 skips).

Prints, per shape, mask mean and p99 (µs), and the slowest mask, for both, and the ratio.

    python scripts/bench_first_visit.py [--tools 1,4,16,64] [--enum 100,1000,10000]
        [--max-length 10,100,1000,32767] [--docs 16] [--corpus 200] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import bench_mask  # noqa: E402  (sets RAYON_NUM_THREADS=1 before llguidance loads)
import bench_union as U  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpora" / "maskbench-dev"
OPTIONS = {"closed_objects": False, "whitespace_budget": None}
PATTERN = "^[^\\n]*$"


def walk_fresh(eng, compile_ours, ll_grammar, text, acc):
    """One document on a fresh grammar of each engine; mask times appended to acc."""
    cengine = eng.cengine
    cengine.CACHE.clear()
    g = compile_ours()
    toks = eng.tokenize(text)
    rec = {"mask_rejects": [], "accept_fails": [], "eos_missing": False}
    ours = eng.walk_ours(g, toks, rec)
    ok_ours = not (rec["mask_rejects"] or rec["accept_fails"] or rec["eos_missing"])
    LLMatcher = eng.llguidance.LLMatcher
    ll = LLMatcher(eng.lltok, ll_grammar, log_level=0)
    rec = {"mask_rejects": [], "accept_fails": [], "eos_missing": False}
    theirs = eng.walk_ll(ll, toks, rec) if not ll.is_error() else []
    ok_ll = bool(theirs) and not (rec["mask_rejects"] or rec["accept_fails"]
                                  or rec["eos_missing"])
    if ok_ours and ok_ll:       # a row compares documents both engines walked
        acc["ours"] += ours
        acc["ll"] += theirs
        acc["docs"] += 1
    else:
        acc["skipped"] += 1


def summary(label, acc):
    o, t = np.asarray(acc["ours"], float) / 1e3, np.asarray(acc["ll"], float) / 1e3
    if not len(o):
        return {"shape": label, "docs": 0, "skipped": acc["skipped"]}
    return {"shape": label, "docs": acc["docs"], "skipped": acc["skipped"], "masks": len(o),
            "ours_mean": float(o.mean()), "ll_mean": float(t.mean()),
            "ours_p99": float(np.percentile(o, 99)), "ll_p99": float(np.percentile(t, 99)),
            "ours_max": float(o.max()), "ll_max": float(t.max())}


def line(r) -> str:
    if not r["docs"]:
        return f"| {r['shape']} | 0 | | | | | | | | |"
    return (f"| {r['shape']} | {r['docs']} | {r['masks']} | {r['ours_mean']:.1f} | "
            f"{r['ll_mean']:.1f} | **{r['ours_mean'] / r['ll_mean']:.2f}** | "
            f"{r['ours_p99']:.0f} | {r['ll_p99']:.0f} | {r['ours_p99'] / r['ll_p99']:.2f} | "
            f"{r['ours_max']:,.0f} / {r['ll_max']:,.0f} |")


HEAD = ("| shape | docs | masks | mean µs llamay | llguidance | ratio | p99 µs llamay | "
        "llguidance | ratio | max µs llamay / llguidance |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default="1,4,16,64")
    ap.add_argument("--enum", default="100,1000,10000")
    ap.add_argument("--max-length", default="10,100,1000,32767")
    ap.add_argument("--docs", type=int, default=16, help="documents a shape (tools, enum)")
    ap.add_argument("--corpus", type=int, default=200, help="corpus schemas (0: none)")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    eng = bench_mask.Engines(OPTIONS)
    cengine, LLMatcher = eng.cengine, eng.llguidance.LLMatcher
    rows = []
    print(HEAD, flush=True)

    def emit(label, acc):
        rows.append(summary(label, acc))
        print(line(rows[-1]), flush=True)

    defs = U.tool_files(cengine)
    for n in [int(x) for x in args.tools.split(",") if x]:
        tools = U.tool_specs(defs, n)
        part = U.union_ours(cengine, tools)
        lark = LLMatcher.grammar_from_lark(U.union_lark(tools))
        acc = {"ours": [], "ll": [], "docs": 0, "skipped": 0}
        for name, _, inst in tools[:args.docs]:
            walk_fresh(eng, lambda: cengine.compile_structural(
                part, whitespace_budget=U.WHITESPACE_BUDGET, max_depth=U.MAX_DEPTH),
                lark, U.call_text(name, inst), acc)
        emit(f"tools {n}", acc)
    for n in [int(x) for x in args.enum.split(",") if x]:
        values = U.enum_values(n)
        schema = {"enum": values}
        ll = LLMatcher.grammar_from_json_schema(schema)
        acc = {"ours": [], "ll": [], "docs": 0, "skipped": 0}
        for v in values[::max(1, n // args.docs)][:args.docs]:
            walk_fresh(eng, lambda: cengine.compile_json_schema(schema, **OPTIONS), ll,
                       json.dumps(v), acc)
        emit(f"enum {n:,}", acc)
    for n in [int(x) for x in args.max_length.split(",") if x]:
        for pattern in (None, PATTERN):
            schema = {"type": "string", "maxLength": n}
            if pattern:
                schema["pattern"] = pattern
            ll = LLMatcher.grammar_from_json_schema(schema)
            acc = {"ours": [], "ll": [], "docs": 0, "skipped": 0}
            for k in sorted({min(60, n), n}):
                walk_fresh(eng, lambda: cengine.compile_json_schema(schema, **OPTIONS), ll,
                           json.dumps(U.text_of(k), ensure_ascii=False), acc)
            emit(f"string maxLength {n:,}{' + pattern' if pattern else ''}", acc)
    if args.corpus and CORPUS.is_dir():
        import bench_maskbench as MB
        acc = {"ours": [], "ll": [], "docs": 0, "skipped": 0}
        for path in MB.corpus_files(CORPUS)[:args.corpus]:
            entry = MB.load(path)
            valid = [t["data"] for t in entry.get("tests", []) if t.get("valid")]
            if not valid:
                continue
            try:
                cengine.compile_json_schema(entry["schema"], **OPTIONS)
                ll = LLMatcher.grammar_from_json_schema(entry["schema"])
            except (cengine.CompileError, ValueError, RecursionError):
                acc["skipped"] += 1
                continue
            walk_fresh(eng, lambda: cengine.compile_json_schema(entry["schema"], **OPTIONS),
                       ll, MB.document(valid[0]), acc)
        emit(f"corpus (first {args.corpus})", acc)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
