"""`llamay ladder`: the command end to end on the tiny random fixture model (two rungs,
quantised by llama.cpp, cached), and the measuring half (calibrate/ladder.py) on answers made
by hand, where each figure is known."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibrate import ladder as L
from server.cli import main

TOOLS = [{"type": "function", "function": {
    "name": name, "description": desc, "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"], "additionalProperties": False}}}
    for name, desc in (("get_weather", "Weather in a city."), ("get_time", "Time in a city."))]


def case_line(text, label=None, **extra):
    line = {"messages": [{"role": "user", "content": text}], "tools": TOOLS,
            "tool_choice": "required", **extra}
    if label:
        line["label"] = label
    return json.dumps(line)


@pytest.fixture()
def cases(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join([case_line("Weather in Oslo?", "get_weather",
                                         arguments={"city": "Oslo"}, id="a", topic="weather"),
                               case_line("Time in Lima?", "get_time"),
                               case_line("Weather in Rome?")]) + "\n")
    return path


def run_ladder(args, cache):
    return CliRunner().invoke(main, ["ladder", *args, "--cache-dir", str(cache),
                                     "--max-tokens", "40", "--n-ctx", "1024"])


def test_ladder_end_to_end_on_the_fixture_model(fixture_model_path, cases, tmp_path):
    cache = tmp_path / "quants"
    out, plot = tmp_path / "ladder.json", tmp_path / "ladder.png"
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0,Q4_0",
                    "--json", str(out), "--plot", str(plot)], cache)
    assert r.exit_code == 0, r.output
    assert "quantised" in r.output and "Q4_0" in r.output and "3/3 cases" in r.output
    report = json.loads(out.read_text())
    # the contract's fields
    assert report["reference"] == "Q8_0"
    assert [g["quant"] for g in report["rungs"]] == ["Q8_0", "Q4_0"]
    for g in report["rungs"]:
        for key in ("size_bytes", "conformance", "tool_agreement", "argument_agreement",
                    "tokens_per_s"):
            assert key in g
        assert g["errors"] == 0
        # the grammar holds every call to an offered tool with valid arguments
        assert g["conformance"] == 1.0
        assert 0 <= g["tool_agreement"] <= 1 and g["tokens_per_s"] > 0
        assert g["requantized_from"] is None            # an F16 source
    ref, small = report["rungs"]
    assert ref["tool_agreement"] == 1.0 and ref["argument_agreement"] == 1.0
    assert small["size_bytes"] < ref["size_bytes"]
    assert small["bits_per_weight"] < ref["bits_per_weight"]
    assert ref["label_agreement"] is not None           # two labelled cases
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every case's answer at every rung, with the extra fields' id
    assert [c["id"] for c in report["case_answers"]] == ["a", 2, 3]
    assert report["case_answers"][0]["extra"] == {"topic": "weather"}     # kept
    assert all(c["Q8_0"]["tool"] in ("get_weather", "get_time")
               for c in report["case_answers"])
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 2 and all(f.endswith(("-Q8_0.gguf", "-Q4_0.gguf")) for f in files)

    # the second run takes the rungs from the cache; the same seed gives the same answers
    again = tmp_path / "again.json"
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0,Q4_0",
                    "--json", str(again)], cache)
    assert r.exit_code == 0 and "quantised" not in r.output and r.output.count("cached") == 2
    second = json.loads(again.read_text())
    strip = lambda c: {k: {f: v for f, v in a.items() if f != "seconds"}    # noqa: E731
                       if isinstance(a, dict) else a for k, a in c.items()}
    assert list(map(strip, second["case_answers"])) == list(map(strip, report["case_answers"]))

    # gates: exit 1 below, 0 at or above
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0,Q4_0",
                    "--min-conformance", "1.0", "--min-tool-agreement", "1.01", "--at", "Q4_0"],
                   cache)
    assert r.exit_code == 2             # 1.01 is out of range: a usage error
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0,Q4_0",
                    "--min-conformance", "1.0", "--at", "Q4_0"], cache)
    assert r.exit_code == 0 and "pass  Q4_0 conformance" in r.output


def test_a_failed_gate_exits_1(fixture_model_path, cases, tmp_path, monkeypatch):
    """Answers that do not conform (as a broken engine would give) fail --min-conformance."""
    real = L.read_answer

    def broken(*args):
        a = real(*args)
        a.conforms = False
        return a
    monkeypatch.setattr(L, "read_answer", broken)
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0",
                    "--min-conformance", "0.5"], tmp_path / "q")
    assert r.exit_code == 1 and "FAIL  Q8_0 conformance 0 < 0.5 (--min-conformance)" in r.output


def test_no_keep_deletes_the_rungs_it_made(fixture_model_path, cases, tmp_path):
    cache = tmp_path / "quants"
    r = run_ladder([str(fixture_model_path), str(cases), "--quants", "Q8_0", "--no-keep"], cache)
    assert r.exit_code == 0, r.output
    assert list(cache.iterdir()) == [] and "deleted (--no-keep)" in r.output


@pytest.mark.parametrize("args, fragment", [
    (["--quants", "Q8_0,Q9_9"], "unknown type"),
    (["--quants", "Q8_0,Q8_0"], "twice"),
    (["--quants", "Q8_0", "--at", "Q4_0"], "not one of the rungs"),
])
def test_bad_options_are_usage_errors(fixture_model_path, cases, tmp_path, args, fragment):
    r = run_ladder([str(fixture_model_path), str(cases), *args], tmp_path / "q")
    assert r.exit_code == 2 and fragment in r.output


@pytest.mark.parametrize("text, fragment", [
    ("{not json\n", "not JSON"),
    ('{"messages": [], "tools": []}\n', "'messages' must be"),
    ('{"messages": [{"role": "user", "content": "x"}]}\n', "'tools' must be"),
    ('{"messages": [{"role": "user", "content": "x"}], "tools": [1], "label": 3}\n',
     "'label'"),
    (case_line("x", "not_offered") + "\n", "not among the case's tools"),
    ("\n", "no cases"),
])
def test_bad_cases_exit_2_naming_the_line(fixture_model_path, tmp_path, text, fragment):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    r = run_ladder([str(fixture_model_path), str(path), "--quants", "Q8_0"], tmp_path / "q")
    assert r.exit_code == 2 and fragment in r.output


def test_missing_model_exits_2(cases, tmp_path):
    r = run_ladder([str(tmp_path / "none.gguf"), str(cases), "--quants", "Q8_0"], tmp_path / "q")
    assert r.exit_code == 2


# --- the measuring half, by hand ---------------------------------------------------------------

def _case(label=None, arguments=None, tool_choice="required"):
    return L.Case(1, 1, [{"role": "user", "content": "x"}], TOOLS, tool_choice, label,
                  arguments, {})


def _response(tool=None, arguments="{}", posterior=None, tokens=5):
    msg = {"role": "assistant", "content": None}
    if tool:
        msg["tool_calls"] = [{"type": "function", "function": {"name": tool,
                                                                "arguments": arguments}}]
    data = {"choices": [{"message": msg}], "usage": {"completion_tokens": tokens}}
    if posterior is not None:
        data["llamay_choice_logprobs"] = [{"pointer": "tool", "alternatives": ["get_weather",
                                                                                "get_time"],
                                           "posterior": posterior, "chosen": tool}]
    return data


@pytest.mark.parametrize("case, status, data, tool, conforms, posterior", [
    (_case(), 200, _response("get_weather", '{"city": "Oslo"}', [0.8, 0.2]), "get_weather",
     True, 0.8),
    (_case(), 200, _response("get_time", '{"city": "Oslo"}', [0.3, 0.7]), "get_time", True,
     0.7),
    (_case(), 200, _response("get_weather", '{"town": "Oslo"}'), "get_weather", False, None),
    (_case(), 200, _response("get_weather", "not json"), "get_weather", False, None),
    (_case(), 200, _response("nonexistent", '{"city": "x"}'), "nonexistent", False, None),
    (_case(), 200, _response(None), None, False, None),
    (_case(tool_choice="auto"), 200, _response(None), None, True, None),
    (_case(), 400, {"error": {"message": "bad"}}, None, False, None),
])
def test_read_answer(case, status, data, tool, conforms, posterior):
    a = L.read_answer(case, status, data, 0.5)
    assert (a.tool, a.conforms, a.posterior) == (tool, conforms, posterior)
    assert (a.error is not None) == (status != 200)


@pytest.mark.parametrize("choice, cut", [
    ({"finish_reason": "length"}, True),
    ({"finish_reason": "tool_calls", "llamay_dropped_call": True}, True),
    ({"finish_reason": "tool_calls"}, False),
])
def test_budget_cut(choice, cut):
    data = _response("get_weather", '{"city": "Oslo"}')
    data["choices"][0].update(choice)
    assert L.read_answer(_case(), 200, data, 0.1).budget_cut is cut


def test_summarize_counts_against_the_reference_and_the_labels():
    cases = [_case("get_weather", {"city": "Oslo"}), _case("get_time", None),
             _case("get_weather", None)]
    a = lambda tool, args, post=None: L.Answer(tool, args, True, post, 10, 1.0)   # noqa: E731
    ref = L.Rung("Q8_0", "a.gguf", 800, 100, None,
                 [a("get_weather", {"city": "Oslo"}, 0.9), a("get_time", {"city": "Lima"}),
                  a("get_weather", {"city": "Rome", "x": 1})])
    small = L.Rung("Q2_K", "b.gguf", 200, 100, None,
                   [a("get_weather", {"city": "Oslo"}, 0.5), a("get_weather", {"city": "Lima"}),
                    a("get_weather", {"city": "Rome", "x": 2})])
    small.answers[2].conforms = False
    report = L.summarize([ref, small], cases, source="m.gguf")
    r0, r1 = report["rungs"]
    assert r0["tool_agreement"] == r0["argument_agreement"] == 1.0 and r0["conformance"] == 1.0
    assert r1["tool_agreement"] == pytest.approx(2 / 3)
    assert r1["argument_agreement"] == pytest.approx(1 / 3)        # only the first is equal
    assert r1["argument_key_agreement"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert r1["label_agreement"] == pytest.approx(2 / 3)
    assert r1["expected_argument_agreement"] == 1.0
    assert r1["conformance"] == pytest.approx(2 / 3)
    assert r1["mean_posterior"] == 0.5 and r1["tokens_per_s"] == 10.0
    assert r0["bits_per_weight"] == 64.0 and r1["bits_per_weight"] == 16.0
    table = L.format_table(report)
    assert "Q2_K" in table and "66.7%" in table
    lines = L.check_gates(report, {"--min-tool-agreement": 0.9}, "Q2_K")
    assert lines == ["FAIL  Q2_K tool_agreement 0.6667 < 0.9 (--min-tool-agreement)"]
    assert L.check_gates(report, {"--min-tool-agreement": 0.9}, "Q8_0")[0].startswith("pass")


def test_shipped_cases_load():
    cases = L.load_cases(str(Path(__file__).parent.parent / "testdata" / "ladder" /
                             "tool-calls.jsonl"))
    assert len(cases) == 40
    assert all(c.label in {t["function"]["name"] for t in c.tools} for c in cases)
    assert all(c.arguments for c in cases)
