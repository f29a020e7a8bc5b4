"""`llamay calibrate report`: text report, --json, --plot, --bins, gates and exit codes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibrate.decisions import load_decisions
from calibrate.metrics import evaluate
from server.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "testdata" / "calibration" / "decisions-example.jsonl"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def invoke(*args, input=None):
    return CliRunner().invoke(main, ["calibrate", "report", *map(str, args)], input=input)


@pytest.fixture(scope="module")
def expected():
    return evaluate(load_decisions(EXAMPLE), 10)


def write(tmp_path, records, name="d.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_text_report(expected):
    r = invoke(EXAMPLE)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert f"decisions  {expected.n}\n" in out
    for name in ("accuracy", "brier", "ece", "mce"):
        assert f"{name:<10} {getattr(expected, name):.4f}\n" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("  [")]
    assert len(rows) == 10
    assert rows[0].split()[:3] == ["[0.0,", "0.1)", str(expected.bins[0].count)]
    assert rows[-1].startswith("  [0.9, 1.0]")        # the last bin is closed
    assert "gates" not in out and r.stderr == ""


def test_json_output_matches_the_metrics(tmp_path, expected):
    out = tmp_path / "report.json"
    r = invoke(EXAMPLE, "--json", out)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert {"n", "accuracy", "brier", "ece", "mce", "bins"} <= data.keys()
    assert data["n"] == expected.n and data["bins"] == 10
    for name in ("accuracy", "brier", "ece", "mce"):
        assert data[name] == getattr(expected, name)
    assert [b["count"] for b in data["per_bin"]] == [b.count for b in expected.bins]
    assert data["per_bin"][9] == {
        "index": 9, "lower": 0.9, "upper": 1.0, "count": expected.bins[9].count,
        "accuracy": expected.bins[9].accuracy, "mean_confidence": expected.bins[9].mean_confidence,
        "gap": expected.bins[9].gap}
    assert data["gates"] == [] and data["passed"] is True
    assert data["source"] == str(EXAMPLE)


@pytest.mark.parametrize("bins", [1, 3, 5, 20])
def test_bins_option(tmp_path, bins):
    out = tmp_path / "r.json"
    r = invoke(EXAMPLE, "--bins", bins, "--json", out)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    want = evaluate(load_decisions(EXAMPLE), bins)
    assert data["bins"] == bins and len(data["per_bin"]) == bins
    assert data["ece"] == want.ece and data["mce"] == want.mce
    assert data["per_bin"][-1]["upper"] == 1.0
    assert sum(1 for ln in r.stdout.splitlines() if ln.startswith("  [")) == bins


def test_plot_is_a_png(tmp_path):
    png = tmp_path / "reliability.png"
    r = invoke(EXAMPLE, "--plot", png)
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert png.stat().st_size > 5000                    # a drawn figure, not an empty canvas


def _just(value, above: bool) -> str:
    return repr(value * (1.05 if above else 0.95))


# (option, metric, limit above the measured value?, passes?)
GATE_CASES = [
    ("--max-ece", "ece", True, True),
    ("--max-ece", "ece", False, False),
    ("--max-brier", "brier", True, True),
    ("--max-brier", "brier", False, False),
    ("--min-accuracy", "accuracy", False, True),
    ("--min-accuracy", "accuracy", True, False),
]


@pytest.mark.parametrize("option, metric, above, passes", GATE_CASES)
def test_single_gate(tmp_path, expected, option, metric, above, passes):
    out = tmp_path / "r.json"
    limit = _just(getattr(expected, metric), above)
    r = invoke(EXAMPLE, option, limit, "--json", out)
    assert r.exit_code == (0 if passes else 1), r.output
    data = json.loads(out.read_text())          # written whether or not the gate passes
    [gate] = data["gates"]
    assert gate == {"metric": metric, "op": "<=" if option.startswith("--max") else ">=",
                    "limit": float(limit), "measured": getattr(expected, metric),
                    "passed": passes, "option": option}
    assert data["passed"] is passes
    if passes:
        assert r.stderr == ""
        assert f"pass  {metric} " in r.stdout
    else:
        assert f"calibration gate failed: {metric} " in r.stderr
        assert option in r.stderr and f"FAIL  {metric} " in r.stdout


def test_gate_at_exactly_the_measured_value_passes(expected):
    r = invoke(EXAMPLE, "--max-ece", repr(expected.ece), "--max-brier", repr(expected.brier),
               "--min-accuracy", repr(expected.accuracy))
    assert r.exit_code == 0, r.output


def test_one_failing_gate_among_several_fails_and_is_named(expected):
    r = invoke(EXAMPLE, "--max-ece", _just(expected.ece, True), "--max-brier", "0.0001",
               "--min-accuracy", _just(expected.accuracy, False))
    assert r.exit_code == 1
    failures = [ln for ln in r.stderr.splitlines() if ln.startswith("calibration gate failed")]
    assert len(failures) == 1 and "brier" in failures[0] and "--max-brier" in failures[0]
    assert "> 0.0001" in failures[0]


def test_stdin(expected):
    r = invoke("-", input=EXAMPLE.read_bytes())
    assert r.exit_code == 0, r.output
    assert f"ece        {expected.ece:.4f}" in r.stdout and "<stdin>" in r.stdout


GOOD = {"alternatives": ["a", "b"], "posterior": [0.6, 0.4], "chosen": "a", "label": "b"}


@pytest.mark.parametrize("args, fragment", [
    (["{missing}"], "cannot read it"),
    (["{bad}"], "line 2, field 'posterior': has 1 values for 2 alternatives"),
    (["{empty}"], "no decisions"),
    (["{good}", "--bins", "0"], "--bins"),
    (["{good}", "--bins", "many"], "--bins"),
    (["{good}", "--max-ece", "-0.1"], "--max-ece"),
    (["{good}", "--min-accuracy", "1.5"], "--min-accuracy"),
    (["{good}", "--max-brier", "lots"], "--max-brier"),
    (["{good}", "--json", "{tmp}/no/such/dir/r.json"], "cannot write --json"),
    (["{good}", "--plot", "{tmp}/no/such/dir/r.png"], "cannot write --plot"),
    (["{good}", "--json", "{tmp}"], "--json"),
    (["{good}", "--sum-tolerance", "2"], "--sum-tolerance"),
    ([], "DECISIONS.jsonl"),
    (["{good}", "--no-such-option"], "--no-such-option"),
])
def test_input_and_usage_errors_exit_2_without_traceback(tmp_path, args, fragment):
    paths = {
        "good": write(tmp_path, [GOOD], "good.jsonl"),
        "bad": tmp_path / "bad.jsonl",
        "empty": tmp_path / "empty.jsonl",
        "missing": tmp_path / "missing.jsonl",
        "tmp": tmp_path,
    }
    paths["bad"].write_text(json.dumps(GOOD) + "\n"
                            + json.dumps(dict(GOOD, posterior=[1.0])) + "\n")
    paths["empty"].write_text("\n\n")
    r = invoke(*[a.format(**paths) for a in args])
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_renormalised_posteriors_and_tolerance_option(tmp_path):
    # .62 + .4 = 1.02: refused at the default tolerance, accepted (and renormalised) at 0.05
    path = write(tmp_path, [dict(GOOD, posterior=[0.62, 0.4])])
    assert invoke(path).exit_code == 2
    out = tmp_path / "r.json"
    r = invoke(path, "--sum-tolerance", "0.05", "--json", out)
    assert r.exit_code == 0, r.output
    # confidence .62/1.02, wrong: brier = 2 · (.62/1.02)²
    assert json.loads(out.read_text())["brier"] == pytest.approx(2 * (0.62 / 1.02) ** 2)


def _llamay_command():
    exe = Path(sys.executable).parent / "llamay"
    found = shutil.which("llamay") or (str(exe) if exe.exists() else None)
    assert found, "the llamay console command is not installed (pip install -e .)"
    return found


def test_console_command_as_a_process(tmp_path, expected):
    png, out = tmp_path / "r.png", tmp_path / "r.json"
    env = dict(os.environ)
    # the repository first on the path, whatever the editable install points at
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    p = subprocess.run([_llamay_command(), "calibrate", "report", str(EXAMPLE), "--plot", str(png),
                        "--json", str(out), "--max-ece", repr(expected.ece / 2)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 1, p.stderr
    assert "calibration gate failed: ece" in p.stderr and "Traceback" not in p.stderr
    assert f"decisions  {expected.n}" in p.stdout
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert json.loads(out.read_text())["ece"] == expected.ece


@pytest.mark.parametrize("bins, first, last", [
    (3, "[0.0000, 0.3333)", "[0.6667, 1.0000]"),
    (8, "[0.000, 0.125)", "[0.875, 1.000]"),
    (20, "[0.00, 0.05)", "[0.95, 1.00]"),
    (1, "[0.0, 1.0]", "[0.0, 1.0]"),
])
def test_bin_edges_are_printed_exactly(bins, first, last):
    rows = [ln.strip() for ln in invoke(EXAMPLE, "--bins", bins).stdout.splitlines()
            if ln.startswith("  [")]
    assert rows[0].startswith(first) and rows[-1].startswith(last)


@pytest.mark.parametrize("measured, limit, op, text", [
    (0.0830523, 0.05, "<=", "ece 0.0830523 > 0.05 (--max-ece)"),
    (0.04, 0.05, "<=", "ece 0.04 <= 0.05 (--max-ece)"),
    # equal at six digits but over the limit: the full digits show why it failed
    (0.1000000001, 0.1, "<=", "ece 0.1000000001 > 0.1 (--max-ece)"),
    (0.69, 0.7, ">=", "ece 0.69 < 0.7 (--max-ece)"),
])
def test_gate_comparison_text(measured, limit, op, text):
    from calibrate.gates import Gate, GateResult
    gate = Gate("ece", op, limit, "--max-ece")
    passed = measured <= limit if op == "<=" else measured >= limit
    assert GateResult(gate, measured, passed).comparison() == text
