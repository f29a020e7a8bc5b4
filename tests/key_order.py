"""Instances with their object keys in the order the engine's grammars write them.

The engine enforces declared property order (a documented narrowing, docs/json-schema.md): a
valid instance whose keys stand in another order is rejected, and the same instance reordered
is accepted. Tests use `key_orderings` to tell that narrowing apart from a real rejection.
"""
from __future__ import annotations

import itertools


def _resolve(root, ref):
    node = root
    for t in ref[2:].split("/") if ref.startswith("#/") else []:
        t = t.replace("~1", "/").replace("~0", "~")
        node = node[int(t)] if isinstance(node, list) else node.get(t, True)
    return node


def key_orderings(v, schema, root, depth=0) -> list:
    """Instances equal to v with object keys in the order our grammar writes them for schema
    (declared properties first, then required-only names, then the rest); one per anyOf branch."""
    if depth > 20 or not isinstance(schema, dict):
        return [v]
    if (isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#")) or \
            isinstance(schema.get("allOf"), list):
        # a merge lists the properties of the node, then of each allOf branch, then of the
        # $ref target, each name where it first occurs
        parts = _flat(schema, root)
        return key_orderings(v, _combine(parts), root, depth + 1)
    kw = "anyOf" if isinstance(schema.get("anyOf"), list) else "oneOf"
    if isinstance(schema.get(kw), list):
        rest = {k: x for k, x in schema.items() if k != kw}
        out = []
        for b in schema[kw]:
            merged = {**rest, **b} if isinstance(b, dict) else rest
            out.extend(key_orderings(v, merged, root, depth + 1))
        return out[:16] or [v]
    if isinstance(v, dict):
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        req = schema.get("required", []) if isinstance(schema.get("required"), list) else []
        for kw in ("dependentRequired", "dependencies"):
            deps = schema.get(kw, {})
            for name, more in (deps.items() if isinstance(deps, dict) else ()):
                if name in v and isinstance(more, list):
                    # a variant with the name present requires it and its list
                    req = req + [name] + list(more)
        addl = schema.get("additionalProperties", True)
        order = [k for k in props if k in v]
        order += [k for k in req if k not in props and k in v]
        order += [k for k in v if k not in order]
        choices = [key_orderings(v[k], props.get(k, addl), root, depth + 1)[:4] for k in order]
        return [dict(zip(order, combo)) for combo in itertools.islice(itertools.product(*choices),
                                                                      16)]
    if isinstance(v, list):
        prefix = schema.get("prefixItems", []) if isinstance(schema.get("prefixItems"),
                                                             list) else []
        items = schema.get("items", True)
        choices = [key_orderings(x, prefix[i] if i < len(prefix) else items, root, depth + 1)[:4]
                   for i, x in enumerate(v)]
        return [list(combo) for combo in itertools.islice(itertools.product(*choices), 16)]
    return [v]


def _flat(schema, root, depth=0) -> list:
    """schema's conjuncts in the compiler's merge order: the node, its allOf branches, its
    $ref target (each expanded the same way)."""
    if not isinstance(schema, dict) or depth > 20:
        return []
    out = [{k: x for k, x in schema.items() if k not in ("$ref", "allOf")}]
    for b in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        out += _flat(b, root, depth + 1)
    if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        out += _flat(_resolve(root, schema["$ref"]), root, depth + 1)
    return out


def _combine(parts: list) -> dict:
    """The parts as one schema for _orderings: properties in first-occurrence order."""
    out: dict = {}
    props: dict = {}
    req: list = []
    for p in parts:
        for k, x in p.items():
            if k == "properties" and isinstance(x, dict):
                for n, sub in x.items():
                    props.setdefault(n, sub)
            elif k == "required" and isinstance(x, list):
                req += [n for n in x if n not in req]
            else:
                out.setdefault(k, x)
    if props:
        out["properties"] = props
    if req:
        out["required"] = req
    return out
