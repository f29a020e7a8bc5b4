"""The import rule of docs/architecture.md, read from the source with `ast`.

Every import statement of server/, cengine/ and calibrate/ counts, at module level or inside
a function (a deferred import is still a dependency). Cython modules (.pyx) are modules of
the graph too; ast cannot read them, so their import lines are read line by line. Three
checks: no module imports a layer it may not (cli -> api -> runtime -> cengine, tools beside
the runtime), nothing outside cengine reaches into cengine's internals (only the names of
`cengine.__all__`), and no two modules import each other, directly or round a longer circle.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("server", "cengine", "calibrate")

# layer -> the layers its modules may import (their own included)
ALLOWED = {
    "cengine": {"cengine"},
    "runtime": {"runtime", "cengine"},
    "tools": {"tools", "cengine"},
    "calibrate": {"calibrate", "cengine"},
    "api": {"api", "runtime", "tools", "cengine"},
    "cli": {"cli", "api", "runtime", "tools", "calibrate", "cengine"},
    "server": set(),                  # server/__init__.py: only a namespace
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "server":
        return parts[1] if len(parts) > 1 else "server"
    return parts[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> Dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for ext in ("*.py", "*.pyx"):
            for path in sorted((ROOT / pkg).rglob(ext)):
                out[module_name(path)] = path
    return out


Import = Tuple[str, Optional[str], int]     # (module named, name imported from it or None, line)


def _absolute(package: str, level: int, module: Optional[str]) -> str:
    if not level:
        return module or ""
    base = package.split(".")
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


_CY_FROM = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+(c?)import\s+\(?([\w ,]+)")
_CY_IMPORT = re.compile(r"^\s*(c?)import\s+([\w.]+)")


def _declarations_only(target: str) -> bool:
    """A cimport of a .pxd with no module behind it (no .pyx, no .py) is read at compile time
    only: it loads nothing when the extension runs, so it is no edge of the import graph."""
    base = ROOT.joinpath(*target.split("."))
    return base.with_suffix(".pxd").exists() and not any(
        base.with_suffix(ext).exists() for ext in (".pyx", ".py"))


def _cython_imports(package: str, path: Path) -> List[Import]:
    out: List[Import] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _CY_FROM.match(line)
        if m:
            target = _absolute(package, len(m.group(1)), m.group(2) or None)
            if m.group(3) and _declarations_only(target):
                continue
            names = [x.split()[0] for x in m.group(4).split(",") if x.strip()]
            out += [(target, name, n) for name in names]
            continue
        m = _CY_IMPORT.match(line)
        if m and not (m.group(1) and _declarations_only(m.group(2))):
            out.append((m.group(2), None, n))
    return out


def imports_of(module: str, path: Path) -> List[Import]:
    """Every import in the file, absolute, as (module, imported name or None, line)."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    if path.suffix == ".pyx":
        return _cython_imports(package, path)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: List[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(package, node.level, node.module)
            out += [(target, a.name, node.lineno) for a in node.names]
    return out


def resolve(target: str, name: Optional[str], modules: Dict[str, Path]) -> Optional[str]:
    """The project module an import loads: `from pkg import mod` names the submodule."""
    if name is not None and f"{target}.{name}" in modules:
        return f"{target}.{name}"
    parts = target.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def import_graph(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        for target, name, _ in imports_of(m, path):
            dep = resolve(target, name, modules)
            if dep is not None and dep != m:
                graph[m].add(dep)
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    found: List[List[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def public_engine_names() -> Set[str]:
    tree = ast.parse((ROOT / "cengine" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("cengine/__init__.py defines no __all__")


MODULES = project_modules()


# --- the checker itself ---------------------------------------------------------------------

@pytest.mark.parametrize("graph, want", [
    ({"a": {"b"}, "b": set()}, []),
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, []),       # a diamond is no circle
])
def test_architecture_cycle_finder(graph, want):
    assert sorted(cycles(graph)) == want


@pytest.mark.parametrize("module, source, want", [
    ("server.api.app", "from . import openai", [("server.api", "openai")]),
    ("server.api.app", "from ..runtime.types import X", [("server.runtime.types", "X")]),
    ("server.api", "from .app import create_app", [("server.api.app", "create_app")]),
    ("server.api.app", "def f():\n    import cengine.ir", [("cengine.ir", None)]),
    ("cengine._mask", "from cengine._matcher cimport (Prog, Entry,\n    Store)",
     [("cengine._matcher", "Prog"), ("cengine._matcher", "Entry")]),
    ("cengine._mask", "cimport numpy as cnp\nfrom . import ir as _ir",
     [("numpy", None), ("cengine", "ir")]),
])
def test_architecture_import_parser(tmp_path, module, source, want):
    name = {"server.api": "__init__.py", "cengine._mask": "mod.pyx"}.get(module, "mod.py")
    path = tmp_path / name
    path.write_text(source)
    assert [(t, n) for t, n, _ in imports_of(module, path)] == want


def test_architecture_scan_sees_the_layers():
    # guards the checks below against passing on an empty or misread tree
    graph = import_graph(MODULES)
    for layer in ("runtime", "tools", "api", "cli"):
        assert any(layer_of(m) == layer for m in MODULES), layer
    assert "server.api.openai" in graph["server.api.app"]
    assert "server.runtime.types" in graph["server.api.runner"]
    assert "cengine" in graph["server.tools.hermes"]


# --- the rule -------------------------------------------------------------------------------

@pytest.mark.parametrize("module", sorted(MODULES))
def test_architecture_layers_point_one_way(module):
    allowed = ALLOWED[layer_of(module)]
    bad = []
    for target, name, line in imports_of(module, MODULES[module]):
        dep = resolve(target, name, MODULES)
        if dep is not None and layer_of(dep) not in allowed:
            bad.append(f"line {line}: imports {dep} ({layer_of(dep)} layer)")
    assert not bad, f"{module} ({layer_of(module)} layer) may import only {sorted(allowed)}: {bad}"


def engine_attributes(path: Path) -> List[Tuple[str, int]]:
    """`cengine.<name>` attribute reads (module imported as `cengine`)."""
    if path.suffix == ".pyx":
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.attr, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "cengine"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) != "cengine"))
def test_architecture_engine_internals_stay_inside(module):
    public = public_engine_names()
    bad = []
    for target, name, line in imports_of(module, MODULES[module]):
        if target.startswith("cengine."):
            bad.append(f"line {line}: {target}")
        elif target == "cengine" and name is not None and name not in public:
            bad.append(f"line {line}: cengine.{name}")
    bad += [f"line {line}: cengine.{attr}" for attr, line in engine_attributes(MODULES[module])
            if attr not in public]
    assert not bad, f"{module} uses cengine internals (only cengine.__all__ is public): {bad}"


def test_architecture_no_import_circles():
    found = cycles(import_graph(MODULES))
    assert not found, "modules importing each other (directly or round a circle): " + \
        "; ".join(" <-> ".join(c) for c in found)
