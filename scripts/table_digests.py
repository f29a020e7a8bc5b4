"""Digest every automaton table of every schema in a corpus, to show that a refactor left the
language alone: two checkouts whose digest files compare equal built the same tables.

    python scripts/table_digests.py ../shared/corpora/maskbench-dev OUT.json [--order any]
    python scripts/table_digests.py --cmp A.json B.json
    python scripts/table_digests.py CORPUS OUT.json --source-front-end [--every N]

--source-front-end loads the compiled front end (setup.py's FRONT_END_MODULES: regex.py,
schema/*.py) from its .py sources instead of its compiled modules, so that the two
builds can be compared (tests/test_schema_compiled_front_end.py); --every N digests every Nth
schema only.

Each schema is compiled as scripts/bench_maskbench.py compiles it (open objects, unbounded
whitespace) with the property order given; a refusal is recorded as its keyword and pointer,
so a schema refused alike on both sides compares equal too. --cmp exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.abc
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this checkout's engine, not whichever one the environment installed (the point is to
# compare two checkouts)
sys.path.insert(0, str(ROOT))


def front_end_sources(root: Path = ROOT) -> dict:
    """Module name -> .py source of the modules setup.py compiles as they are."""
    pkg = root / "cengine"
    files = [pkg / "regex.py"] + sorted(
        p for p in (pkg / "schema").glob("*.py") if p.name != "__init__.py")
    return {".".join(f.relative_to(root).with_suffix("").parts): f for f in files}


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the compiled front end's modules at their .py sources (before the extension
    modules the path finder would return)."""

    def __init__(self, sources: dict):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        src = self.sources.get(name)
        return None if src is None else importlib.util.spec_from_file_location(name, src)


def use_source_front_end() -> None:
    """Import the front end from its sources from now on (before cengine is imported)."""
    assert "cengine" not in sys.modules, "cengine was imported already"
    sys.meta_path.insert(0, _SourceFirst(front_end_sources()))


def digest_of(grammar) -> str:
    from cengine.automaton import TABLES
    a = grammar.automaton
    h = hashlib.sha256()
    h.update(json.dumps([list(a.rule_names), a.root_rule, a.root_start, a.max_depth,
                         a.whitespace_budget]).encode())
    for name, dtype in TABLES:
        table = getattr(a, name)
        h.update(name.encode())
        h.update(str(table.dtype).encode())
        h.update(table.astype(dtype, copy=False).tobytes())
    return h.hexdigest()


def digests(corpus: Path, order: str, every: int = 1) -> dict:
    import cengine
    out = {}
    for path in sorted(corpus.glob("*.json"))[::every]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None,
                                            property_order=order)
            out[path.name] = digest_of(g)
        except (cengine.CompileError, cengine.LimitError) as e:
            out[path.name] = (f"refused {type(e).__name__} {getattr(e, 'keyword', None)} "
                              f"{getattr(e, 'pointer', None)}")
    return out


def compare(a_path: str, b_path: str) -> int:
    a = json.loads(Path(a_path).read_text())
    b = json.loads(Path(b_path).read_text())
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for k in differ[:20]:
        print(f"{k}: {a.get(k)} != {b.get(k)}")
    print(f"{len(a)} / {len(b)} schemas, {len(differ)} differ, "
          f"{sum(v.startswith('refused') for v in a.values())} refused")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", nargs="?")
    p.add_argument("out", nargs="?")
    p.add_argument("--order", choices=("any", "declared"), default="any")
    p.add_argument("--cmp", nargs=2, metavar=("A", "B"))
    p.add_argument("--source-front-end", action="store_true",
                   help="the front end from its .py sources, not its compiled modules")
    p.add_argument("--every", type=int, default=1, help="every Nth schema only")
    args = p.parse_args()
    if args.cmp:
        return compare(*args.cmp)
    if not (args.corpus and args.out):
        p.error("corpus and out are needed (or --cmp A B)")
    if args.source_front_end:
        use_source_front_end()
    result = digests(Path(args.corpus), args.order, args.every)
    import cengine.schema.compiler as front
    built = "source" if front.__file__.endswith(".py") else "compiled"
    Path(args.out).write_text(json.dumps(result, indent=0, sort_keys=True))
    print(f"{len(result)} schemas digested ({args.order}, {built} front end) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
