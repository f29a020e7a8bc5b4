"""`llamay calibrate fit`: split, fit a temperature, and compare the metrics before and after.

Before = the posteriors as the decisions file has them (what the server returned); after =
softmax(logprobs / T). Both are measured on the held-out part when there is a split, on every
decision otherwise (then the numbers are in-sample and say so).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from .decisions import Decision
from .metrics import DEFAULT_BINS, CalibrationMetrics, evaluate
from .temperature import (METHOD, T_MAX, T_MIN, Calibration, calibrate_decisions, fit_temperature,
                          negative_log_likelihood, split_decisions)


@dataclass(frozen=True)
class FitResult:
    calibration: Calibration
    n_fit: int
    n_heldout: int
    split: Optional[float]
    seed: int
    evaluated_on: str                 # "heldout" or "all"
    before: CalibrationMetrics
    after: CalibrationMetrics
    nll_before: float                 # at T = 1, on the evaluated part
    nll_after: float

    @property
    def at_bound(self) -> bool:
        t = self.calibration.temperature
        return t <= T_MIN * 1.0001 or t >= T_MAX / 1.0001

    def as_dict(self) -> dict:
        def metrics(m: CalibrationMetrics, nll: float) -> dict:
            return {"n": m.n, "ece": m.ece, "brier": m.brier, "accuracy": m.accuracy, "mce": m.mce,
                    "nll": nll}
        return {"method": METHOD, "temperature": self.calibration.temperature,
                "n_fit": self.n_fit, "n_heldout": self.n_heldout, "split": self.split,
                "seed": self.seed, "evaluated_on": self.evaluated_on, "bins": self.before.n_bins,
                "before": metrics(self.before, self.nll_before),
                "after": metrics(self.after, self.nll_after)}


def run_fit(decisions: Sequence[Decision], split: Optional[float] = None, seed: int = 0,
            n_bins: int = DEFAULT_BINS) -> FitResult:
    """Decisions must have been read with require_logprobs=True."""
    fit_part, heldout = split_decisions(decisions, split, seed)
    temperature = fit_temperature(fit_part)
    evaluated: List[Decision] = heldout or list(decisions)
    after = calibrate_decisions(evaluated, Calibration(temperature))
    return FitResult(
        calibration=Calibration(temperature), n_fit=len(fit_part), n_heldout=len(heldout),
        split=split if heldout else None, seed=seed,
        evaluated_on="heldout" if heldout else "all",
        before=evaluate(evaluated, n_bins), after=evaluate(after, n_bins),
        nll_before=negative_log_likelihood(evaluated, 1.0),
        nll_after=negative_log_likelihood(evaluated, temperature))


def format_fit(result: FitResult, source: Optional[str] = None) -> str:
    lines = []
    if source is not None:
        lines.append(f"temperature fit: {source}")
    t = result.calibration.temperature
    bound = f" (at the search bound [{T_MIN:g}, {T_MAX:g}])" if result.at_bound else ""
    lines.append(f"temperature  {t:.4f}{bound}")
    if result.evaluated_on == "heldout":
        lines.append(f"fitted on {result.n_fit} decisions; measured on the {result.n_heldout} "
                     f"held out (split {result.split:g}, seed {result.seed})")
    else:
        lines.append(f"fitted on all {result.n_fit} decisions; no split, so the numbers below are "
                     f"measured on the same decisions (in-sample)")
    lines.append("")
    rows = [("", "before", "after")]
    for name in ("ece", "brier", "accuracy"):
        rows.append((name, f"{getattr(result.before, name):.4f}",
                     f"{getattr(result.after, name):.4f}"))
    rows.append(("nll", f"{result.nll_before:.4f}", f"{result.nll_after:.4f}"))
    for r in rows:
        lines.append(f"  {r[0]:<9}{r[1]:>8}  {r[2]:>8}".rstrip())
    return "\n".join(lines) + "\n"
