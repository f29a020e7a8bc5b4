"""scripts/mypy_baseline.py, the ratchet on cengine's mypy errors: a count that grows or a new
file with errors fails, a count that shrinks passes; its reading of mypy's output lines."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mypy_baseline",
                                               ROOT / "scripts" / "mypy_baseline.py")
mb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mb)


def test_growth_and_new_files_fail_shrinking_passes():
    base = {"cengine/a.py": 3, "cengine/b.py": 2}
    assert mb.compare(base, Counter({"cengine/a.py": 3, "cengine/b.py": 2})) == ([], [])
    grown, shrunk = mb.compare(base, Counter({"cengine/a.py": 4, "cengine/b.py": 1}))
    assert grown == [("cengine/a.py", 3, 4)] and shrunk == [("cengine/b.py", 2, 1)]
    grown, shrunk = mb.compare(base, Counter({"cengine/a.py": 3, "cengine/c.py": 1}))
    assert grown == [("cengine/c.py", 0, 1)] and shrunk == [("cengine/b.py", 2, 0)]


def test_error_lines_are_read_and_notes_are_not():
    lines = ["cengine/ir.py:12: error: Item \"None\" of \"X | None\" has no attribute \"y\"  "
             "[union-attr]",
             "cengine/ir.py:12: note: see https://mypy.readthedocs.io",
             "cengine/schema/keys.py:7:5: error: Incompatible types  [assignment]",
             "Found 2 errors in 2 files (checked 34 source files)"]
    assert [m.group("path") for m in map(mb.ERROR.match, lines) if m] == \
        ["cengine/ir.py", "cengine/schema/keys.py"]


def test_the_baseline_lists_cengine_files_with_errors():
    baseline = json.loads(mb.BASELINE.read_text(encoding="utf-8"))
    assert baseline and all(p.startswith("cengine/") and n > 0 for p, n in baseline.items())
