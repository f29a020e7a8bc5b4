"""Digest every automaton table of every schema in a corpus, to show that a refactor left the
language alone: two checkouts whose digest files compare equal built the same tables.

    python scripts/table_digests.py ../shared/corpora/maskbench-dev OUT.json [--order any]
    python scripts/table_digests.py --cmp A.json B.json

Each schema is compiled as scripts/bench_maskbench.py compiles it (open objects, unbounded
whitespace) with the property order given; a refusal is recorded as its keyword and pointer,
so a schema refused alike on both sides compares equal too. --cmp exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

# this checkout's engine, not whichever one the environment installed (the point is to
# compare two checkouts)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


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


def digests(corpus: Path, order: str) -> dict:
    import cengine
    out = {}
    for path in sorted(corpus.glob("*.json")):
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
    args = p.parse_args()
    if args.cmp:
        return compare(*args.cmp)
    if not (args.corpus and args.out):
        p.error("corpus and out are needed (or --cmp A B)")
    result = digests(Path(args.corpus), args.order)
    Path(args.out).write_text(json.dumps(result, indent=0, sort_keys=True))
    print(f"{len(result)} schemas digested ({args.order}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
