"""The order a schema lists a decision's alternatives in (llamay_choice_logprobs).

The engine finds a decision's alternatives by walking the automaton, which keeps no order of
the schema's; they are reported in the order the request gave them. `listed_values` reads that
order from the schema: every subschema that may describe the value at an instance pointer,
visited depth first (the schema itself, then its local `$ref`, then the branches of `allOf`,
`anyOf`, `oneOf`, then `then` and `else`, each in the order written), and from each its `const`
then its `enum` values. `in_listed_order` sorts alternatives by where their value is first
listed (JSON equality); values the schema does not list (a plain boolean) keep the engine's
order (their shortest spelling) after the listed ones.

Reaching the instance pointer's subschemas: an object member through `properties`, then every
`patternProperties` entry whose pattern matches the name (Python's `re.search`), and
`additionalProperties` when neither names it; an array item through `prefixItems` (or `items`
as a list, drafts 4-7) at its index, else `items` as a schema, else `additionalItems`. Only
the order comes from here: what is legal is the engine's answer.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence

import cengine
from cengine import Alternative

_BRANCHES = ("allOf", "anyOf", "oneOf")


def _tokens(pointer: str) -> List[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _resolve_ref(root: Any, ref: Any) -> Optional[Any]:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None         # a remote or $id-relative reference: no order from it
    node = root
    for tok in _tokens(ref[1:]):
        if isinstance(node, dict) and tok in node:
            node = node[tok]
        elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
            node = node[int(tok)]
        else:
            return None
    return node


def _applying(root: Any, schema: Any, seen: set) -> Iterator[dict]:
    """The schema and every subschema that applies to the same instance, depth first."""
    if not isinstance(schema, dict) or id(schema) in seen:
        return
    seen.add(id(schema))
    yield schema
    if "$ref" in schema:
        yield from _applying(root, _resolve_ref(root, schema["$ref"]), seen)
    for key in _BRANCHES:
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                yield from _applying(root, branch, seen)
    for key in ("then", "else"):
        yield from _applying(root, schema.get(key), seen)


def _children(schema: dict, tok: str) -> Iterator[Any]:
    """The subschemas of `schema` for the member or item `tok` of its instance."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    named = tok in props
    if named:
        yield props[tok]
    matched = False
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, sub in patterns.items():
            try:
                hit = re.search(pattern, tok) is not None
            except re.error:
                hit = False
            if hit:
                matched = True
                yield sub
    if not named and not matched and isinstance(schema.get("additionalProperties"), dict):
        yield schema["additionalProperties"]
    if tok.isdigit():
        i = int(tok)
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(prefix, list):
            if i < len(prefix):
                yield prefix[i]
            elif isinstance(items, dict):
                yield items
        elif isinstance(items, list):
            if i < len(items):
                yield items[i]
            elif isinstance(schema.get("additionalItems"), dict):
                yield schema["additionalItems"]
        elif isinstance(items, dict):
            yield items


def listed_values(schema: Any, pointer: str) -> List[Any]:
    """The scalar values the schema lists (const, enum) for the instance value at `pointer`,
    in the schema's order, repeats included (the first one counts)."""
    level = list(_applying(schema, schema, set()))
    for tok in _tokens(pointer):
        nxt: List[dict] = []
        seen: set = set()
        for s in level:
            for child in _children(s, tok):
                nxt.extend(_applying(schema, child, seen))
        level = nxt
    out: List[Any] = []
    for s in level:
        if "const" in s:
            out.append(s["const"])
        if isinstance(s.get("enum"), list):
            out.extend(s["enum"])
    return [v for v in out if not isinstance(v, (dict, list))]


def _identity(value: Any) -> Optional[tuple]:
    try:
        return cengine.value_key(json.dumps(value).encode("utf-8"))
    except (TypeError, ValueError):
        return None


def in_listed_order(alternatives: Sequence[Alternative], listed: Sequence[Any]) -> List[int]:
    """The permutation (indices into `alternatives`) that puts them in the order `listed`
    gives, those it does not list last in their own order."""
    # keyed by value_key; None (no JSON scalar) is never stored, so looking it up finds nothing
    rank: Dict[Optional[tuple], int] = {}
    for n, value in enumerate(listed):
        key = _identity(value)
        if key is not None:
            rank.setdefault(key, n)
    keys = [rank.get(cengine.value_key(a.text), len(listed) + i)
            for i, a in enumerate(alternatives)]
    return sorted(range(len(alternatives)), key=keys.__getitem__)
