"""Which dialect serves a model: every module of this package that defines `DIALECT` (or a
`DIALECTS` tuple) is a candidate; the one whose `detect` scores the GGUF's chat template
highest wins, and a template no dialect claims (one that knows no tools, or a family not
listed) gets Hermes, whose tool block is the generic one. `--tool-dialect NAME` forces one.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, FrozenSet, Iterable, Optional

from .base import Dialect

FALLBACK = "hermes"
_NOT_DIALECTS = {"base", "common", "registry"}


def all_dialects() -> Dict[str, Dialect]:
    """name -> unbound dialect, in module order (ties in detection go to the first)."""
    found: Dict[str, Dialect] = {}
    package = __name__.rpartition(".")[0]
    path = importlib.import_module(package).__path__
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        if info.name in _NOT_DIALECTS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        dialects = getattr(module, "DIALECTS", None) or (
            (module.DIALECT,) if hasattr(module, "DIALECT") else ())
        for d in dialects:
            found[d.name] = d
    return found


def names() -> list:
    return sorted(all_dialects())


def get_dialect(name: str) -> Dialect:
    table = all_dialects()
    if name not in table:
        raise ValueError(f"unknown tool dialect {name!r}; known: {', '.join(sorted(table))}")
    return table[name]


def detect_dialect(template: Optional[str], specials: Iterable[str] = ()) -> Dialect:
    """The unbound dialect of this chat template (Hermes when none claims it)."""
    table = all_dialects()
    sp: FrozenSet[str] = frozenset(specials)
    best, score = table[FALLBACK], 0
    if template:
        for d in table.values():
            s = type(d).detect(template, sp)
            if s > score:
                best, score = d, s
    return best


def recognised(template: Optional[str], specials: Iterable[str] = ()) -> bool:
    """Whether some dialect claims this template (False: Hermes serves it as the fallback)."""
    if not template:
        return False
    sp = frozenset(specials)
    return any(type(d).detect(template, sp) > 0 for d in all_dialects().values())


def dialect_for(template: Optional[str], specials: Iterable[str] = (),
                forced: Optional[str] = None) -> Dialect:
    """The dialect serving a model, bound to its vocabulary's special tokens."""
    d = get_dialect(forced) if forced else detect_dialect(template, specials)
    return d.for_template(template).bind(specials)
