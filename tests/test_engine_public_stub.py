"""cengine/__init__.pyi, the public stub type checkers read in place of cengine/__init__.py,
matches the package: it declares exactly the names of `cengine.__all__`, each with a one-line
docstring; every function and method has the runtime object's parameters (names, order, kind,
default values); every class declares each public member its runtime class has (methods,
properties, attributes) and nothing the runtime class lacks."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import cengine

STUB_PATH = Path(cengine.__file__).with_name("__init__.pyi")
STUB = ast.parse(STUB_PATH.read_text(encoding="utf-8"))
DECLARED = {node.name: node for node in STUB.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
# names the stub uses for itself (type aliases, internal types it imports under a _ name)
HELPERS = {"__all__"}


def _one_line_doc(node) -> str:
    doc = ast.get_docstring(node)
    assert doc, f"{node.name}: no docstring"
    assert "\n" not in doc.strip(), f"{node.name}: the docstring is not one line"
    return doc


def test_the_stub_declares_exactly_all():
    names = set(DECLARED)
    others = {t.id for node in STUB.body for t in
              (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, ast.AnnAssign) else [])
              if isinstance(t, ast.Name)}
    assert not {n for n in others if not n.startswith("_")} - HELPERS, \
        "public names beside __all__'s"
    assert names == set(cengine.__all__), (sorted(names - set(cengine.__all__)),
                                           sorted(set(cengine.__all__) - names))


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_name_has_a_one_line_docstring(name):
    node = DECLARED[name]
    _one_line_doc(node)
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                _one_line_doc(item)


# --- parameters --------------------------------------------------------------------------

_KINDS = {"posonly": inspect.Parameter.POSITIONAL_ONLY,
          "arg": inspect.Parameter.POSITIONAL_OR_KEYWORD,
          "vararg": inspect.Parameter.VAR_POSITIONAL,
          "kwonly": inspect.Parameter.KEYWORD_ONLY,
          "kwarg": inspect.Parameter.VAR_KEYWORD}
_NO_DEFAULT = "<none>"


def _default(expr):
    if expr is None:
        return _NO_DEFAULT
    value = ast.literal_eval(expr)      # a stub's defaults are written out, never `...`
    assert value is not Ellipsis, "a default in the public stub is written out, not `...`"
    return value


def _stub_params(fn: ast.FunctionDef, method: bool):
    a = fn.args
    positional = [(p, "posonly") for p in a.posonlyargs] + [(p, "arg") for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(p.arg, _KINDS[k], _default(d)) for (p, k), d in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, _KINDS["vararg"], _NO_DEFAULT))
    out += [(p.arg, _KINDS["kwonly"], _default(d)) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, _KINDS["kwarg"], _NO_DEFAULT))
    if method and not any(isinstance(d, ast.Name) and d.id == "staticmethod"
                          for d in fn.decorator_list):
        out = out[1:]                   # self / cls
    return out


def _runtime_params(sig: inspect.Signature):
    return [(p.name, p.kind, _NO_DEFAULT if p.default is inspect.Parameter.empty else p.default)
            for p in sig.parameters.values() if p.name != "self"]


def _embedded_init_params(cls):
    """`Matcher(grammar, vocab=None)`: the signature Cython's embedsignature writes as the
    first docstring line of an extension type, whose __init__ inspect cannot read."""
    first = (cls.__doc__ or "").split("\n", 1)[0].strip()
    m = re.fullmatch(rf"{cls.__name__}\((.*)\)", first)
    assert m, f"{cls.__name__}: no embedded signature in its docstring ({first!r})"
    out = []
    for part in filter(None, (x.strip() for x in m.group(1).split(","))):
        name, _, default = part.partition("=")
        out.append((name.split()[-1], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    ast.literal_eval(default) if default else _NO_DEFAULT))
    return out


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize("name", sorted(n for n, d in DECLARED.items()
                                        if isinstance(d, ast.FunctionDef)))
def test_function_matches_runtime(name):
    fn = getattr(cengine, name)
    assert callable(fn) and not inspect.isclass(fn), name
    sig = _signature(fn)
    assert sig is not None, f"{name}: no runtime signature to compare"
    assert _stub_params(DECLARED[name], method=False) == _runtime_params(sig), name


# --- classes -----------------------------------------------------------------------------

def _stub_members(cls_node: ast.ClassDef):
    """name -> ast node of what the class and its bases in the stub declare."""
    out = {}
    for base in cls_node.bases:
        if isinstance(base, ast.Name) and base.id in DECLARED:
            out.update(_stub_members(DECLARED[base.id]))
    for item in cls_node.body:
        if isinstance(item, ast.FunctionDef):
            out[item.name] = item
        elif isinstance(item, ast.AnnAssign):
            out[item.target.id] = item
    return out


def _engine_classes(cls):
    return [c for c in cls.__mro__ if c.__module__.split(".")[0] == "cengine"]


def _runtime_public(cls):
    """Public methods, properties and slots the class or a cengine base class defines, and the
    public attributes its Python source assigns to self."""
    out = set()
    for c in _engine_classes(cls):
        try:
            source = inspect.getsource(c)
        except (OSError, TypeError):     # an extension type: its attributes are descriptors
            source = ""
        out.update(n for n in re.findall(r"\bself\.([A-Za-z]\w*)\s*(?::[^=\n]+)?=[^=]", source))
        for n, v in vars(c).items():
            if n.startswith("_"):
                continue
            if callable(v) or inspect.isdatadescriptor(v) or isinstance(v, (classmethod,
                                                                             staticmethod)):
                out.add(n)
    return out


def _instance_attribute(cls, name: str) -> bool:
    """name is a dataclass field, or a Python class of the MRO assigns self.name."""
    if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
        return True
    for c in _engine_classes(cls):
        try:
            source = inspect.getsource(c)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(name)}\s*(:[^=\n]+)?=", source):
            return True
    return False


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


@pytest.mark.parametrize("name", sorted(n for n, d in DECLARED.items()
                                        if isinstance(d, ast.ClassDef)))
def test_class_matches_runtime(name):
    cls = getattr(cengine, name)
    assert inspect.isclass(cls), f"{name} is not a class at run time"
    node = DECLARED[name]
    members = _stub_members(node)
    missing = _runtime_public(cls) - set(members)
    assert not missing, f"{name}: public at run time, not in the stub: {sorted(missing)}"
    for member, item in members.items():
        where = f"{name}.{member}"
        if isinstance(item, ast.AnnAssign):
            assert inspect.getattr_static(cls, member, None) is not None \
                or _instance_attribute(cls, member), f"{where} is declared but missing"
            continue
        attr = inspect.getattr_static(cls, member, None)
        assert attr is not None, f"{where} is declared but missing"
        if _is_property(item):
            assert inspect.isdatadescriptor(attr) and not callable(attr), \
                f"{where} is not a property"
            continue
        if member == "__init__":
            sig = _signature(cls)
            runtime = _runtime_params(sig) if sig is not None else _embedded_init_params(cls)
        else:
            sig = _signature(getattr(cls, member))
            assert sig is not None, f"{where}: no runtime signature to compare"
            runtime = _runtime_params(sig)
            if isinstance(attr, classmethod):
                assert any(isinstance(d, ast.Name) and d.id == "classmethod"
                           for d in item.decorator_list), f"{where} is a classmethod"
        assert _stub_params(item, method=True) == runtime, where


def test_the_stub_is_what_type_checkers_read():
    # shipped beside the package with the PEP 561 marker (setup.py's package_data)
    assert STUB_PATH.with_name("py.typed").exists()
    setup = (STUB_PATH.parents[1] / "setup.py").read_text(encoding="utf-8")
    assert '"py.typed"' in setup and '"*.pyi"' in setup
