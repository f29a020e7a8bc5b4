"""Temperature scaling: the fit recovers a known temperature, apply_calibration, and the CLI
(`calibrate fit`, `calibrate report --calibration`) with its exit codes."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from calibrate.decisions import load_decisions, parse_decisions
from calibrate.fit import run_fit
from calibrate.metrics import evaluate
from calibrate.temperature import (Calibration, CalibrationError, apply_calibration,
                                   calibrate_decisions, calibration_from_dict, fit_temperature,
                                   split_decisions, tempered_posterior)
from server.cli import main


def synthetic(n: int, true_temperature: float, seed: int = 0) -> list:
    """Decisions of a model whose logprobs are `true_temperature` times too sharp (T > 1:
    over-confident): labels are drawn from softmax(z), the model reports T·log_softmax(z) minus a
    per-decision mass off the alternatives, so softmax(logprobs / T) is exactly calibrated."""
    rng = np.random.default_rng(seed)
    records = []
    for _ in range(n):
        k = int(rng.integers(2, 6))
        z = rng.normal(0.0, 1.5, k)
        log_p = z - z.max() - np.log(np.exp(z - z.max()).sum())
        label = int(rng.choice(k, p=np.exp(log_p)))
        logprobs = true_temperature * log_p - rng.uniform(0.0, 2.0)
        alts = [f"alt{j}" for j in range(k)]
        records.append({"alternatives": alts, "logprobs": logprobs.tolist(),
                        "posterior": tempered_posterior(logprobs, 1.0),
                        "chosen": alts[int(logprobs.argmax())], "label": alts[label]})
    return records


def as_text(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write(tmp_path, records, name="d.jsonl"):
    path = tmp_path / name
    path.write_text(as_text(records))
    return path


@pytest.mark.parametrize("true_temperature", [2.0, 0.6])
def test_fit_recovers_the_true_temperature_and_lowers_heldout_ece(true_temperature):
    decisions = parse_decisions(as_text(synthetic(4000, true_temperature)), require_logprobs=True)
    result = run_fit(decisions, split=0.5, seed=1)
    assert result.calibration.temperature == pytest.approx(true_temperature, rel=0.08)
    assert (result.n_fit, result.n_heldout, result.evaluated_on) == (2000, 2000, "heldout")
    assert result.after.ece < result.before.ece / 2
    assert result.after.brier < result.before.brier
    assert result.nll_after < result.nll_before
    assert result.after.accuracy == result.before.accuracy      # T never changes the arg-max


def test_fit_at_the_right_temperature_changes_little():
    decisions = parse_decisions(as_text(synthetic(3000, 1.0, seed=5)), require_logprobs=True)
    assert fit_temperature(decisions) == pytest.approx(1.0, rel=0.08)


def test_fit_minimises_the_negative_log_likelihood():
    from calibrate.temperature import negative_log_likelihood
    decisions = parse_decisions(as_text(synthetic(500, 1.7, seed=2)), require_logprobs=True)
    t = fit_temperature(decisions)
    best = negative_log_likelihood(decisions, t)
    for other in (t * 0.9, t * 1.1, 1.0, 3.0):
        assert best <= negative_log_likelihood(decisions, other)


def test_split_is_seeded_and_disjoint():
    decisions = parse_decisions(as_text(synthetic(101, 1.5)), require_logprobs=True)
    fit_a, held_a = split_decisions(decisions, 0.3, seed=4)
    fit_b, held_b = split_decisions(decisions, 0.3, seed=4)
    _, held_c = split_decisions(decisions, 0.3, seed=5)
    assert [d.line for d in held_a] == [d.line for d in held_b]
    assert [d.line for d in held_a] != [d.line for d in held_c]
    assert len(held_a) == 30 and len(fit_a) == 71
    assert {d.line for d in fit_a}.isdisjoint(d.line for d in held_a)
    assert split_decisions(decisions, None, 0) == (list(decisions), [])
    with pytest.raises(ValueError, match="leaves a part empty"):
        split_decisions(decisions[:2], 0.1, 0)


@pytest.mark.parametrize("data, fragment", [
    ({"method": "temperature", "temperature": 1.5}, None),
    ({"method": "temperature", "temperature": 2, "n_fit": 10}, None),
    ([], "expected a JSON object"),
    ({"temperature": 1.5}, "missing 'method'"),
    ({"method": "platt", "temperature": 1.5}, 'unknown method "platt"'),
    ({"method": "temperature"}, "missing 'temperature'"),
    ({"method": "temperature", "temperature": 0}, "finite number > 0"),
    ({"method": "temperature", "temperature": -1.0}, "finite number > 0"),
    ({"method": "temperature", "temperature": True}, "finite number > 0"),
    ({"method": "temperature", "temperature": "2"}, "finite number > 0"),
    ({"method": "temperature", "temperature": float("inf")}, "finite number > 0"),
])
def test_calibration_validation(data, fragment):
    if fragment is None:
        assert calibration_from_dict(data).temperature == float(data["temperature"])
    else:
        with pytest.raises(CalibrationError, match=fragment):
            calibration_from_dict(data)


def test_apply_calibration_keeps_raw_logprobs_and_is_idempotent():
    decision = {"pointer": "/intent", "alternatives": ["refund", "cancel", "track"],
                "logprobs": [-0.4, -2.1, -3.0], "posterior": [0.78, 0.14, 0.08],
                "probed_mass": 0.97, "chosen": "refund"}
    out = apply_calibration(decision, {"method": "temperature", "temperature": 2.0})
    assert out["logprobs"] == decision["logprobs"] and out["chosen"] == "refund"
    assert out["pointer"] == "/intent" and out["probed_mass"] == 0.97
    z = np.array(decision["logprobs"]) / 2.0
    assert out["posterior"] == pytest.approx((np.exp(z) / np.exp(z).sum()).tolist())
    assert math.fsum(out["posterior"]) == pytest.approx(1.0, abs=1e-12)
    assert out["posterior"][0] < 0.78                      # flatter
    assert out["calibration"] == {"method": "temperature", "temperature": 2.0}
    assert apply_calibration(out, Calibration(2.0))["posterior"] == out["posterior"]
    assert decision["posterior"] == [0.78, 0.14, 0.08]     # the input is not changed
    with pytest.raises(ValueError, match="logprobs"):
        apply_calibration({k: v for k, v in decision.items() if k != "logprobs"}, Calibration(2.0))
    with pytest.raises(ValueError, match="finite numbers"):
        apply_calibration(dict(decision, logprobs=[-0.4, None, -3.0]), Calibration(2.0))
    with pytest.raises(CalibrationError):
        apply_calibration(decision, {"method": "temperature", "temperature": 0})


def test_tempered_posterior_is_stable_for_very_negative_logprobs():
    p = tempered_posterior([-1000.0, -1001.0], 0.5)
    assert p == pytest.approx([1 / (1 + math.exp(-2)), math.exp(-2) / (1 + math.exp(-2))])


# --- the command line -----------------------------------------------------------------------

def invoke(*args, input=None):
    return CliRunner().invoke(main, ["calibrate", *map(str, args)], input=input)


def test_fit_command_writes_calibration_json_and_prints_before_after(tmp_path):
    path = write(tmp_path, synthetic(1000, 2.0, seed=3))
    out = tmp_path / "cal.json"
    r = invoke("fit", path, "--out", out, "--split", "0.5", "--seed", "7")
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["method"] == "temperature" and data["temperature"] == pytest.approx(2.0, rel=0.15)
    assert (data["n_fit"], data["n_heldout"], data["seed"], data["split"]) == (500, 500, 7, 0.5)
    assert data["evaluated_on"] == "heldout"
    assert data["after"]["ece"] < data["before"]["ece"]
    decisions = load_decisions(path, require_logprobs=True)
    _, held = split_decisions(decisions, 0.5, 7)
    assert data["before"]["ece"] == evaluate(held).ece
    assert data["after"]["ece"] == evaluate(
        calibrate_decisions(held, Calibration(data["temperature"]))).ece
    for name in ("ece", "brier", "accuracy"):
        [row] = [ln for ln in r.stdout.splitlines() if ln.split()[:1] == [name]]
        assert row.split()[1:] == [f"{data['before'][name]:.4f}", f"{data['after'][name]:.4f}"]
    assert "measured on the 500 held out" in r.stdout


def test_fit_without_split_says_it_is_in_sample(tmp_path):
    path = write(tmp_path, synthetic(200, 2.0))
    out = tmp_path / "cal.json"
    r = invoke("fit", path, "--out", out)
    assert r.exit_code == 0, r.output
    assert "in-sample" in r.stdout
    data = json.loads(out.read_text())
    assert ((data["n_fit"], data["n_heldout"], data["evaluated_on"], data["split"])
            == (200, 0, "all", None))


GOOD = {"alternatives": ["a", "b"], "logprobs": [-0.2, -1.9], "posterior": [0.85, 0.15],
        "chosen": "a", "label": "b"}


@pytest.mark.parametrize("records, args, fragment", [
    ([GOOD, {k: v for k, v in GOOD.items() if k != "logprobs"}], [],
     "line 2, field 'logprobs': missing"),
    ([GOOD, dict(GOOD, logprobs=[-0.2])], [], "line 2, field 'logprobs': has 1 values"),
    ([GOOD, dict(GOOD, label="c")], [], "line 2, field 'label'"),
    ([GOOD] * 4, ["--split", "1.5"], "--split"),
    ([GOOD] * 4, ["--split", "0"], "--split"),
    ([GOOD] * 2, ["--split", "0.1"], "leaves a part empty"),
    ([GOOD] * 4, ["--out", "{tmp}/no/such/dir/c.json"], "cannot write --out"),
    ([], [], "no decisions"),
])
def test_fit_bad_input_exits_2(tmp_path, records, args, fragment):
    path = write(tmp_path, records)
    args = [a.format(tmp=tmp_path) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "c.json")]
    r = invoke("fit", path, *args)
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr and "Traceback" not in r.output


def test_report_with_calibration_applies_it(tmp_path):
    path = write(tmp_path, synthetic(600, 2.0, seed=9))
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"method": "temperature", "temperature": 2.0}))
    out = tmp_path / "r.json"
    raw = evaluate(load_decisions(path))
    fixed = evaluate(calibrate_decisions(load_decisions(path, require_logprobs=True),
                                         Calibration(2.0)))
    assert fixed.ece < raw.ece
    # a gate between the two: fails on the raw posteriors, holds once calibrated
    limit = repr((raw.ece + fixed.ece) / 2)
    assert invoke("report", path, "--max-ece", limit).exit_code == 1
    r = invoke("report", path, "--max-ece", limit, "--calibration", cal, "--json", out)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["ece"] == fixed.ece and data["brier"] == fixed.brier
    assert data["calibration"] == {"method": "temperature", "temperature": 2.0}
    assert data["source"] == str(path)
    assert "softmax(logprobs / 2)" in r.stdout


@pytest.mark.parametrize("calibration, records, fragment", [
    ('{"method": "temperature", "temperature": -2}', [GOOD], "finite number > 0"),
    ('{"method": "isotonic"}', [GOOD], 'unknown method "isotonic"'),
    ("not json", [GOOD], "not valid JSON"),
    (None, [GOOD], "cannot read it"),
    ('{"method": "temperature", "temperature": 2}',
     [GOOD, {k: v for k, v in GOOD.items() if k != "logprobs"}],
     "line 2, field 'logprobs': missing"),
])
def test_report_bad_calibration_exits_2(tmp_path, calibration, records, fragment):
    path = write(tmp_path, records)
    cal = tmp_path / "cal.json"
    if calibration is not None:
        cal.write_text(calibration)
    r = invoke("report", path, "--calibration", cal)
    assert r.exit_code == 2, r.output
    assert fragment in r.stderr and "Traceback" not in r.output
