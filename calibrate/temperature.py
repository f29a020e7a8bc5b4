"""Temperature scaling of choice posteriors: fit T on labelled decisions, apply it anywhere.

A decision carries one raw log-probability l_k per alternative (the server's "logprobs"). The
calibrated posterior is softmax(l / T) over the same alternatives: T > 1 flattens an
over-confident model, T < 1 sharpens an under-confident one, T = 1 is the server's own posterior,
and the arg-max (hence the chosen alternative and the accuracy) never changes.

fit_temperature minimises the mean negative log-likelihood of the labels,
    NLL(T) = -(1/n) * sum_i log softmax(l_i / T)[label_i],
over log T in [log T_MIN, log T_MAX] (scipy's bounded Brent search; NLL is smooth in log T and
the bounds keep a separable fit set from driving T to 0).

CALIBRATION.json: {"method": "temperature", "temperature": T, ...}; any other key is kept as
information (the fit's sizes, seed and metrics) and ignored when applying.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .decisions import Decision

METHOD = "temperature"
T_MIN = 0.01
T_MAX = 100.0


class CalibrationError(ValueError):
    """A CALIBRATION.json (or dict) that cannot be applied; the message says what is wrong."""


@dataclass(frozen=True)
class Calibration:
    temperature: float
    method: str = METHOD

    def as_dict(self) -> dict:
        return {"method": self.method, "temperature": self.temperature}


def calibration_from_dict(data, source: str = "calibration") -> Calibration:
    """Validate the contract's shape: an object with method "temperature" and a temperature > 0."""
    if isinstance(data, Calibration):
        return data
    if not isinstance(data, Mapping):
        raise CalibrationError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if "method" not in data:
        raise CalibrationError(f"{source}: missing 'method' (expected \"{METHOD}\")")
    if data["method"] != METHOD:
        raise CalibrationError(f"{source}: unknown method {json.dumps(data['method'])} "
                               f"(only \"{METHOD}\" is supported)")
    if "temperature" not in data:
        raise CalibrationError(f"{source}: missing 'temperature'")
    t = data["temperature"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise CalibrationError(f"{source}: 'temperature' must be a finite number > 0, "
                               f"got {json.dumps(t)}")
    return Calibration(float(t))


def load_calibration(path: Union[str, Path]) -> Calibration:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CalibrationError(
            f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise CalibrationError(f"{path}: not valid JSON ({e})") from None
    return calibration_from_dict(data, str(path))


def tempered_posterior(logprobs: Sequence[float], temperature: float) -> List[float]:
    """softmax(logprobs / T), computed stably (shifted by the maximum)."""
    x = np.asarray(logprobs, dtype=np.float64) / float(temperature)
    x = np.exp(x - x.max())
    return (x / x.sum()).tolist()


def apply_calibration(decision: Mapping[str, Any], calibration) -> Dict[str, Any]:
    """The decision (the contract's dict shape) with its posterior replaced by
    softmax(logprobs / T).

    Everything else is kept, the raw "logprobs" included, and "calibration" records what was
    applied. Applying is idempotent: the posterior is computed from the raw logprobs each time.
    Raises ValueError when the decision has no usable logprobs.
    """
    cal = calibration_from_dict(calibration)
    logprobs = decision.get("logprobs")
    alternatives = decision.get("alternatives")
    if not isinstance(logprobs, list) or not isinstance(alternatives, list) \
            or len(logprobs) != len(alternatives) or not logprobs:
        raise ValueError("applying a calibration needs one 'logprobs' value per alternative")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
               for x in logprobs):
        raise ValueError("applying a calibration needs finite numbers as 'logprobs'")
    out = dict(decision)
    out["posterior"] = tempered_posterior(logprobs, cal.temperature)
    out["calibration"] = cal.as_dict()
    return out


def calibrate_decisions(decisions: Sequence[Decision], calibration) -> List[Decision]:
    """Validated decisions (read with require_logprobs=True) with calibrated posteriors."""
    cal = calibration_from_dict(calibration)
    out = []
    for d in decisions:
        if d.logprobs is None:
            raise ValueError(f"line {d.line}: no logprobs to calibrate")
        out.append(replace(d, posterior=tuple(tempered_posterior(d.logprobs, cal.temperature))))
    return out


def _arrays(decisions: Sequence[Decision]) -> Tuple[np.ndarray, np.ndarray]:
    """Logprobs padded with -inf (a padded column has probability 0 at any T) and label indices."""
    width = max(len(d.alternatives) for d in decisions)
    lp = np.full((len(decisions), width), -np.inf)
    for i, d in enumerate(decisions):
        if d.logprobs is None:
            raise ValueError(f"line {d.line}: no logprobs to fit on")
        lp[i, :len(d.logprobs)] = d.logprobs
    labels = np.fromiter((d.label_index for d in decisions), dtype=np.int64, count=len(decisions))
    return lp, labels


def negative_log_likelihood(decisions: Sequence[Decision], temperature: float) -> float:
    lp, labels = _arrays(decisions)
    return _nll(lp, labels, temperature)


def _nll(lp: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    z = lp / temperature
    m = z.max(axis=1, keepdims=True)
    log_norm = m[:, 0] + np.log(np.exp(z - m).sum(axis=1))
    return float((log_norm - z[np.arange(len(labels)), labels]).mean())


def fit_temperature(decisions: Sequence[Decision]) -> float:
    """The T in [T_MIN, T_MAX] minimising the labels' mean negative log-likelihood."""
    from scipy.optimize import minimize_scalar

    if not decisions:
        raise ValueError("no decisions to fit on")
    lp, labels = _arrays(decisions)
    result = minimize_scalar(lambda u: _nll(lp, labels, math.exp(u)), method="bounded",
                             bounds=(math.log(T_MIN), math.log(T_MAX)), options={"xatol": 1e-6})
    return float(math.exp(result.x))


def split_decisions(decisions: Sequence[Decision], heldout: Optional[float], seed: int
                    ) -> Tuple[List[Decision], List[Decision]]:
    """(fit part, held-out part): a seeded permutation, round(heldout * n) decisions held out.

    heldout None or 0 means no split: the fit part is everything and the held-out part empty.
    Both parts must be non-empty when splitting.
    """
    n = len(decisions)
    if not heldout:
        return list(decisions), []
    if not 0 < heldout < 1:
        raise ValueError(f"split must lie in (0, 1), got {heldout}")
    k = int(round(heldout * n))
    if k < 1 or k > n - 1:
        raise ValueError(f"split {heldout} of {n} decisions leaves a part empty")
    order = np.random.default_rng(seed).permutation(n)
    held = set(order[:k].tolist())
    fit = [d for i, d in enumerate(decisions) if i not in held]
    out = [d for i, d in enumerate(decisions) if i in held]
    return fit, out
