"""docs/api.md's examples run: its python code blocks, in order, as one script (each block
sees what the ones before it defined), and every name of cengine.__all__ is in the page."""
from __future__ import annotations

import re
from pathlib import Path

import cengine

DOC = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC, re.MULTILINE | re.DOTALL)


def test_the_examples_run():
    assert len(BLOCKS) >= 8
    namespace: dict = {"__name__": "docs_api"}
    for i, block in enumerate(BLOCKS):
        exec(compile(block, f"docs/api.md, python block {i + 1}", "exec"), namespace)


def test_every_public_name_is_documented():
    missing = [n for n in cengine.__all__ if not re.search(rf"\b{re.escape(n)}\b", DOC)]
    assert not missing, missing
