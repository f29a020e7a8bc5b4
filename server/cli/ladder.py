"""`llamay ladder MODEL.gguf CASES.jsonl`: the quant ladder (docs/ladder.md).

Quantises the model to each rung with llama.cpp's own quantiser (cached, server/runtime/
quantize.py), runs every case through the server's own request path at each rung (the app
behind an in-process client: the same tool-call grammar, closer and decisions a client gets),
greedy with one seed, and reports per rung what calibrate/ladder.py measures. Exit codes as
`calibrate report`: 0 every gate holds, 1 a gate failed, 2 bad input.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import click

from .calibrate import InputError


def _quants(value: str):
    from ..runtime.quantize import quant_types
    names = [q.strip().upper() for q in value.split(",") if q.strip()]
    known = quant_types()
    bad = [q for q in names if q not in known]
    if bad:
        raise click.BadParameter(f"unknown type(s) {', '.join(bad)}; llama.cpp has: "
                                 f"{', '.join(sorted(known))}", param_hint="--quants")
    if not names:
        raise click.BadParameter("no type given", param_hint="--quants")
    if len(set(names)) != len(names):
        raise click.BadParameter("a type is given twice", param_hint="--quants")
    return names


@click.command("ladder")
@click.argument("model_path", metavar="MODEL.gguf", type=click.Path(dir_okay=False))
@click.argument("cases_path", metavar="CASES.jsonl", type=click.Path(dir_okay=False))
@click.option("--quants", default="Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q4_0,Q3_K_M,Q2_K", show_default=True,
              help="The rungs, comma separated; the first is the reference.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the report (per rung and per case) as JSON here.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write agreement against bits per weight as a PNG here.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--max-tokens", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--n-ctx", type=click.IntRange(min=256), default=4096, show_default=True)
@click.option("--threads", type=click.IntRange(min=0), default=0, show_default=True,
              help="Threads for quantising and decoding (0: llama.cpp's choice).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where rungs are kept (default: $LLAMAY_CACHE/quants or "
                   "~/.cache/llamay/quants).")
@click.option("--keep/--no-keep", default=True, show_default=True,
              help="Keep the quantised files for the next run (--no-keep deletes the rungs "
                   "this run made).")
@click.option("--min-tool-agreement", type=click.FloatRange(0.0, 1.0), default=None,
              help="Gate: tool agreement with the reference at least this (see --at).")
@click.option("--min-conformance", type=click.FloatRange(0.0, 1.0), default=None,
              help="Gate: schema conformance at least this.")
@click.option("--min-argument-agreement", type=click.FloatRange(0.0, 1.0), default=None,
              help="Gate: exact argument agreement with the reference at least this.")
@click.option("--min-label-agreement", type=click.FloatRange(0.0, 1.0), default=None,
              help="Gate: the tool equals the case's label at least this often.")
@click.option("--at", "gate_at", default=None,
              help="The rung the gates apply to (default: every rung).")
@click.option("--progress/--no-progress", default=True, show_default=True)
def ladder(model_path: str, cases_path: str, quants: str, json_path: Optional[str],
           plot_path: Optional[str], seed: int, max_tokens: int, n_ctx: int, threads: int,
           cache_dir: Optional[str], keep: bool, min_tool_agreement: Optional[float],
           min_conformance: Optional[float], min_argument_agreement: Optional[float],
           min_label_agreement: Optional[float], gate_at: Optional[str], progress: bool) -> None:
    """Quantise MODEL.gguf down a ladder of types and measure, at each rung, how the
    constrained tool calls of CASES.jsonl hold: schema conformance, tool and argument agreement
    with the first rung (and with the labels), the tool decision's posterior, tokens/s, size."""
    from calibrate.ladder import (CasesError, Rung, check_gates, format_table, load_cases,
                                  summarize, write_json, write_plot)

    from ..runtime import quantize as q
    rungs_wanted = _quants(quants)
    if gate_at is not None and gate_at.upper() not in rungs_wanted:
        raise click.BadParameter(f"{gate_at} is not one of the rungs", param_hint="--at")
    source = Path(model_path)
    if not source.is_file():
        raise InputError(f"no such model file: {model_path}")
    try:
        cases = load_cases(cases_path)
    except CasesError as e:
        raise InputError(str(e)) from None
    cache = Path(cache_dir) if cache_dir else q.cache_dir()
    _, src_type = q.describe(source)
    requantized = src_type if src_type not in (None, "F32", "F16", "BF16") else None
    say = (lambda msg: click.echo(msg, err=True)) if progress else (lambda msg: None)
    say(f"ladder: {source.name} ({src_type or 'unknown type'}), {len(cases)} cases, rungs "
        f"{', '.join(rungs_wanted)}; cache {cache}")
    digest = q.source_digest(source)
    made, rungs = [], []
    try:
        for quant in rungs_wanted:
            t0 = time.perf_counter()
            try:
                path, fresh = q.rung(source, quant, cache=cache, digest=digest,
                                     threads=threads)
            except (RuntimeError, ValueError) as e:
                raise click.ClickException(str(e)) from None
            if fresh:
                made.append(path)
            say(f"  {quant}: {'quantised' if fresh else 'cached'} "
                f"({path.stat().st_size / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s)")
            rung = Rung(quant, str(path), path.stat().st_size, q.describe(path)[0],
                        requantized)
            _run_rung(rung, cases, seed=seed, max_tokens=max_tokens, n_ctx=n_ctx,
                      threads=threads, say=say)
            rungs.append(rung)
    finally:
        if not keep:
            for path in made:
                path.unlink(missing_ok=True)
    report = summarize(rungs, cases, source=str(source), seed=seed)
    report["cache"] = {"folder": str(cache), "kept": keep,
                       "bytes": sum(r.size_bytes for r in rungs) if keep else 0}
    click.echo(format_table(report))
    click.echo(f"disk: {sum(r.size_bytes for r in rungs) / 2**20:.1f} MiB of rungs "
               f"{'kept in ' + str(cache) if keep else 'made this run, deleted (--no-keep)'}",
               err=True)
    if json_path:
        write_json(report, json_path)
    if plot_path:
        write_plot(report, plot_path)
    lines = check_gates(report, {"--min-tool-agreement": min_tool_agreement,
                                 "--min-conformance": min_conformance,
                                 "--min-argument-agreement": min_argument_agreement,
                                 "--min-label-agreement": min_label_agreement},
                        gate_at.upper() if gate_at else None)
    for line in lines:
        click.echo(line)
    if any(line.startswith("FAIL") for line in lines):
        sys.exit(1)


def _run_rung(rung, cases, *, seed: int, max_tokens: int, n_ctx: int, threads: int,
              say) -> None:
    """Every case through the server's app for this rung's file."""
    from starlette.testclient import TestClient

    from calibrate.ladder import read_answer

    from ..api.app import create_app
    from ..api.settings import Settings
    app = create_app(Settings(model_path=rung.path, n_ctx=n_ctx, parallel=1,
                              n_threads=threads or None))
    with TestClient(app) as client:
        t_rung = time.perf_counter()
        for i, case in enumerate(cases, 1):
            t0 = time.perf_counter()
            response = client.post("/v1/chat/completions",
                                   json=case.body(seed=seed, max_tokens=max_tokens))
            seconds = time.perf_counter() - t0
            try:
                data = response.json()
            except ValueError:
                data = response.text
            rung.answers.append(read_answer(case, response.status_code, data, seconds))
            if i == len(cases) or i % 10 == 0:
                say(f"    {rung.quant}: {i}/{len(cases)} cases "
                    f"({time.perf_counter() - t_rung:.0f} s)")
    # the scheduler stopped with the client: free this rung's weights before the next loads
    app.state.llamay.model.close()
