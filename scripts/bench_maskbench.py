"""MaskBench-format corpus benchmark: exactness and mask/compile times, llamay against llguidance.

Reads a folder of `<split>---<name>.json` files ({"schema": ..., "tests": [{"data", "valid"}]})
and follows the corpus procedure: per schema both engines compile (time to first mask); per
instance `json.dumps(data, ensure_ascii=False)` is tokenised with the llama-bpe tokenizer and,
token by token, the mask is filled (timed), the token checked against it and consumed. An
instance is accepted when every token was allowed and the matcher accepts at the end. The
engines run interleaved schema by schema in one worker process (one core,
RAYON_NUM_THREADS=1), each with its per-vocabulary set-up done before timing (bench_mask.Engines),
the collector run as the server runs it (frozen after start-up and after each compile,
cengine.freeze_after_compiles: the collection after a compile counts in its time to first mask).
Every mask over 20 ms is listed with its thread CPU time and the load average: on a shared
machine a mask can wait for the core, which the CPU time tells apart from the engine's work.
Ours compiles with closed_objects=False, whitespace_budget=None, property_order="any" (JSON
Schema semantics: open objects, free whitespace, properties in any order, as the corpus
procedure asks); --property-order declared measures the generation default instead.

A schema that takes longer than --timeout seconds (both engines, all instances) is reported as
a timeout: the worker is killed and restarted, so one pathological schema cannot stall the run.

    python scripts/bench_maskbench.py FOLDER [--limit N] [--filter SPLIT] [--json OUT]
                                             [--byte-level] [--timeout SECONDS]
                                             [--property-order any|declared]
                                             [--plain-collector]

--byte-level checks exactness only: documents as bytes (llguidance over its byte tokenizer),
no tokenizer, no mask timing; compile times are then byte-level compiles.
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import bench_mask  # noqa: E402  (sets RAYON_NUM_THREADS=1 before llguidance loads)

OURS_OPTIONS = {"closed_objects": False, "whitespace_budget": None, "property_order": "any"}
TOP_REFUSALS = 25
SPLIT_SEP = "---"


# --- corpus --------------------------------------------------------------------------------------
def split_of(path: Path) -> str:
    return path.name.split(SPLIT_SEP, 1)[0] if SPLIT_SEP in path.name else ""


def corpus_files(folder: Path, split=None, limit=None) -> list[Path]:
    files = sorted(p for p in Path(folder).glob("*.json") if split is None or split_of(p) == split)
    return files[:limit] if limit else files


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def document(data) -> str:
    # the corpus procedure: default separators (", " and ": "), non-ASCII characters raw
    return json.dumps(data, ensure_ascii=False)


# --- the two engines, per schema (runs in the worker) ---------------------------------------------
class ByteEngines:
    """Byte-level exactness: our matcher without a vocabulary, llguidance over its byte
    tokenizer."""

    def __init__(self, compile_options):
        import llguidance
        import cengine
        self.cengine, self.llguidance = cengine, llguidance
        self.lltok = llguidance.LLTokenizer("byte")
        self.compile_options = dict(compile_options)


def _ours_error(cengine, x) -> tuple[str, str]:
    if isinstance(x, cengine.CompileError):
        kind = "limit" if isinstance(x, cengine.LimitError) else "refused"
        return (f"{kind}:{x.keyword or '-'}",
                f"{type(x).__name__} {x.keyword or ''} {x.pointer or ''}: {x}")
    if isinstance(x, RecursionError):
        return "RecursionError", f"RecursionError: {x}"
    return f"CRASH {type(x).__name__}", f"CRASH {type(x).__name__}: {x}"


def _ll_error_kind(msg: str) -> str:
    return (msg.strip().splitlines() or ["?"])[0][:100]


def bench_schema(eng, entry: dict, byte_level: bool, phase) -> dict:
    """Both engines on one corpus entry; instances interleaved engine by engine."""
    schema = entry["schema"]
    tests = entry.get("tests", [])
    rec = {"ours": {"error": None, "kind": None}, "ll": {"error": None, "kind": None},
           "instances": []}
    cengine, LLMatcher = eng.cengine, eng.llguidance.LLMatcher
    # compile: time to first mask
    phase("ours compile")
    g = None
    try:
        if byte_level:
            cengine.CACHE.clear()
            t0 = time.perf_counter_ns()
            g = cengine.compile_json_schema(schema, **eng.compile_options)
            g.matcher()
            rec["ours"]["ttfm_ns"] = time.perf_counter_ns() - t0
        else:
            g, c_ns = eng.compile_ours(schema)
            m = g.matcher(eng.vocab)
            t0 = time.perf_counter_ns()
            m.fill_mask(eng.ours_mask)
            rec["ours"]["ttfm_ns"] = c_ns + time.perf_counter_ns() - t0
    except Exception as x:           # a crash is a finding, not a reason to stop
        rec["ours"]["kind"], rec["ours"]["error"] = _ours_error(cengine, x)
        g = None
    phase("llguidance compile")
    ll0 = None
    try:
        t0 = time.perf_counter_ns()
        ll0 = LLMatcher(eng.lltok, LLMatcher.grammar_from_json_schema(schema), log_level=0)
        if not ll0.is_error() and not byte_level:
            ll0.deep_copy().unsafe_compute_mask_ptr(eng.ll_mask.ctypes.data, eng.ll_mask.nbytes)
        dt = time.perf_counter_ns() - t0
        if ll0.is_error():
            rec["ll"]["error"] = ll0.get_error()
            ll0 = None
        else:
            rec["ll"]["ttfm_ns"] = dt
    except Exception as x:
        rec["ll"]["error"] = f"{type(x).__name__}: {x}"
        ll0 = None
    if rec["ll"]["error"]:
        rec["ll"]["kind"] = _ll_error_kind(rec["ll"]["error"])
    for k, t in enumerate(tests):
        text = document(t["data"])
        irec = {"index": k, "valid": bool(t["valid"])}
        if byte_level:
            data = text.encode("utf-8")
            if g is not None:
                phase(f"ours instance {k}")
                try:
                    m = g.matcher()
                    irec["ours"] = bool(m.accept_bytes(data) and m.is_accepting())
                except Exception as x:
                    irec["ours"], irec["ours_crash"] = False, f"{type(x).__name__}: {x}"
            if ll0 is not None:
                phase(f"llguidance instance {k}")
                m = ll0.deep_copy()
                irec["ll"] = bool(m.consume_tokens(eng.lltok.tokenize_bytes(data))
                                  and m.is_accepting())
        else:
            tokens = eng.tokenize(text)
            irec["n_tokens"] = len(tokens)
            for label, walk, state in (("ours", eng.walk_ours, g),
                                       ("ll", eng.walk_ll, ll0.deep_copy() if ll0 else None)):
                if state is None:
                    continue
                phase(f"{label} instance {k}")
                r = {"mask_rejects": [], "accept_fails": [], "eos_missing": False}
                try:
                    times = walk(state, tokens, r)
                except Exception as x:
                    r["crash"], times = f"{type(x).__name__}: {x}", []
                irec[label] = not (r["mask_rejects"] or r["accept_fails"] or r["eos_missing"]
                                   or "crash" in r)
                if r["mask_rejects"] and not r["accept_fails"] and "crash" not in r:
                    # mask and accept disagree
                    irec[label + "_inconsistent"] = r["mask_rejects"][:5]
                if "crash" in r:
                    irec[label + "_crash"] = r["crash"]
                irec[label + "_mask_ns"] = times
                if r.get("slow"):        # masks over 20 ms: (token index, wall ns, CPU ns)
                    irec[label + "_slow"] = r["slow"]
        rec["instances"].append(irec)
    rec["loadavg"] = os.getloadavg()[0]     # the machine beside the run (1-minute average)
    return rec


def _worker(conn, byte_level: bool, options: dict, server_collector: bool) -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    eng = (ByteEngines(options) if byte_level
           else bench_mask.Engines(options, server_collector=server_collector))
    conn.send(("ready", None))
    while True:
        path = conn.recv()
        if path is None:
            return
        try:
            rec = bench_schema(eng, load(Path(path)), byte_level, lambda p: conn.send(("phase", p)))
        except Exception as x:         # bad corpus file: report, keep going
            rec = {"file_error": f"{type(x).__name__}: {x}"}
        conn.send(("done", rec))


class Worker:
    """The engines in a child process, restarted after a schema exceeds the time cap."""

    def __init__(self, byte_level: bool, options: dict, server_collector: bool = True):
        self.byte_level = byte_level
        self.options = options
        self.server_collector = server_collector
        self.proc = None
        self._start()

    def _start(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.byte_level, self.options,
                                                       self.server_collector),
                                daemon=True)
        self.proc.start()
        child.close()
        kind, _ = self.conn.recv()
        assert kind == "ready"

    def run(self, path: Path, timeout: float) -> dict:
        self.conn.send(str(path))
        deadline = time.monotonic() + timeout
        phase = "start"
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.conn.poll(left):
                self.proc.kill()
                self.proc.join()
                self._start()
                return {"timeout": phase}
            try:
                kind, payload = self.conn.recv()
            except EOFError:           # the worker died (segfault, out of memory)
                self.proc.join()
                code = self.proc.exitcode
                self._start()
                return {"died": f"{phase} (exit code {code})"}
            if kind == "phase":
                phase = payload
            else:
                return payload

    def close(self):
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


# --- summary -------------------------------------------------------------------------------------
ENGINES = (("ours", "llamay"), ("ll", "llguidance"))


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) if len(xs) else float("nan")


def compiled(rec: dict, label: str) -> bool:
    return "instances" in rec and rec[label]["error"] is None


def summarize(records: dict) -> dict:
    s = {"n_schemas": len(records), "engines": {}, "splits": {}, "timeouts": [], "file_errors": []}
    for name, rec in records.items():
        if "timeout" in rec or "died" in rec:
            s["timeouts"].append((name, rec.get("timeout") or rec.get("died")))
        elif "file_error" in rec:
            s["file_errors"].append((name, rec["file_error"]))
    common = [n for n, r in records.items() if compiled(r, "ours") and compiled(r, "ll")]
    s["n_common"] = len(common)
    for label, _ in ENGINES:
        e = {"compiled": 0, "valid": 0, "valid_rejected": 0, "invalid": 0, "invalid_accepted": 0,
             "crashes": 0, "inconsistent": 0, "refusals": collections.Counter(),
             "wrong": []}
        for name, rec in records.items():
            if "instances" not in rec:
                continue
            if not compiled(rec, label):
                e["refusals"][rec[label]["kind"]] += 1
                continue
            e["compiled"] += 1
            for i in rec["instances"]:
                ok = i.get(label)
                if i["valid"]:
                    e["valid"] += 1
                    if not ok:
                        e["valid_rejected"] += 1
                        e["wrong"].append((name, i["index"], "valid rejected"))
                else:
                    e["invalid"] += 1
                    if ok:
                        e["invalid_accepted"] += 1
                        e["wrong"].append((name, i["index"], "invalid accepted"))
                e["crashes"] += (label + "_crash") in i
                e["inconsistent"] += (label + "_inconsistent") in i
        masks = [t for n in common for i in records[n]["instances"]
                 for t in i.get(label + "_mask_ns", ())]
        worst = sorted(((max(i[label + "_mask_ns"]), n, i["index"]) for n in common
                        for i in records[n]["instances"] if i.get(label + "_mask_ns")),
                       reverse=True)
        e["slowest"] = [(n, k, t / 1e3) for t, n, k in worst[:5]]
        # every mask over 5 ms (bench_mask.SLOW_MASK_NS), of every schema the engine compiled,
        # with its thread CPU time: one that ran well under 5 ms of CPU waited for the core
        # (another process), one that did not is the engine's own time
        e["over_5ms"] = [(n, i["index"], tok, wall / 1e6, cpu / 1e6, records[n].get("loadavg"))
                         for n in sorted(records) for i in records[n]["instances"]
                         for tok, wall, cpu in i.get(label + "_slow", ())]
        us = np.asarray(masks, dtype=np.float64) / 1e3
        comp = np.asarray([records[n][label]["ttfm_ns"] for n in common], dtype=np.float64) / 1e6
        e["n_masks"] = int(len(us))
        e["mask_us"] = {"mean": float(us.mean()) if len(us) else float("nan"),
                        "p50": _pct(us, 50), "p99": _pct(us, 99),
                        "max": float(us.max()) if len(us) else float("nan")}
        e["ttfm_ms"] = {"p50": _pct(comp, 50), "p90": _pct(comp, 90),
                        "max": float(comp.max()) if len(comp) else float("nan")}
        e["refusals"] = dict(e["refusals"].most_common())
        s["engines"][label] = e
    for name, rec in records.items():
        sp = s["splits"].setdefault(name.split(SPLIT_SEP, 1)[0] if SPLIT_SEP in name else "",
                                    {"schemas": 0, "ours": 0, "ll": 0, "both": 0})
        sp["schemas"] += 1
        for label, _ in ENGINES:
            sp[label] += compiled(rec, label)
        sp["both"] += compiled(rec, "ours") and compiled(rec, "ll")
    return s


def _ratio(a, b):
    return a / b if b else float("nan")


def markdown(s: dict, byte_level: bool) -> str:
    o, l_ = s["engines"]["ours"], s["engines"]["ll"]
    n = s["n_schemas"]
    out = [f"{n} schemas; both compiled {s['n_common']}; timeouts {len(s['timeouts'])}", "",
           "| | llamay | llguidance | llamay/llguidance |", "|---|---:|---:|---:|",
           f"| compiled | {o['compiled']} ({100 * o['compiled'] / max(n, 1):.1f}%) | "
           f"{l_['compiled']} ({100 * l_['compiled'] / max(n, 1):.1f}%) | |",
           f"| valid instances rejected | {o['valid_rejected']} of {o['valid']} | "
           f"{l_['valid_rejected']} of {l_['valid']} | |",
           f"| invalid instances accepted | {o['invalid_accepted']} of {o['invalid']} | "
           f"{l_['invalid_accepted']} of {l_['invalid']} | |",
           f"| crashes during walk | {o['crashes']} | {l_['crashes']} | |"]
    if not byte_level:
        out.append(f"| mask and accept disagree | {o['inconsistent']} | {l_['inconsistent']} | |")
        for key in ("mean", "p50", "p99", "max"):
            a, b = o["mask_us"][key], l_["mask_us"][key]
            out.append(f"| mask {key} µs (common schemas) | {a:.1f} | {b:.1f} | "
                       f"{_ratio(a, b):.2f} |")
        out.append(f"| masks | {o['n_masks']} | {l_['n_masks']} | |")
        slow = [(len(e["over_5ms"]), sum(1 for x in e["over_5ms"] if x[4] < 5))
                for e in (o, l_)]
        out.append(f"| masks over 5 ms, all schemas (of them under 5 ms of thread CPU) | "
                   f"{slow[0][0]} ({slow[0][1]}) | {slow[1][0]} ({slow[1][1]}) | |")
    what = "compile" if byte_level else "time to first mask"
    for key in ("p50", "p90", "max"):
        a, b = o["ttfm_ms"][key], l_["ttfm_ms"][key]
        out.append(f"| {what} {key} ms (common schemas) | {a:.2f} | {b:.2f} | {_ratio(a, b):.2f} |")
    out += ["", "Coverage per split (schemas compiled):", "",
            "| split | schemas | llamay | llguidance | both |", "|---|---:|---:|---:|---:|"]
    for sp, c in sorted(s["splits"].items()):
        out.append(f"| {sp} | {c['schemas']} | {c['ours']} | {c['ll']} | {c['both']} |")
    if not byte_level:
        for label, title in ENGINES:
            out += ["", f"Slowest masks, {title} (schema, instance, µs):", ""]
            out += [f"- {n} #{k}: {us:,.0f}" for n, k, us in s["engines"][label]["slowest"]]
            over = s["engines"][label]["over_5ms"]
            if over:
                out += ["", f"Masks over 5 ms, {title} (schema, instance, token: wall / "
                            f"thread CPU ms, load average):", ""]
                out += [f"- {n} #{k} token {t}: {w:.1f} / {c:.1f} ms, load {la:.2f}"
                        for n, k, t, w, c, la in sorted(over, key=lambda x: -x[3])[:20]]
                if len(over) > 20:
                    out.append(f"- ... {len(over) - 20} more (--json has all)")
    for label, title in ENGINES:
        out += ["", f"Refusals, {title} "
                    f"({'keyword' if label == 'ours' else 'first line of the error'}):", ""]
        kinds = list(s["engines"][label]["refusals"].items())
        for kind, k in kinds[:TOP_REFUSALS]:
            out.append(f"- {k:5d}  {kind}")
        if len(kinds) > TOP_REFUSALS:
            rest = kinds[TOP_REFUSALS:]
            out.append(f"- {sum(k for _, k in rest):5d}  {len(rest)} other kinds (--json has all)")
    if s["timeouts"]:
        out += ["", "Timeouts (schema, phase):", ""] + [f"- {a}: {b}" for a, b in s["timeouts"]]
    if s["file_errors"]:
        out += ["", "Unreadable files:", ""] + [f"- {a}: {b}" for a, b in s["file_errors"]]
    for label, title in ENGINES:
        wrong = s["engines"][label]["wrong"]
        if wrong:
            out += ["", f"Wrong verdicts, {title}:", ""]
            out += [f"- {a} instance {b}: {c}" for a, b, c in wrong]
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="folder of MaskBench-format .json files")
    ap.add_argument("--limit", type=int, help="at most N schemas (after --filter)")
    ap.add_argument("--filter", metavar="SPLIT", help="only files named SPLIT---*.json")
    ap.add_argument("--json", metavar="OUT", help="write per-schema records and the summary here")
    ap.add_argument("--byte-level", action="store_true",
                    help="exactness only: bytes instead of tokens, no mask timing")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per schema, both engines and all instances (default 120)")
    ap.add_argument("--property-order", choices=("any", "declared"), default="any",
                    help="ours: properties in any order (default, JSON Schema semantics) or "
                         "in declared order (the generation default)")
    ap.add_argument("--plain-collector", action="store_true",
                    help="leave the collector as the interpreter sets it (no gc.freeze after "
                         "start-up and compiles), to compare with the server's policy")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    options = {**OURS_OPTIONS, "property_order": args.property_order}
    files = corpus_files(args.folder, args.filter, args.limit)
    if not files:
        raise SystemExit(f"no .json files in {args.folder}"
                         + (f" for split {args.filter}" if args.filter else ""))
    worker = Worker(args.byte_level, options, server_collector=not args.plain_collector)
    records = {}
    t_start = time.monotonic()
    try:
        for k, p in enumerate(files):
            records[p.stem] = worker.run(p, args.timeout)
            if not args.quiet and (k % 50 == 0 or k == len(files) - 1):
                print(f"[{k + 1}/{len(files)}] {p.stem} {time.monotonic() - t_start:.0f}s",
                      file=sys.stderr, flush=True)
    finally:
        worker.close()
    s = summarize(records)
    s["ours_options"] = options
    print("llamay options: " + ", ".join(f"{k}={v!r}" for k, v in options.items())
          + ("; plain collector" if args.plain_collector else ""))
    print(markdown(s, args.byte_level))
    print(f"\nwall time {time.monotonic() - t_start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": s, "records": records}))


if __name__ == "__main__":
    main()
