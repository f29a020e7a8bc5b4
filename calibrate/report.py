"""The report in two forms: a text table for people (stdout) and a JSON object for tools (--json).

JSON keys: "n", "accuracy", "brier", "ece", "mce" and "bins" as the contract names them, where
"bins" is the number of equal-width bins (the contract's `bins` in min(floor(c * bins), bins - 1),
default 10); the per-bin table goes beside it as "per_bin", and gate outcomes as "gates" and
"passed" (true when there are no gates), and "calibration" (what was applied, when one was).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence, Union

from .gates import GateResult
from .metrics import Bin, CalibrationMetrics


def _bin_dict(b: Bin) -> dict:
    return {"index": b.index, "lower": b.lower, "upper": b.upper, "count": b.count,
            "accuracy": b.accuracy, "mean_confidence": b.mean_confidence, "gap": b.gap}


def report_dict(metrics: CalibrationMetrics, gate_results: Sequence[GateResult] = (),
                source: Optional[str] = None, calibration: Optional[dict] = None) -> dict:
    out = {
        "n": metrics.n,
        "accuracy": metrics.accuracy,
        "brier": metrics.brier,
        "ece": metrics.ece,
        "mce": metrics.mce,
        "bins": metrics.n_bins,
        "per_bin": [_bin_dict(b) for b in metrics.bins],
        "gates": [r.as_dict() for r in gate_results],
        "passed": all(r.passed for r in gate_results),
    }
    if source is not None:
        out["source"] = source
    if calibration is not None:
        out["calibration"] = calibration
    return out


def write_json(path: Union[str, Path], metrics: CalibrationMetrics,
               gate_results: Sequence[GateResult] = (), source: Optional[str] = None,
               calibration: Optional[dict] = None) -> None:
    text = json.dumps(report_dict(metrics, gate_results, source, calibration), indent=2,
                      allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def _edge_decimals(n_bins: int) -> int:
    # the fewest decimals (1 to 4) that show every edge exactly: 0.1 for 10 bins, 0.05 for 20,
    # 0.125 for 8; thirds and the like get 4
    for d in range(1, 5):
        if all(abs(round(b / n_bins, d) - b / n_bins) < 1e-12 for b in range(n_bins + 1)):
            return d
    return 4


def _num(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.4f}"


def format_report(metrics: CalibrationMetrics, gate_results: Sequence[GateResult] = (),
                  source: Optional[str] = None, calibration: Optional[dict] = None) -> str:
    n_bins = metrics.n_bins
    lines: List[str] = []
    if source is not None:
        lines.append(f"calibration report: {source}")
    if calibration is not None:
        lines.append("calibrated: posterior = "
                     f"softmax(logprobs / {calibration['temperature']:.6g})")
    lines += [
        f"decisions  {metrics.n}",
        f"accuracy   {metrics.accuracy:.4f}",
        f"brier      {metrics.brier:.4f}",
        f"ece        {metrics.ece:.4f}",
        f"mce        {metrics.mce:.4f}",
        "",
        f"{n_bins} equal-width confidence bins (confidence = posterior of the chosen alternative)",
    ]
    d = _edge_decimals(n_bins)
    rows = [("bin", "count", "accuracy", "confidence", "gap")]
    for b in metrics.bins:
        close = "]" if b.index == n_bins - 1 else ")"
        rows.append((f"[{b.lower:.{d}f}, {b.upper:.{d}f}{close}", str(b.count),
                     _num(b.accuracy), _num(b.mean_confidence),
                     "-" if b.gap is None else f"{b.gap:+.4f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  " + "  ".join(cells).rstrip())
    if gate_results:
        lines.append("")
        lines.append("gates")
        lines += [f"  {r.describe()}" for r in gate_results]
    return "\n".join(lines) + "\n"
