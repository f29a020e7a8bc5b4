"""In a source checkout, refuse to import compiled modules older than their sources.

cengine's Cython extensions (`.pyx`) and its compiled front end (`ir.py`, `regex.py`,
`schema/*.py`, compiled as they are by setup.py) are built in place by `pip install -e .`.
Python imports a compiled module before its source, so after an edit, a pull or a branch
switch without a rebuild the old code would run silently; this check names the module and
the command instead. cengine/__init__.py imports this module first, which runs the check
on the package. It runs only where setup.py stands beside the package (an installed
wheel has none) and costs a few dozen stat calls."""
from __future__ import annotations

import importlib.machinery
from pathlib import Path
from typing import List

_SOURCE_SUFFIXES = (".pyx", ".py")
REBUILD = "pip install -e . (or: python setup.py build_ext --inplace)"


def stale_modules(package: Path) -> List[str]:
    """The compiled modules under `package` (one level of subpackages) whose source is newer
    than them, as source paths relative to the package's parent."""
    stale = []
    for folder in (package, *(p for p in package.iterdir() if p.is_dir())):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            for built in folder.glob("*" + suffix):
                stem = built.name[: -len(suffix)]
                for src_suffix in _SOURCE_SUFFIXES:
                    src = folder / (stem + src_suffix)
                    if src.exists():
                        if src.stat().st_mtime > built.stat().st_mtime:
                            stale.append(str(src.relative_to(package.parent)))
                        break
    return sorted(stale)


def check_checkout(package: Path) -> None:
    """Raise ImportError when `package` sits in a source checkout (setup.py beside it) and a
    compiled module is older than its source."""
    if not (package.parent / "setup.py").exists():
        return
    stale = stale_modules(package)
    if stale:
        raise ImportError(f"compiled modules older than their sources: {', '.join(stale)}; "
                          f"rebuild with {REBUILD}")


check_checkout(Path(__file__).resolve().parent)
