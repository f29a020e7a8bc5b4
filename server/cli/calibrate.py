"""`llamay calibrate report | fit | collect`: calibration metrics of labelled choice decisions
with CI gates, the temperature fit, and collecting decisions from a labelled dataset.

Exit codes: 0 report written and every gate passed; 1 a gate failed; 2 bad usage or input
(click's convention) with a one-paragraph message, never a traceback.
"""
from __future__ import annotations

import sys
from typing import Optional

import click


class InputError(click.ClickException):
    """Unusable input or output file: exit 2 like click's usage errors, without the usage text."""
    exit_code = 2


@click.group("calibrate")
def calibrate() -> None:
    """Calibration of the posteriors from llamay_choice_logprobs (docs/calibration.md)."""


def _read_decisions(decisions: str, sum_tolerance: float, *, require_logprobs: bool):
    """DECISIONS.jsonl ('-': stdin) as checked rows; a bad file is an InputError (exit 2)."""
    from calibrate.decisions import DecisionFileError, load_decisions, parse_decisions
    try:
        if decisions == "-":
            return parse_decisions(sys.stdin.buffer.read(), "<stdin>",
                                   sum_tolerance=sum_tolerance,
                                   require_logprobs=require_logprobs)
        return load_decisions(decisions, sum_tolerance=sum_tolerance,
                              require_logprobs=require_logprobs)
    except DecisionFileError as e:
        raise InputError(str(e)) from None


@calibrate.command("report")
@click.argument("decisions", metavar="DECISIONS.jsonl",
                type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--bins", "n_bins", type=click.IntRange(min=1, max=1000), default=10,
              show_default=True,
              help="Number of equal-width confidence bins over [0, 1].")
@click.option("--max-ece", type=click.FloatRange(min=0.0), default=None,
              help="Fail (exit 1) when the expected calibration error is above this.")
@click.option("--max-brier", type=click.FloatRange(min=0.0), default=None,
              help="Fail (exit 1) when the multi-class Brier score is above this.")
@click.option("--min-accuracy", type=click.FloatRange(min=0.0, max=1.0), default=None,
              help="Fail (exit 1) when the accuracy is below this.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Write a reliability diagram and confidence histogram (PNG) here.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the metrics, per-bin table and gate outcomes as JSON here.")
@click.option("--sum-tolerance", type=click.FloatRange(min=0.0, max=1.0), default=0.01,
              show_default=True,
              help="Largest |sum(posterior) - 1| accepted (and renormalised); larger is an error.")
@click.option("--calibration", "calibration_path", type=click.Path(dir_okay=False), default=None,
              help="Apply this CALIBRATION.json (from `calibrate fit`) first: posteriors become "
                   "softmax(logprobs / T).")
def report(decisions: str, n_bins: int, max_ece: Optional[float], max_brier: Optional[float],
           min_accuracy: Optional[float], plot_path: Optional[str], json_path: Optional[str],
           sum_tolerance: float, calibration_path: Optional[str]) -> None:
    """Accuracy, Brier score, ECE and MCE of DECISIONS.jsonl ('-' reads stdin).

    \b
    Each line (extra fields ignored):
    {"alternatives": [...], "posterior": [...], "chosen": ..., "label": ...}
    Exit 0: every gate passed; 1: a gate failed; 2: bad usage or input.
    """
    from calibrate.gates import check_gates, gates_from_options
    from calibrate.metrics import evaluate
    from calibrate.report import format_report, write_json

    source = "<stdin>" if decisions == "-" else decisions
    calibration = None
    if calibration_path is not None:
        from calibrate.temperature import CalibrationError, load_calibration
        try:
            calibration = load_calibration(calibration_path)
        except CalibrationError as e:
            raise InputError(f"--calibration: {e}") from None
    rows = _read_decisions(decisions, sum_tolerance, require_logprobs=calibration is not None)
    if calibration is not None:
        from calibrate.temperature import calibrate_decisions
        rows = calibrate_decisions(rows, calibration)
    applied = calibration.as_dict() if calibration is not None else None

    metrics = evaluate(rows, n_bins)
    results = check_gates(gates_from_options(max_ece, max_brier, min_accuracy), metrics)

    if json_path is not None:
        try:
            write_json(json_path, metrics, results, source, applied)
        except OSError as e:
            raise InputError(f"cannot write --json {json_path}: {e.strerror or e}") from None
    if plot_path is not None:
        from calibrate.plot import write_plot
        try:
            write_plot(plot_path, metrics)
        except OSError as e:
            raise InputError(f"cannot write --plot {plot_path}: {e.strerror or e}") from None

    click.echo(format_report(metrics, results, source, applied), nl=False)
    failed = [r for r in results if not r.passed]
    for r in failed:
        click.echo(f"calibration gate failed: {r.comparison()}", err=True)
    if failed:
        click.get_current_context().exit(1)


@calibrate.command("fit")
@click.argument("decisions", metavar="DECISIONS.jsonl",
                type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="Write the fitted CALIBRATION.json here.")
@click.option("--split", type=click.FloatRange(min=0.0, max=1.0, min_open=True, max_open=True),
              default=None,
              help="Hold out this share of the decisions (seeded) and measure there; "
                   "without it the fit is measured on the decisions it was fitted on.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split.")
@click.option("--bins", "n_bins", type=click.IntRange(min=1, max=1000), default=10,
              show_default=True, help="Number of equal-width confidence bins for the ECE.")
@click.option("--sum-tolerance", type=click.FloatRange(min=0.0, max=1.0), default=0.01,
              show_default=True,
              help="Largest |sum(posterior) - 1| accepted (and renormalised); larger is an error.")
def fit(decisions: str, out_path: str, split: Optional[float], seed: int, n_bins: int,
        sum_tolerance: float) -> None:
    """Fit a temperature T on the decisions' logprobs (posterior = softmax(logprobs / T)).

    Prints ECE, Brier and accuracy before and after on the held-out part (--split) or on all.
    Exit 0: written; 2: bad usage or input (a decision without logprobs names its line).
    """
    import json

    from calibrate.fit import format_fit, run_fit

    source = "<stdin>" if decisions == "-" else decisions
    rows = _read_decisions(decisions, sum_tolerance, require_logprobs=True)
    try:
        result = run_fit(rows, split, seed, n_bins)
    except ValueError as e:
        raise InputError(f"{source}: {e}") from None
    try:
        with open(out_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(result.as_dict(), indent=2, allow_nan=False) + "\n")
    except OSError as e:
        raise InputError(f"cannot write --out {out_path}: {e.strerror or e}") from None
    click.echo(format_fit(result, source), nl=False)


@calibrate.command("collect")
@click.argument("dataset", metavar="DATASET.jsonl", type=click.Path(dir_okay=False))
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="Append decision lines here; ids already in it are skipped (resume).")
@click.option("-m", "--model", "model_path", type=click.Path(dir_okay=False), default=None,
              help="Run in-process on this GGUF model.")
@click.option("--url", default=None, help="Run against a llamay server at this URL instead.")
@click.option("--api-key", envvar="LLAMAY_API_KEY", default=None,
              help="Bearer key for --url (LLAMAY_API_KEY works too).")
@click.option("--timeout", type=click.FloatRange(min=0.0, min_open=True), default=300.0,
              show_default=True, help="Seconds per request with --url.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show a progress bar with rate and ETA on stderr.")
def collect_command(dataset: str, out_path: str, model_path: Optional[str], url: Optional[str],
                    api_key: Optional[str], timeout: float, progress: bool) -> None:
    """Run the labelled requests of DATASET.jsonl and write their decisions to --out.

    \b
    Exit 0: every line is in --out; 1: some lines failed (named; a rerun retries them);
    2: bad usage or input; 130: interrupted (a rerun resumes).
    """
    from calibrate.collect import (DatasetError, InProcessUnavailable, collect, in_process_runner,
                                   load_dataset, register_in_process_runner, url_runner)

    if model_path is not None and url is not None:
        raise click.UsageError("give -m or --url, not both")
    try:
        items = load_dataset(dataset)
    except DatasetError as e:
        raise InputError(str(e)) from None
    if url is not None:
        runner = url_runner(url, api_key=api_key, timeout=timeout)
    else:
        register_in_process_runner(_in_process_runner)
        try:
            runner = in_process_runner(model_path)
        except InProcessUnavailable as e:
            raise InputError(str(e)) from None
    try:
        summary = collect(items, out_path, runner, progress=progress)
    except DatasetError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"cannot write --out {out_path}: {e.strerror or e}") from None
    except KeyboardInterrupt:
        click.echo(f"\ninterrupted; what was written to {out_path} stays, run again to resume",
                   err=True)
        click.get_current_context().exit(130)
    click.echo(summary.describe(out_path), err=True)
    if not summary.ok:
        click.get_current_context().exit(1)


def _in_process_runner(model_path: Optional[str]):
    """collect's runner without a server: the server's own app (the same request path, the
    same decisions) behind an in-process ASGI client; no port, no network. No -m: the
    default model."""
    from starlette.testclient import TestClient

    from calibrate.collect import url_runner

    from ..api.app import create_app
    from ..api.settings import Settings
    try:
        app = create_app(Settings(model_path=model_path))
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None
    return url_runner("http://llamay.in-process", client=TestClient(app))
