"""Reading and validating DECISIONS.jsonl, the labelled output of `llamay_choice_logprobs`.

One JSON object per line: {"alternatives": [...], "posterior": [...], "chosen": ..., "label": ...}
(the server's fields plus the label a person or a gold set adds; any other field is ignored).
Blank lines are skipped; a file with no decision is an error.

Alternatives, `chosen` and `label` are JSON scalars (string, number, boolean, null) compared by
JSON equality: 1 equals 1.0, true is not 1, "true" is not true. The server's "logprobs" (one raw
log-probability per alternative) are read only when asked for (`require_logprobs=True`: fitting
and applying a calibration need them); otherwise they are ignored like any other extra field.

A posterior whose sum is off 1 by at most `sum_tolerance` (default 0.01, enough for values
rounded to two decimals over a few alternatives; 1e-9 more for binary rounding) is renormalised
so that it sums to 1, which keeps the Brier score inside [0, 2]; a larger deviation means the
numbers are not a posterior over these alternatives (logprobs pasted by mistake, a missing
alternative) and the line is refused. Every bad line is reported with its 1-based line number
and the field at fault.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

DEFAULT_SUM_TOLERANCE = 0.01
# a file with thousands of bad lines is usually one systematic mistake: show the first few
MAX_REPORTED_PROBLEMS = 10
REQUIRED_FIELDS = ("alternatives", "posterior", "chosen", "label")
# a rounded log-probability may print as a tiny positive number; anything larger is not one
LOGPROB_SLACK = 1e-6
SCALAR_KINDS = "a string, number, boolean or null"


class DecisionError(ValueError):
    """One line of a decisions file that cannot be used; `field` is None for the line as a whole."""

    def __init__(self, line: int, field: Optional[str], reason: str):
        self.line = line
        self.field = field
        self.reason = reason
        where = f"line {line}" + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {reason}")


class DecisionFileError(ValueError):
    """A decisions file that cannot be reported on: bad lines (`problems`), none at all, or
    unreadable."""

    def __init__(self, source: str, message: str, problems: Sequence[DecisionError] = (),
                 total_problems: int = 0):
        self.source = source
        self.problems = list(problems)
        self.total_problems = max(total_problems, len(self.problems))
        super().__init__(message)


@dataclass(frozen=True)
class Decision:
    """One validated decision; `posterior` sums to 1 and lines up with `alternatives`."""
    line: int
    alternatives: Tuple[Any, ...]
    posterior: Tuple[float, ...]
    chosen: Any
    label: Any
    logprobs: Optional[Tuple[float, ...]] = None    # read only with require_logprobs=True

    @property
    def chosen_index(self) -> int:
        return index_of(self.alternatives, self.chosen)

    @property
    def label_index(self) -> int:
        return index_of(self.alternatives, self.label)

    @property
    def confidence(self) -> float:
        """The posterior of the chosen alternative (the contract's confidence)."""
        return self.posterior[self.chosen_index]

    @property
    def correct(self) -> bool:
        return json_key(self.chosen) == json_key(self.label)


def json_key(value) -> tuple:
    """A hashable key under which JSON-equal scalars coincide (1 and 1.0) and others differ
    (Python's True == 1, JSON's true is not 1)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    raise TypeError(f"not a JSON scalar: {value!r}")


def is_scalar(value) -> bool:
    if value is None or isinstance(value, (bool, str, int)):
        return True
    return isinstance(value, float) and math.isfinite(value)


def index_of(alternatives: Sequence[Any], value) -> int:
    """The position of `value` among `alternatives` by JSON equality; ValueError when absent."""
    key = json_key(value)
    for i, alt in enumerate(alternatives):
        if json_key(alt) == key:
            return i
    raise ValueError(f"{value!r} is not among the alternatives")


def _describe(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(value) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def _alternatives(line: int, value) -> Tuple[Any, ...]:
    if not isinstance(value, list):
        raise DecisionError(line, "alternatives", f"expected an array, got {_type_name(value)}")
    if not value:
        raise DecisionError(line, "alternatives", "is empty")
    seen = set()
    for i, alt in enumerate(value):
        if not is_scalar(alt):
            raise DecisionError(line, "alternatives",
                                f"item {i} is {_type_name(alt)} {_describe(alt)}, "
                                f"expected {SCALAR_KINDS}")
        key = json_key(alt)
        if key in seen:
            raise DecisionError(line, "alternatives", f"duplicate alternative {_describe(alt)}")
        seen.add(key)
    return tuple(value)


def _logprobs(line: int, value, n_alternatives: int) -> Tuple[float, ...]:
    if not isinstance(value, list):
        raise DecisionError(line, "logprobs",
                            f"expected an array of numbers, got {_type_name(value)}")
    if len(value) != n_alternatives:
        raise DecisionError(line, "logprobs", f"has {len(value)} values for {n_alternatives} "
                                              f"alternatives")
    out = []
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise DecisionError(line, "logprobs",
                                f"item {i} is {_type_name(x)} {_describe(x)}, expected a number")
        x = float(x)
        if not math.isfinite(x):
            raise DecisionError(line, "logprobs", f"item {i} is {x}, expected a finite number")
        if x > LOGPROB_SLACK:
            raise DecisionError(line, "logprobs",
                                f"item {i} is positive ({x!r}); a log-probability "
                                f"is <= 0 (probabilities pasted by mistake?)")
        out.append(min(x, 0.0))
    return tuple(out)


def _posterior(line: int, value, n_alternatives: int, sum_tolerance: float) -> Tuple[float, ...]:
    if not isinstance(value, list):
        raise DecisionError(line, "posterior",
                            f"expected an array of numbers, got {_type_name(value)}")
    if len(value) != n_alternatives:
        raise DecisionError(line, "posterior", f"has {len(value)} values for {n_alternatives} "
                                               f"alternatives")
    probs = []
    for i, p in enumerate(value):
        # bool is an int in Python but never a probability in JSON
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise DecisionError(line, "posterior",
                                f"item {i} is {_type_name(p)} {_describe(p)}, expected a number")
        p = float(p)
        if not math.isfinite(p):
            raise DecisionError(line, "posterior", f"item {i} is {p}, expected a finite number")
        probs.append(p)
    for i, p in enumerate(probs):
        if p < 0:
            looks_like = "; these look like logprobs" if all(q <= 0 for q in probs) else ""
            raise DecisionError(line, "posterior", f"item {i} is negative ({p!r}){looks_like}")
    total = math.fsum(probs)
    # the slack absorbs binary rounding, so that 0.71 + 0.05 + 0.25 is within 0.01 of 1
    if abs(total - 1.0) > sum_tolerance + 1e-9:
        raise DecisionError(line, "posterior",
                            f"sums to {total:.6g}, not 1 (tolerance {sum_tolerance:g}); "
                            f"expected probabilities over the alternatives, not logprobs")
    return tuple(p / total for p in probs)


def _member(line: int, name: str, value, alternatives: Tuple[Any, ...]):
    keys = {json_key(a) for a in alternatives}
    if value is None and ("null",) not in keys:
        why = " (the output matched no alternative)" if name == "chosen" else ""
        raise DecisionError(line, name, f"is null{why}")
    if not is_scalar(value):
        raise DecisionError(line, name, f"expected {SCALAR_KINDS}, got {_type_name(value)} "
                                        f"{_describe(value)}")
    if json_key(value) not in keys:
        hint = ""
        # alternatives written as JSON text ("\"refund\"", "true") against a label written as
        # a value, or the other way round, is a common slip: name the spelling that would match
        text = json.dumps(value, ensure_ascii=False)
        if ("string", text) in keys:
            hint = f"; the alternatives are JSON text, did you mean {_describe(text)}?"
        elif isinstance(value, str):
            try:
                bare = json.loads(value)
            except ValueError:
                bare = ...
            if bare is not ... and is_scalar(bare) and json_key(bare) in keys:
                hint = f"; did you mean {_describe(bare)} ({_type_name(bare)})?"
        raise DecisionError(line, name, f"{_describe(value)} is not among the alternatives "
                                        f"{_describe(list(alternatives))}{hint}")
    return value


def parse_decision(line: int, text: str, *, sum_tolerance: float = DEFAULT_SUM_TOLERANCE,
                   require_logprobs: bool = False) -> Decision:
    """Validate one non-blank line; raises DecisionError naming the line and field."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise DecisionError(line, None, f"not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise DecisionError(line, None, f"expected a JSON object, got {_type_name(obj)}")
    missing = [f for f in REQUIRED_FIELDS if f not in obj]
    if missing:
        field = missing[0]
        why = " (the report needs labelled decisions)" if field == "label" else ""
        raise DecisionError(line, field, f"missing{why}")
    alternatives = _alternatives(line, obj["alternatives"])
    posterior = _posterior(line, obj["posterior"], len(alternatives), sum_tolerance)
    chosen = _member(line, "chosen", obj["chosen"], alternatives)
    label = _member(line, "label", obj["label"], alternatives)
    logprobs = None
    if require_logprobs:
        if "logprobs" not in obj:
            raise DecisionError(line, "logprobs", "missing (fitting or applying a calibration "
                                                  "needs the raw log-probabilities)")
        logprobs = _logprobs(line, obj["logprobs"], len(alternatives))
    return Decision(line, alternatives, posterior, chosen, label, logprobs)


def parse_decisions(data: Union[bytes, str], source: str = "<input>", *,
                    sum_tolerance: float = DEFAULT_SUM_TOLERANCE,
                    require_logprobs: bool = False) -> List[Decision]:
    """All decisions of a JSONL document; raises DecisionFileError listing the bad lines."""
    if sum_tolerance < 0 or not math.isfinite(sum_tolerance):
        raise ValueError(f"sum_tolerance must be a finite number >= 0, got {sum_tolerance!r}")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    decisions: List[Decision] = []
    problems: List[DecisionError] = []
    total = 0
    # split on LF only: JSON strings may hold other line separators (U+2028) unescaped
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        try:
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DecisionError(number, None, f"not UTF-8 text (byte {e.start})") from None
            decisions.append(parse_decision(number, text, sum_tolerance=sum_tolerance,
                                            require_logprobs=require_logprobs))
        except DecisionError as e:
            total += 1
            if len(problems) < MAX_REPORTED_PROBLEMS:
                problems.append(e)
    if total:
        lines = "\n".join(f"  {p}" for p in problems)
        more = f"\n  ... and {total - len(problems)} more" if total > len(problems) else ""
        noun = "line" if total == 1 else "lines"
        raise DecisionFileError(source, f"{source}: {total} bad {noun}:\n{lines}{more}",
                                problems, total)
    if not decisions:
        raise DecisionFileError(source, f"{source}: no decisions (the file is empty or blank)")
    return decisions


def load_decisions(path: Union[str, Path], *, sum_tolerance: float = DEFAULT_SUM_TOLERANCE,
                   require_logprobs: bool = False) -> List[Decision]:
    """Read and validate a DECISIONS.jsonl file."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise DecisionFileError(str(path), f"{path}: cannot read it ({e.strerror or e})") from None
    return parse_decisions(data, str(path), sum_tolerance=sum_tolerance,
                           require_logprobs=require_logprobs)
