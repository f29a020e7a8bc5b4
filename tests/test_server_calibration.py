"""`llamay serve --calibration`: every reported posterior is softmax(logprobs / T) over the same
alternatives, the raw logprobs stay; and `llamay calibrate collect -m MODEL` runs in-process
through the server's own request path."""
from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from server.api.settings import Settings
from server.cli import main
from server.cli.serve import decision_correction

ROOT = Path(__file__).resolve().parent.parent
ROUTING = {"type": "object",
           "properties": {"intent": {"enum": ["refund", "cancel", "track"]},
                          "urgent": {"type": "boolean"}},
           "required": ["intent", "urgent"]}
BODY = {"messages": [{"role": "user", "content": "I want my money back"}], "max_tokens": 200,
        "seed": 4, "llamay_schema": ROUTING, "llamay_choice_logprobs": True}


def _softmax(xs, t):
    m = max(x / t for x in xs)
    e = [math.exp(x / t - m) for x in xs]
    return [v / sum(e) for v in e]


def _decisions(server):
    r = httpx.post(server.base + "/v1/chat/completions", json=BODY, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["llamay_choice_logprobs"]


@pytest.fixture(scope="module")
def calibrated(live, tmp_path_factory):
    from server_harness import LiveServer
    path = tmp_path_factory.mktemp("cal") / "calibration.json"
    path.write_text(json.dumps({"method": "temperature", "temperature": 2.5}))
    s = LiveServer(Settings(model=live.state.model,
                            decision_correction=decision_correction(str(path))))
    yield s
    s.stop()


def test_calibration_tempers_every_posterior_and_keeps_the_raw_logprobs(live, calibrated):
    raw, corrected = _decisions(live), _decisions(calibrated)
    assert [d["pointer"] for d in raw] == [d["pointer"] for d in corrected]
    assert [d["pointer"] for d in raw] == ["/intent", "/urgent"]
    for r, c in zip(raw, corrected):
        assert c["logprobs"] == r["logprobs"] and c["alternatives"] == r["alternatives"]
        assert c["chosen"] == r["chosen"]
        assert c["posterior"] == pytest.approx(_softmax(c["logprobs"], 2.5), abs=1e-9)
        assert c["calibration"] == {"method": "temperature", "temperature": 2.5}
        assert "calibration" not in r
        assert r["posterior"] == pytest.approx(_softmax(r["logprobs"], 1.0), abs=1e-6)


@pytest.mark.parametrize("content,message", [
    ('{"method": "temperature", "temperature": 0}', "'temperature' must be a finite number > 0"),
    ('{"method": "platt"}', "unknown method"),
    ("not json", "not valid JSON"),
])
def test_serve_refuses_a_bad_calibration_before_loading(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_text(content)
    result = CliRunner().invoke(main, ["serve", "--calibration", str(path)])
    assert result.exit_code == 2
    assert message in result.output


def test_collect_in_process(fixture_model_path, tmp_path):
    lines = (ROOT / "testdata" / "calibration" / "intents.jsonl").read_text().splitlines()[:3]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["calibrate", "collect", str(dataset), "--out", str(out), "-m", str(fixture_model_path),
            "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    want = [json.loads(x) for x in lines]
    assert [r["id"] for r in rows] == [w["id"] for w in want]
    for r, w in zip(rows, want):
        assert r["pointer"] == "/intent" and r["label"] == w["label"]
        assert sorted(r["alternatives"]) == sorted(w["schema"]["properties"]["intent"]["enum"])
        assert r["chosen"] in r["alternatives"]
        assert sum(r["posterior"]) == pytest.approx(1.0)
    # a second run resumes: nothing left to do, nothing written twice
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert len(out.read_text().splitlines()) == 3
