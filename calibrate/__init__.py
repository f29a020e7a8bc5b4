"""Calibration reports over labelled `llamay_choice_logprobs` decisions (docs/calibration.md).

decisions: read and validate DECISIONS.jsonl; metrics: accuracy, Brier, ECE, MCE, per-bin table;
gates: CI limits; report: text and JSON; plot: reliability diagram (imports matplotlib).
"""
from .decisions import Decision, DecisionError, DecisionFileError, load_decisions, parse_decisions
from .metrics import Bin, CalibrationMetrics, evaluate

__all__ = ["Bin", "CalibrationMetrics", "Decision", "DecisionError", "DecisionFileError",
           "evaluate", "load_decisions", "parse_decisions"]
