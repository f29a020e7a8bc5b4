"""`llamay ladder`: how a constrained tool call holds up as a model is quantised smaller.

This module is the measuring half, with no model in it: the cases (CASES.jsonl), what one
case's answer says (the tool called, its arguments, whether they conform, the tool decision's
posterior), the per-rung figures against the reference rung (the first) and the labels, the
table, the JSON report, the plot and the gates. server/cli/ladder.py quantises and runs.

CASES.jsonl, one request per line (docs/ladder.md):
    {"messages": [...], "tools": [...], "tool_choice": "required" | "auto" | {...},
     "label": "book_table", "arguments": {...}, ...}
`label` (the expected tool) and `arguments` (the expected arguments) are optional; other
fields are kept in the per-case records. Without `tool_choice` a case asks "required": the
ladder measures tool calls.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

CASE_FIELDS = ("id", "messages", "tools", "tool_choice", "label", "arguments")


class CasesError(ValueError):
    """A CASES.jsonl the ladder cannot use; `problems` are per-line messages."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        self.problems = list(problems)
        super().__init__(message + "".join(f"\n  {p}" for p in self.problems[:10]))


@dataclass(frozen=True)
class Case:
    line: int
    id: Any
    messages: list
    tools: list
    tool_choice: Any
    label: Optional[str]
    arguments: Optional[dict]
    extra: Dict[str, Any]

    def body(self, *, seed: int, max_tokens: int) -> Dict[str, Any]:
        """The OpenAI chat body: greedy, seeded, the tool decision's logprobs asked for."""
        return {"messages": self.messages, "tools": self.tools, "tool_choice": self.tool_choice,
                "temperature": 0, "seed": seed, "max_tokens": max_tokens,
                "llamay_choice_logprobs": True}

    def tool_schema(self, name: str) -> Optional[dict]:
        for t in self.tools:
            fn = t.get("function", t) if isinstance(t, dict) else {}
            if isinstance(fn, dict) and fn.get("name") == name:
                params = fn.get("parameters")
                return params if isinstance(params, dict) else {"type": "object"}
        return None


def load_cases(path: str) -> List[Case]:
    problems: List[str] = []
    cases: List[Case] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CasesError(f"cannot read {path}: {e.strerror or e}") from None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            problems.append(f"line {n}: not JSON ({e})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {n}: not a JSON object")
            continue
        messages, tools = obj.get("messages"), obj.get("tools")
        if not isinstance(messages, list) or not messages:
            problems.append(f"line {n}: 'messages' must be a non-empty list")
            continue
        if not isinstance(tools, list) or not tools:
            problems.append(f"line {n}: 'tools' must be a non-empty list")
            continue
        label, arguments = obj.get("label"), obj.get("arguments")
        if label is not None and not isinstance(label, str):
            problems.append(f"line {n}: 'label' must be a tool name")
            continue
        names = {(t.get("function", t) if isinstance(t, dict) else {}).get("name")
                 for t in tools if isinstance(t, dict)}
        if label is not None and label not in names:
            problems.append(f"line {n}: the label {label!r} is not among the case's tools")
            continue
        if arguments is not None and not isinstance(arguments, dict):
            problems.append(f"line {n}: 'arguments' must be an object")
            continue
        cases.append(Case(n, obj.get("id", n), messages, tools,
                          obj.get("tool_choice", "required"), label, arguments,
                          {k: v for k, v in obj.items() if k not in CASE_FIELDS}))
    if problems:
        raise CasesError(f"{path}: {len(problems)} unusable line(s)", problems)
    if not cases:
        raise CasesError(f"{path}: no cases")
    return cases


@dataclass
class Answer:
    """What one case's response says."""
    tool: Optional[str] = None              # the first call's tool; None: no call
    arguments: Optional[Any] = None         # its parsed arguments (None where they do not parse)
    conforms: bool = False                  # the call names an offered tool, arguments valid
    posterior: Optional[float] = None       # the tool decision's posterior of the chosen tool
    completion_tokens: int = 0
    seconds: float = 0.0
    error: Optional[str] = None             # the request failed (status and message)
    calls: int = 0                          # tool calls in the answer (parallel calls)
    finish_reason: Optional[str] = None
    budget_cut: bool = False                # max_tokens ended it (the closer closed it)

    def as_dict(self) -> dict:
        return {"tool": self.tool, "arguments": self.arguments, "conforms": self.conforms,
                "posterior": self.posterior, "completion_tokens": self.completion_tokens,
                "calls": self.calls, "finish_reason": self.finish_reason,
                "budget_cut": self.budget_cut,
                "seconds": round(self.seconds, 4), "error": self.error}


def read_answer(case: Case, status: int, data: Any, seconds: float) -> Answer:
    """An Answer from one /v1/chat/completions response. Conformance: a text answer conforms
    where the case allows one (tool_choice "auto" / "none"); a call conforms when it names
    an offered tool and its arguments are valid under that tool's parameters (jsonschema)."""
    import jsonschema
    if status != 200 or not isinstance(data, dict):
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message", err) if isinstance(err, dict) else err
        return Answer(seconds=seconds, error=f"{status}: {msg}")
    a = Answer(seconds=seconds,
               completion_tokens=int((data.get("usage") or {}).get("completion_tokens", 0)))
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = message.get("tool_calls") or []
    a.calls, a.finish_reason = len(calls), choice.get("finish_reason")
    # the budget ended the answer: "length", or an unfinished extra call the server dropped
    a.budget_cut = a.finish_reason == "length" or bool(choice.get("llamay_dropped_call"))
    for d in data.get("llamay_choice_logprobs") or []:
        if d.get("pointer") == "tool" and d.get("chosen") in (d.get("alternatives") or []):
            a.posterior = float(d["posterior"][d["alternatives"].index(d["chosen"])])
            break
    if not calls:
        a.conforms = case.tool_choice in ("auto", "none")
        return a
    fn = calls[0].get("function") or {}
    a.tool = fn.get("name")
    try:
        a.arguments = json.loads(fn.get("arguments") or "")
    except ValueError:
        return a
    schema = case.tool_schema(a.tool) if isinstance(a.tool, str) else None
    if schema is not None:
        try:
            jsonschema.validate(a.arguments, schema)
            a.conforms = True
        except jsonschema.ValidationError:
            pass
        except jsonschema.SchemaError:
            a.conforms = isinstance(a.arguments, dict)
    return a


@dataclass
class Rung:
    quant: str
    path: str
    size_bytes: int
    n_params: Optional[int] = None
    source_type: Optional[str] = None       # the source's type when this rung requantised it
    answers: List[Answer] = field(default_factory=list)

    @property
    def bits_per_weight(self) -> Optional[float]:
        return self.size_bytes * 8 / self.n_params if self.n_params else None


def _rate(hits: Sequence[bool]) -> Optional[float]:
    return sum(hits) / len(hits) if hits else None


def _key_agreement(ours: Any, ref: Any) -> Optional[float]:
    """Share of the reference's argument keys whose values are equal in ours."""
    if not isinstance(ref, dict) or not ref:
        return None
    if not isinstance(ours, dict):
        return 0.0
    return sum(k in ours and ours[k] == v for k, v in ref.items()) / len(ref)


def summarize(rungs: Sequence[Rung], cases: Sequence[Case], *, source: str = "",
              seed: int = 0) -> Dict[str, Any]:
    """The report: per rung, rates over the cases, agreements against the first rung."""
    ref = rungs[0]
    out_rungs = []
    for r in rungs:
        pairs = list(zip(r.answers, ref.answers, cases))
        ok = [(a, b, c) for a, b, c in pairs if a.error is None and b.error is None]
        keyed = [k for k in (_key_agreement(a.arguments, b.arguments) for a, b, _ in ok
                             if b.tool is not None) if k is not None]
        labelled = [(a, c) for a, _, c in pairs if c.label is not None]
        expected = [(a, c) for a, _, c in pairs if c.arguments is not None]
        posts = [a.posterior for a in r.answers if a.posterior is not None]
        tokens = sum(a.completion_tokens for a in r.answers)
        seconds = sum(a.seconds for a in r.answers)
        out_rungs.append({
            "quant": r.quant, "path": r.path, "size_bytes": r.size_bytes,
            "bits_per_weight": None if r.bits_per_weight is None
            else round(r.bits_per_weight, 3),
            "requantized_from": r.source_type,
            "cases": len(r.answers),
            "errors": sum(a.error is not None for a in r.answers),
            "conformance": _rate([a.error is None and a.conforms for a in r.answers]),
            "tool_agreement": _rate([a.tool == b.tool for a, b, _ in ok]),
            "label_agreement": _rate([a.tool == c.label for a, c in labelled]),
            "argument_agreement": _rate([a.tool == b.tool and a.arguments == b.arguments
                                         for a, b, _ in ok if b.tool is not None]),
            "argument_key_agreement": sum(keyed) / len(keyed) if keyed else None,
            "expected_argument_agreement": _rate([a.arguments == c.arguments
                                                  for a, c in expected]),
            "mean_posterior": sum(posts) / len(posts) if posts else None,
            "calls_per_case": sum(a.calls for a in r.answers) / max(len(r.answers), 1),
            "budget_cut": _rate([a.budget_cut for a in r.answers]),
            "tokens_per_s": tokens / seconds if seconds > 0 else None,
            "completion_tokens": tokens, "seconds": round(seconds, 3),
        })
    return {"reference": ref.quant, "source": source, "seed": seed, "n_cases": len(cases),
            "rungs": out_rungs,
            "case_answers": [{"id": c.id, "label": c.label, "extra": c.extra, **{
                r.quant: r.answers[i].as_dict() for r in rungs}}
                for i, c in enumerate(cases)]}


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_table(report: Mapping[str, Any]) -> str:
    """The terminal table, one line a rung."""
    head = ("quant", "MiB", "bpw", "conform", "tool=ref", "tool=label", "args=ref", "keys=ref",
            "posterior", "calls", "cut", "tok/s")
    rows = [head]
    for r in report["rungs"]:
        rows.append((r["quant"] + ("*" if r["requantized_from"] else ""),
                     f"{r['size_bytes'] / 2**20:.1f}",
                     "-" if r["bits_per_weight"] is None else f"{r['bits_per_weight']:.2f}",
                     _pct(r["conformance"]), _pct(r["tool_agreement"]),
                     _pct(r["label_agreement"]), _pct(r["argument_agreement"]),
                     _pct(r["argument_key_agreement"]),
                     "-" if r["mean_posterior"] is None else f"{r['mean_posterior']:.3f}",
                     f"{r['calls_per_case']:.2f}", _pct(r["budget_cut"]),
                     "-" if r["tokens_per_s"] is None else f"{r['tokens_per_s']:.1f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                       enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{report['n_cases']} cases; agreements against {report['reference']} "
             f"(the reference rung); seed {report['seed']}"]
    requant = sorted({r["requantized_from"] for r in report["rungs"] if r["requantized_from"]})
    if requant:
        notes.append(f"* requantised from a {', '.join(requant)} source: each rung carries "
                     f"that source's error as well as its own")
    errors = sum(r["errors"] for r in report["rungs"])
    if errors:
        notes.append(f"{errors} request(s) failed; they count against conformance")
    return "\n".join(lines + [""] + notes)


def write_json(report: Mapping[str, Any], path: str) -> None:
    Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def write_plot(report: Mapping[str, Any], path: str) -> None:
    """Agreements and conformance against bits per weight (matplotlib, Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    rungs = sorted((r for r in report["rungs"] if r["bits_per_weight"] is not None),
                   key=lambda r: r["bits_per_weight"])
    xs = [r["bits_per_weight"] for r in rungs]
    for key, label in (("conformance", "schema conformance"),
                       ("tool_agreement", f"tool = {report['reference']}"),
                       ("label_agreement", "tool = label"),
                       ("argument_agreement", f"arguments = {report['reference']}"),
                       ("argument_key_agreement", "argument keys = reference")):
        pts = [(x, r[key]) for x, r in zip(xs, rungs) if r[key] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("bits per weight")
    ax.set_ylabel("rate over the cases")
    ax.set_ylim(-0.02, 1.05)
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    top = ax.twiny()                # the rungs' names above their bits per weight
    top.set_xlim(ax.get_xlim())
    top.set_xticks(xs, [r["quant"] for r in rungs], fontsize=7, rotation=60)
    ax.set_title(f"quant ladder: {Path(str(report.get('source') or '')).name}")
    fig.savefig(path, dpi=120)


GATE_METRICS = {"--min-tool-agreement": "tool_agreement",
                "--min-conformance": "conformance",
                "--min-argument-agreement": "argument_agreement",
                "--min-label-agreement": "label_agreement"}


def check_gates(report: Mapping[str, Any], limits: Mapping[str, Optional[float]],
                at: Optional[str]) -> List[str]:
    """'pass ...' / 'FAIL ...' lines for each gate set, at rung `at` (default: every rung);
    a rate that cannot be measured (no labelled case) fails."""
    lines = []
    rungs = [r for r in report["rungs"] if at is None or r["quant"] == at]
    for option, limit in limits.items():
        if limit is None:
            continue
        metric = GATE_METRICS[option]
        for r in rungs:
            value = r[metric]
            ok = value is not None and not math.isnan(value) and value >= limit
            shown = "-" if value is None else f"{value:.4g}"
            lines.append(f"{'pass' if ok else 'FAIL'}  {r['quant']} {metric} {shown} "
                         f"{'>=' if ok else '<'} {limit:.4g} ({option})")
    return lines
