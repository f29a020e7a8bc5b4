"""The compiled front end (setup.py's FRONT_END_MODULES: regex.py and schema/*.py, compiled
by Cython as they are) builds the automata its .py sources build.

- This install runs the compiled modules (the speed docs/benchmarks.md reports is theirs).
- scripts/table_digests.py digests every table of every automaton, once with the compiled
  modules and once with the sources (its --source-front-end), each in its own process: the
  project's tool schemas and, where ../shared has it, every fifth schema of the MaskBench
  corpus, in both property orders. Refusals compare by keyword and pointer.
- In a source checkout a compiled module older than its source is refused by name at import
  (cengine._stale), so an edit is never shadowed by its old build.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cengine import _stale

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "table_digests.py"
CORPUS = ROOT.parent / "shared" / "corpora" / "maskbench-dev"
TOOLS = ROOT / "testdata" / "bench_schemas" / "tools"

sys.path.insert(0, str(ROOT / "scripts"))
from table_digests import front_end_sources  # noqa: E402


def test_schema_front_end_modules_are_compiled():
    names = sorted(front_end_sources())
    assert "cengine.regex" in names and "cengine.schema.compiler" in names
    assert "cengine.ir" not in names          # interpreted on purpose (setup.py)
    for name in names:
        module = importlib.import_module(name)
        assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), \
            f"{name} is loaded from {module.__file__}, not from its compiled module"


def _tool_corpus(folder: Path) -> Path:
    # the project's tool schemas in MaskBench's file shape ({"schema": ...})
    folder.mkdir()
    for path in sorted(TOOLS.glob("*.json")):
        tool = json.loads(path.read_text(encoding="utf-8"))
        (folder / path.name).write_text(json.dumps({"schema": tool["parameters"]}))
    return folder


def _digests(corpus: Path, out: Path, order: str, every: int, source: bool) -> dict:
    cmd = [sys.executable, str(SCRIPT), str(corpus), str(out), "--order", order,
           "--every", str(every)] + (["--source-front-end"] if source else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    built = "source" if source else "compiled"
    assert f"{built} front end" in done.stdout, done.stdout
    return json.loads(out.read_text())


CASES = [("tools", "any", 1), ("tools", "declared", 1), ("corpus", "any", 5),
         ("corpus", "declared", 5)]


@pytest.mark.slow
@pytest.mark.parametrize("corpus,order,every", CASES, ids=[f"{c}-{o}" for c, o, _ in CASES])
def test_schema_compiled_front_end_builds_the_same_automata(corpus, order, every, tmp_path):
    if corpus == "corpus":
        if not CORPUS.is_dir():
            pytest.skip(f"MaskBench corpus not found at {CORPUS}")
        folder = CORPUS
    else:
        folder = _tool_corpus(tmp_path / "tools")
        folder_made = sorted(folder.glob("*.json"))
        assert len(folder_made) == len(list(TOOLS.glob("*.json"))) > 0
    compiled = _digests(folder, tmp_path / "compiled.json", order, every, source=False)
    source = _digests(folder, tmp_path / "source.json", order, every, source=True)
    assert compiled.keys() == source.keys() and len(compiled) > 0
    differ = sorted(k for k in compiled if compiled[k] != source[k])
    assert not differ, differ[:10]
    # most of them compile: the comparison is over automata, not over refusals
    assert sum(not v.startswith("refused") for v in compiled.values()) > 0.9 * len(compiled)


def _touch(path: Path, mtime: float) -> None:
    path.write_text("")
    os.utime(path, (mtime, mtime))


SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
# (files with their mtimes, setup.py beside the package, stale sources expected)
STALE_CASES = [
    ({"pkg/a.py": 2, "pkg/a" + SUFFIX: 1}, True, ["pkg/a.py"]),
    ({"pkg/a.py": 1, "pkg/a" + SUFFIX: 2}, True, []),
    ({"pkg/_k.pyx": 3, "pkg/_k" + SUFFIX: 2, "pkg/_k.cpp": 3}, True, ["pkg/_k.pyx"]),
    ({"pkg/sub/b.py": 5, "pkg/sub/b" + SUFFIX: 4, "pkg/sub/c.py": 9}, True, ["pkg/sub/b.py"]),
    # a module with no compiled build, and a build with no source beside it: nothing to say
    ({"pkg/plain.py": 9, "pkg/only" + SUFFIX: 1}, True, []),
    # an installed package (no setup.py beside it) is never checked
    ({"pkg/a.py": 2, "pkg/a" + SUFFIX: 1}, False, ["pkg/a.py"]),
]


@pytest.mark.parametrize("files,checkout,stale", STALE_CASES)
def test_schema_stale_compiled_modules_are_refused(files, checkout, stale, tmp_path):
    for rel, mtime in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _touch(path, 1_000_000 + mtime)
    if checkout:
        (tmp_path / "setup.py").write_text("")
    pkg = tmp_path / "pkg"
    assert _stale.stale_modules(pkg) == stale
    if checkout and stale:
        with pytest.raises(ImportError, match="older than their sources: " + stale[0]):
            _stale.check_checkout(pkg)
    else:
        _stale.check_checkout(pkg)


def test_schema_this_checkout_is_not_stale():
    assert _stale.stale_modules(ROOT / "cengine") == []
