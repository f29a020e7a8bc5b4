"""Pass/fail limits on the metrics (--max-ece, --max-brier, --min-accuracy), for CI use.

A gate passes when the measured value is on the allowed side of its limit or equal to it.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import List, Optional

from .metrics import CalibrationMetrics

_OPS = {"<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Gate:
    metric: str         # attribute of CalibrationMetrics
    op: str             # "<=" (a maximum) or ">=" (a minimum)
    limit: float
    option: str         # the command-line option that set it, for messages

    def check(self, metrics: CalibrationMetrics) -> "GateResult":
        measured = float(getattr(metrics, self.metric))
        return GateResult(self, measured, _OPS[self.op](measured, self.limit))


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    measured: float
    passed: bool

    def describe(self) -> str:
        """'pass  ece 0.0412 <= 0.05 (--max-ece)' or 'FAIL  ece 0.0731 > 0.05 (--max-ece)'."""
        return f"{'pass' if self.passed else 'FAIL'}  {self.comparison()}"

    def comparison(self) -> str:
        g = self.gate
        shown = g.op if self.passed else {"<=": ">", ">=": "<"}[g.op]
        measured, limit = f"{self.measured:.6g}", f"{g.limit:.6g}"
        if measured == limit and self.measured != g.limit:
            measured, limit = repr(self.measured), repr(g.limit)   # show the digits that differ
        return f"{g.metric} {measured} {shown} {limit} ({g.option})"

    def as_dict(self) -> dict:
        g = self.gate
        return {"metric": g.metric, "op": g.op, "limit": g.limit, "measured": self.measured,
                "passed": self.passed, "option": g.option}


def gates_from_options(max_ece: Optional[float] = None, max_brier: Optional[float] = None,
                       min_accuracy: Optional[float] = None) -> List[Gate]:
    gates = []
    if max_ece is not None:
        gates.append(Gate("ece", "<=", float(max_ece), "--max-ece"))
    if max_brier is not None:
        gates.append(Gate("brier", "<=", float(max_brier), "--max-brier"))
    if min_accuracy is not None:
        gates.append(Gate("accuracy", ">=", float(min_accuracy), "--min-accuracy"))
    return gates


def check_gates(gates: List[Gate], metrics: CalibrationMetrics) -> List[GateResult]:
    return [g.check(metrics) for g in gates]
