"""The .pyi stubs of cengine's Cython modules match the compiled modules: every name a stub
declares exists at run time with the same kind (function, class, method, property, attribute)
and the same parameters (names, order, which have defaults), and every public function,
class and method of the module is in its stub. Signatures come from inspect where Cython
provides them and from the signature `embedsignature` writes into a class docstring for
__init__ (slot wrappers carry none)."""
from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

CENGINE = Path(__file__).resolve().parent.parent / "cengine"
# the private stubs; __init__.pyi, the public one, has its own test (test_engine_public_stub.py)
STUBS = sorted(p.stem for p in CENGINE.glob("_*.pyi") if p.stem != "__init__")


def test_every_extension_has_a_stub():
    extensions = {p.stem for p in CENGINE.glob("_*.pyx")}
    assert extensions and extensions == set(STUBS)


def _stub_params(fn: ast.FunctionDef):
    a = fn.args
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    out = [(p.arg, i >= first_default) for i, p in enumerate(positional)]
    out += [(p.arg, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return [(n, d) for n, d in out if n != "self"]


def _runtime_params(sig: inspect.Signature):
    return [(p.name, p.default is not inspect.Parameter.empty)
            for p in sig.parameters.values() if p.name != "self"]


def _embedded_init_params(cls):
    """Parameters of `ClassName(int x, y=None)`, the first docstring line embedsignature
    writes for a class whose __init__ has no inspectable signature."""
    doc = (cls.__doc__ or "").split("\n", 1)[0]
    m = re.fullmatch(rf"{cls.__name__}\((.*)\)", doc.strip())
    assert m, f"{cls.__name__}: no embedded signature in its docstring ({doc!r})"
    out = []
    for part in filter(None, (x.strip() for x in m.group(1).split(","))):
        name, has_default = part.split("=", 1)[0].split()[-1], "=" in part
        out.append((name.lstrip("*"), has_default))
    return [(n, d) for n, d in out if n != "self"]


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _check_function(where, stub_fn, runtime):
    assert callable(runtime), f"{where} is not callable at run time"
    try:
        sig = inspect.signature(runtime)
    except (TypeError, ValueError):
        pytest.fail(f"{where}: no runtime signature to compare")
    assert _stub_params(stub_fn) == _runtime_params(sig), where


@pytest.mark.parametrize("module", STUBS)
def test_stub_matches_module(module):
    mod = importlib.import_module(f"cengine.{module}")
    tree = ast.parse((CENGINE / f"{module}.pyi").read_text())
    declared = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            declared.add(node.name)
            _check_function(f"{module}.{node.name}", node, getattr(mod, node.name, None))
        elif isinstance(node, ast.AnnAssign):
            name = node.target.id
            assert hasattr(mod, name), f"{module}.{name} is declared but missing"
        elif isinstance(node, ast.ClassDef):
            declared.add(node.name)
            cls = getattr(mod, node.name, None)
            assert inspect.isclass(cls), f"{module}.{node.name} is not a class at run time"
            methods = set()
            for item in node.body:
                where = f"{module}.{node.name}.{getattr(item, 'name', '')}"
                if isinstance(item, ast.FunctionDef):
                    methods.add(item.name)
                    attr = inspect.getattr_static(cls, item.name, None)
                    assert attr is not None, f"{where} is declared but missing"
                    if _is_property(item):
                        assert not callable(getattr(cls, item.name)), f"{where} is not a property"
                    elif item.name == "__init__":
                        assert _stub_params(item) == _embedded_init_params(cls), where
                    else:
                        _check_function(where, item, getattr(cls, item.name))
                elif isinstance(item, ast.AnnAssign):
                    name = item.target.id
                    where = f"{module}.{node.name}.{name}"
                    assert inspect.getattr_static(cls, name, None) is not None, \
                        f"{where} is declared but missing"
            public = {n for n, v in vars(cls).items()
                      if not n.startswith("_") and (callable(v) or inspect.isdatadescriptor(v))
                      and n not in {item.target.id for item in node.body
                                    if isinstance(item, ast.AnnAssign)}}
            assert public <= methods, f"{module}.{node.name}: not in the stub: {public - methods}"
    # the reverse: every public function and class defined by the module is in its stub
    public = {n for n, v in vars(mod).items()
              if not n.startswith("_") and (inspect.isclass(v) or callable(v))
              and getattr(v, "__module__", None) == mod.__name__}
    assert public <= declared, f"cengine.{module}: not in the stub: {public - declared}"
