"""`llamay calibrate report`: calibration metrics of labelled choice decisions, with CI gates.

Exit codes: 0 report written and every gate passed; 1 a gate failed; 2 bad usage or input
(click's convention) with a one-paragraph message, never a traceback.
"""
from __future__ import annotations

from typing import Optional

import click


class InputError(click.ClickException):
    """Unusable input or output file: exit 2 like click's usage errors, without the usage text."""
    exit_code = 2


@click.group("calibrate")
def calibrate() -> None:
    """Calibration of the posteriors from llamay_choice_logprobs (docs/calibration.md)."""


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
def report(decisions: str, n_bins: int, max_ece: Optional[float], max_brier: Optional[float],
           min_accuracy: Optional[float], plot_path: Optional[str], json_path: Optional[str],
           sum_tolerance: float) -> None:
    """Accuracy, Brier score, ECE and MCE of DECISIONS.jsonl ('-' reads stdin).

    \b
    Each line (extra fields ignored):
    {"alternatives": [...], "posterior": [...], "chosen": ..., "label": ...}
    Exit 0: every gate passed; 1: a gate failed; 2: bad usage or input.
    """
    from calibrate.decisions import DecisionFileError, load_decisions, parse_decisions
    from calibrate.gates import check_gates, gates_from_options
    from calibrate.metrics import evaluate
    from calibrate.report import format_report, write_json

    source = "<stdin>" if decisions == "-" else decisions
    try:
        if decisions == "-":
            rows = parse_decisions(click.get_binary_stream("stdin").read(), source,
                                   sum_tolerance=sum_tolerance)
        else:
            rows = load_decisions(decisions, sum_tolerance=sum_tolerance)
    except DecisionFileError as e:
        raise InputError(str(e)) from None

    metrics = evaluate(rows, n_bins)
    results = check_gates(gates_from_options(max_ece, max_brier, min_accuracy), metrics)

    if json_path is not None:
        try:
            write_json(json_path, metrics, results, source)
        except OSError as e:
            raise InputError(f"cannot write --json {json_path}: {e.strerror or e}") from None
    if plot_path is not None:
        from calibrate.plot import write_plot
        try:
            write_plot(plot_path, metrics)
        except OSError as e:
            raise InputError(f"cannot write --plot {plot_path}: {e.strerror or e}") from None

    click.echo(format_report(metrics, results, source), nl=False)
    failed = [r for r in results if not r.passed]
    for r in failed:
        click.echo(f"calibration gate failed: {r.comparison()}", err=True)
    if failed:
        click.get_current_context().exit(1)
