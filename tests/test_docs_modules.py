"""docs/architecture.md names modules; each one it names exists (the docs describe the present,
not a layout that moved)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _box(first: str) -> list:
    """The comma-separated names written in the box of the layer diagram that opens with
    `first` (the box's columns: from `first` to its right border; parentheses and `|` between
    alternatives dropped)."""
    lines = DOC.split("```")[1].splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    left = lines[start].index(first)
    right = lines[start - 1].index("+", left)     # the box's top border ends there
    text = [lines[start][left + len(first):right]]
    for line in lines[start + 1:]:
        cell = line[left:right]
        if "+--" in line[left - 3:right + 1] or not cell.strip():
            break
        text.append(cell)
    joined = re.sub(r"\([^)]*\)", "", " ".join(text)).replace("|", ",")
    return [w.strip() for w in joined.split(",") if w.strip()]


def test_every_named_file_exists():
    paths = set(re.findall(r"\b((?:server|cengine|calibrate|tests|scripts)/[\w/]+\.(?:py|pyx))",
                           DOC))
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def test_the_runtime_box_names_its_modules():
    names = _box("server/runtime/")
    modules = {p.stem for p in (ROOT / "server" / "runtime").glob("*.py")} - {"__init__"}
    assert names and set(names) == modules, (sorted(names), sorted(modules))


def test_the_api_box_names_its_modules():
    names = [n for n in _box("server/api/") if n != "create_app"]
    modules = {p.stem for p in (ROOT / "server" / "api").glob("*.py")} - {"__init__", "app"}
    assert names and set(names) <= modules and not set(names) - modules
    assert not modules - set(names), f"modules the diagram leaves out: {modules - set(names)}"
