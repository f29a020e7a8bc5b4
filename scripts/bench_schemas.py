"""Benchmark corpus for the mask benchmark: (name, family, schema, instances) entries.

Three families:
- tools:     hand-written agent tool schemas (OpenAI function `parameters`) with instances,
             testdata/bench_schemas/tools/*.json
- suite:     JSON-Schema-Test-Suite draft2020-12 (via tests/material.py) groups that cengine
             compiles with closed_objects=False, with their valid object/array/string instances
- generated: seeded deep and wide shapes (nested objects 5-10 deep, 30-60 properties,
             arrays of objects) with instances drawn from the schema

Every instance is checked with jsonschema before it is kept, so a benchmark never measures a
document the schema forbids.

    python scripts/bench_schemas.py [--filter tools|suite|generated]   # prints the counts
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = ROOT / "testdata" / "bench_schemas" / "tools"
FAMILIES = ("tools", "suite", "generated")
# suite instances shorter than this many characters of JSON add a mask or two and nothing else
MIN_SUITE_INSTANCE_CHARS = 8
GENERATED_SEED = 20250301


@dataclass
class Entry:
    name: str
    family: str
    schema: object
    instances: list = field(default_factory=list)


def _valid(schema, instance) -> bool:
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return cls(schema).is_valid(instance)
    except Exception:      # schemas whose $ref cannot be resolved offline, bad regexes, ...
        return False


def tool_entries() -> list[Entry]:
    out = []
    for p in sorted(TOOLS_DIR.glob("*.json")):
        d = json.loads(p.read_text(encoding="utf-8"))
        out.append(Entry(f"tools/{d['name']}", "tools", d["parameters"], list(d["instances"])))
    return out


def suite_entries() -> list[Entry]:
    """Groups cengine compiles (closed_objects=False), keeping valid object/array/string
    instances."""
    sys.path.insert(0, str(ROOT))
    from tests.material import json_schema_test_suite
    import cengine
    out = []
    for stem, groups in json_schema_test_suite("draft2020-12").items():
        for gi, group in enumerate(groups):
            insts = [t["data"] for t in group["tests"]
                     if t["valid"] and isinstance(t["data"], (dict, list, str))
                     and len(json.dumps(t["data"])) >= MIN_SUITE_INSTANCE_CHARS]
            if not insts:
                continue
            try:
                cengine.compile_json_schema(group["schema"], closed_objects=False)
            except (cengine.CompileError, RecursionError):
                continue
            insts = [i for i in insts if _valid(group["schema"], i)]
            if insts:
                out.append(Entry(f"suite/{stem}#{gi}", "suite", group["schema"], insts))
    return out


# ---------------------------------------------------------------------------------------
# generated shapes

_WORDS = ("alpha", "beta", "gamma", "delta", "id", "name", "count", "price", "enabled", "tags",
          "owner", "created", "status", "region", "score", "limit", "items", "meta", "note", "kind")


class _Gen:
    """Random schema shapes and instances from one seeded random.Random."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def key(self, i: int) -> str:
        return f"{self.rng.choice(_WORDS)}_{i}"

    def scalar_schema(self) -> dict:
        r = self.rng.random()
        if r < 0.35:
            return {"type": "string"}
        if r < 0.5:
            # no numeric bounds: cengine refuses minimum/maximum today, and the generated family
            # is about shape (depth, width), not keyword coverage
            return {"type": "integer"}
        if r < 0.6:
            return {"type": "number"}
        if r < 0.7:
            return {"type": "boolean"}
        if r < 0.85:
            return {"type": "string", "enum": [self.rng.choice(_WORDS) + str(k) for k in range(4)]}
        return {"anyOf": [{"type": "string"}, {"type": "null"}]}

    def obj(self, props: dict, n_required: int) -> dict:
        keys = list(props)
        return {"type": "object", "properties": props,
                "required": keys[:n_required], "additionalProperties": False}

    def instance(self, s: dict, depth: int = 0):
        rng = self.rng
        if "enum" in s:
            return rng.choice(s["enum"])
        if "anyOf" in s:
            return self.instance(rng.choice(s["anyOf"]), depth)
        t = s.get("type")
        if t == "object":
            req = set(s.get("required", ()))
            return {k: self.instance(v, depth + 1) for k, v in s["properties"].items()
                    if k in req or rng.random() < 0.7}
        if t == "array":
            n = rng.randint(s.get("minItems", 0), s.get("maxItems", 4))
            return [self.instance(s["items"], depth + 1) for _ in range(n)]
        if t == "string":
            return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
        if t == "integer":
            return rng.randint(s.get("minimum", -1000), s.get("maximum", 1000))
        if t == "number":
            return round(rng.uniform(-1e4, 1e4), rng.randint(0, 4))
        if t == "boolean":
            return rng.random() < 0.5
        if t == "null":
            return None
        raise AssertionError(s)

    def deep(self, depth: int) -> dict:
        """Objects nested `depth` deep, a few scalar siblings at each level."""
        s = self.obj({self.key(i): self.scalar_schema() for i in range(3)}, 2)
        for level in range(depth - 1):
            props = {self.key(i): self.scalar_schema() for i in range(self.rng.randint(1, 3))}
            props[f"child_{level}"] = s
            s = self.obj(props, len(props))
        return s

    def wide(self, n: int) -> dict:
        return self.obj({self.key(i): self.scalar_schema() for i in range(n)}, n // 3)

    def array_of_objects(self) -> dict:
        n_keys = self.rng.randint(3, 8)
        item = self.obj({self.key(i): self.scalar_schema() for i in range(n_keys)}, 2)
        return self.obj({"records": {"type": "array", "items": item, "minItems": 1, "maxItems": 8},
                         "total": {"type": "integer"}}, 2)


def generated_entries(seed: int = GENERATED_SEED) -> list[Entry]:
    g = _Gen(random.Random(seed))
    out = []
    shapes = ([("deep", lambda d=d: g.deep(d)) for d in range(5, 11) for _ in range(6)]
              + [("wide", lambda n=n: g.wide(n)) for n in range(30, 61, 2) for _ in range(2)]
              + [("array_of_objects", g.array_of_objects) for _ in range(32)])
    for i, (kind, make) in enumerate(shapes):
        schema = make()
        insts = [g.instance(schema) for _ in range(2)]
        bad = [x for x in insts if not _valid(schema, x)]
        if bad:
            raise AssertionError(f"generated instance does not validate: {kind} #{i}")
        out.append(Entry(f"generated/{kind}_{i}", "generated", schema, insts))
    return out


def load_corpus(families=FAMILIES) -> list[Entry]:
    out = []
    if "tools" in families:
        out += tool_entries()
    if "suite" in families:
        out += suite_entries()
    if "generated" in families:
        out += generated_entries()
    for e in out:
        for x in e.instances:
            if not _valid(e.schema, x):
                raise AssertionError(f"{e.name}: instance does not validate: {json.dumps(x)[:80]}")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--filter", choices=FAMILIES)
    args = ap.parse_args(argv)
    corpus = load_corpus((args.filter,) if args.filter else FAMILIES)
    for fam in FAMILIES:
        es = [e for e in corpus if e.family == fam]
        if es:
            n = sum(len(e.instances) for e in es)
            chars = sum(len(json.dumps(x)) for e in es for x in e.instances)
            print(f"{fam:10s} {len(es):4d} schemas {n:4d} instances {chars:7d} chars")


if __name__ == "__main__":
    main()
