"""Where a cold compile's time goes, phase by phase, over a MaskBench-format folder.

For every STEP-th schema (name order), with the corpus benchmark's options (closed_objects=False,
whitespace_budget=None) and the chosen property order, times: `ir` (schema_to_ir), `build`
(automaton.build), `matcher` (grammar and matcher over llama-bpe) and `mask1` (the first
fill_mask), then prints p50 / p90 / sum per phase in ms. The grammar cache is not involved
and the collector runs as the interpreter sets it, so this splits the work; the time to first
mask users see is scripts/bench_maskbench.py's. To compare two checkouts, run it from each
(LLAMAY_ROOT=<checkout>), back to back: the machine's load moves absolute times.

    LLAMAY_ROOT=<checkout> python scripts/bench_compile_phases.py FOLDER [--step 2]
        [--property-order any|declared] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("LLAMAY_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402

PHASES = ("ir", "build", "matcher", "mask1")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--step", type=int, default=2, help="every STEP-th schema (default 2)")
    ap.add_argument("--property-order", choices=("any", "declared"), default="any")
    ap.add_argument("--json", type=Path, help="write per-schema rows (name, ms per phase, "
                                              "positions) here")
    args = ap.parse_args(argv)

    import cengine
    from cengine import automaton
    from cengine.grammar import Grammar
    from cengine.schema import schema_to_ir
    from material import vocab_gguf

    vocab = cengine.Vocabulary.from_gguf(str(vocab_gguf("llama-bpe")))
    cengine.prepare(vocab)
    mask = np.zeros(cengine.mask_words(vocab.size), np.int32)
    rows, refused = [], 0
    for path in sorted(args.folder.glob("*.json"))[::args.step]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            t0 = time.perf_counter_ns()
            g = schema_to_ir(schema, closed_objects=False, whitespace_budget=None,
                             property_order=args.property_order)
            t1 = time.perf_counter_ns()
            a = automaton.build(g)
            t2 = time.perf_counter_ns()
            m = Grammar(a, "json_schema", schema).matcher(vocab)
            t3 = time.perf_counter_ns()
            m.fill_mask(mask)
            t4 = time.perf_counter_ns()
        except cengine.CompileError:
            refused += 1
            continue
        rows.append((path.stem, (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6,
                     (t4 - t3) / 1e6, a.n_positions))
    times = np.array([r[1:5] for r in rows])
    print(f"{len(rows)} schemas timed, {refused} refused (every {args.step}th of {args.folder})")
    for name, col in zip(PHASES + ("total",), list(times.T) + [times.sum(axis=1)]):
        print(f"{name:8s} p50 {np.percentile(col, 50):7.2f}  p90 {np.percentile(col, 90):7.2f}  "
              f"sum {col.sum():9.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(rows), encoding="utf-8")


if __name__ == "__main__":
    main()
