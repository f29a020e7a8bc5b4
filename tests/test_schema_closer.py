"""The closer on schema grammars: any prefix the matcher accepts, plus completion(), is a
document that parses and validates against the original schema (checked with jsonschema).
Both property orders: under property_order="any" the instances' keys are shuffled."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import cengine
from json_text import outside_strings
from walks import walk_random

TOOL_CALL = {"type": "object", "properties": {
    "name": {"const": "search"},
    "arguments": {"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 20},
        "limit": {"type": "integer"},
        "filters": {"type": "array", "items": {"type": "string", "enum": ["news", "web", "images"]},
                    "maxItems": 3},
        "strict": {"type": "boolean"}},
        "required": ["query"]}},
    "required": ["name", "arguments"]}

NESTED = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "owner": {"type": "object", "properties": {"name": {"type": "string"},
                                               "email": {"type": ["string", "null"]}},
              "required": ["name", "email"]},
    "scores": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4},
    "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
              "items": False, "minItems": 2}},
    "required": ["id", "owner", "scores"]}

ENUMS = {"type": "object", "properties": {
    "color": {"enum": ["red", "green", "blue"]},
    "size": {"enum": [1, 2.5, None, "xl"]},
    "shape": {"const": {"kind": "circle", "r": [1, 2]}}},
    "required": ["color", "shape"]}

ANYOF = {"type": "array", "items": {"anyOf": [
    {"type": "object", "properties": {"op": {"const": "add"}, "n": {"type": "integer"}},
     "required": ["op", "n"]},
    {"type": "object", "properties": {"op": {"const": "neg"}}, "required": ["op"]},
    {"type": "string", "maxLength": 3},
    {"type": "null"}]}, "minItems": 1}

TREE = {"$defs": {"node": {"type": "object", "properties": {
    "label": {"type": "string", "maxLength": 4},
    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
    "required": ["label"]}}, "$ref": "#/$defs/node"}

OPEN = {"type": "object", "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "array", "items": {"type": "boolean"}}}

ANY = True

SCHEMAS = {"tool_call": TOOL_CALL, "nested": NESTED, "enums": ENUMS, "anyof": ANYOF,
           "tree": TREE, "open": OPEN, "any": ANY}


# --- instances of a schema (only the constructs used above) ---------------------------------
def _resolve(root, ref):
    node = root
    for t in ref[2:].split("/"):
        node = node[t]
    return node


def instances(schema, root, depth=0):
    if schema is True:
        leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
        if depth > 2:
            return leaf
        return st.recursive(leaf, lambda kids: st.lists(kids, max_size=3) |
                            st.dictionaries(st.text(max_size=5), kids, max_size=3), max_leaves=6)
    if "$ref" in schema:
        return st.deferred(lambda: instances(_resolve(root, schema["$ref"]), root, depth + 1))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        vals = [v for v in schema["enum"] if "type" not in schema or isinstance(v, str)]
        return st.sampled_from(vals)
    if "anyOf" in schema:
        return st.one_of([instances(b, root, depth) for b in schema["anyOf"]])
    t = schema.get("type")
    if isinstance(t, list):
        return st.one_of([instances({**schema, "type": x}, root, depth) for x in t])
    if t == "null":
        return st.none()
    if t == "boolean":
        return st.booleans()
    if t == "integer":
        return st.integers(-10**9, 10**9)
    if t == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000)
    if t == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 12))
    if t == "array":
        prefix = [instances(p, root, depth + 1) for p in schema.get("prefixItems", [])]
        lo, hi = schema.get("minItems", 0), schema.get("maxItems", 4)
        if depth > 3:
            hi = lo
        items = schema.get("items", True)
        rest = st.lists(instances(items, root, depth + 1), min_size=max(lo - len(prefix), 0),
                        max_size=max(hi - len(prefix), 0)) if items is not False else st.just([])
        return st.tuples(st.tuples(*prefix), rest).map(lambda pr: list(pr[0]) + pr[1])
    if t == "object":
        props = schema.get("properties", {})
        req = set(schema.get("required", []))
        parts = []
        for k, s in props.items():
            pair = st.tuples(st.just(k), instances(s, root, depth + 1)).map(lambda kv: [kv])
            if k in req:
                parts.append(pair)
            elif depth <= 3:            # optional properties stop deep down: recursion ends
                parts.append(st.one_of(st.just([]), pair))
        addl = schema.get("additionalProperties")
        extra = st.just({})
        if isinstance(addl, dict):
            extra = st.dictionaries(st.text(max_size=4).filter(lambda k: k not in props),
                                    instances(addl, root, depth + 1), max_size=2)
        return st.tuples(st.tuples(*parts), extra).map(
            lambda pe: {**{k: v for part in pe[0] for k, v in part}, **pe[1]})
    raise AssertionError(f"no generator for {schema}")


def _validator(schema):
    return Draft202012Validator(schema)


def _assert_closes(m, prefix: bytes, validator) -> None:
    tail = m.completion()
    doc = prefix + tail
    value = json.loads(doc)
    errors = list(validator.iter_errors(value))
    assert not errors, (doc, errors[0].message)
    done = m.copy()
    assert done.accept_bytes(tail) and done.is_accepting(), doc


def _shuffled(value, schema, root, rng):
    """value with the keys of every object in an order drawn by rng, except inside enum/const
    values (objects there keep the order written in the schema, docs/json-schema.md)."""
    if isinstance(schema, dict) and "$ref" in schema:
        schema = _resolve(root, schema["$ref"])
    if isinstance(schema, dict) and ("const" in schema or "enum" in schema):
        return value
    sub = schema if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        props = sub.get("properties", {})
        items = [(k, _shuffled(v, props.get(k, sub.get("additionalProperties", True)), root,
                               rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        prefix = sub.get("prefixItems", [])
        return [_shuffled(v, prefix[i] if i < len(prefix) else sub.get("items", True), root,
                          rng) for i, v in enumerate(value)]
    return value


ORDERS = ["declared", "any"]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_prefix_of_an_instance_closes_to_a_valid_document(name, order):
    schema = SCHEMAS[name]
    grammar = cengine.compile_json_schema(schema, property_order=order)
    validator = _validator(schema)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(instances(schema, schema), st.booleans(), st.booleans(), st.randoms())
    def run(value, spaced, ascii_only, rng):
        if order == "any":
            value = _shuffled(value, schema, schema, rng)
        seps = (", ", ": ") if spaced else (",", ":")
        doc = json.dumps(value, separators=seps, ensure_ascii=ascii_only).encode("utf-8")
        if spaced and doc.count(b" ") > 64 - 2:
            doc = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only).encode()
        assert validator.is_valid(json.loads(doc))
        m = grammar.matcher()
        for i in range(len(doc)):
            _assert_closes(m, doc[:i], validator)
            assert m.accept_bytes(doc[i:i + 1]), (doc, i)
        assert m.is_accepting() and m.completion() == b""
    run()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_random_walks_over_allowed_bytes_close_to_valid_documents(name, order):
    schema = SCHEMAS[name]
    grammar = cengine.compile_json_schema(schema, property_order=order)
    validator = _validator(schema)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(0, 2**32 - 1), st.integers(1, 60))
    def run(seed, steps):
        m = grammar.matcher()
        prefix = walk_random(m, random.Random(seed), steps)
        # the walk may stop inside a multi-byte character: the closer finishes it
        _assert_closes(m, prefix, validator)
    run()


@pytest.mark.parametrize("max_depth", [1, 3, 8])
def test_nesting_stops_at_max_depth_and_still_closes(max_depth):
    for schema, opener in ((True, [b"[", b'{"k":']), (TREE, [b'{"label":"x","children":[']),
                           ({"type": "array", "items": {"$ref": "#"}}, [b"["])):
        grammar = cengine.compile_json_schema(schema, max_depth=max_depth)
        validator = _validator(schema)
        rng = random.Random(max_depth)
        m = grammar.matcher()
        prefix = b""
        opened = 0
        while True:
            for step in rng.sample(opener, len(opener)):
                if m.accept_bytes(step):
                    prefix += step
                    break
            else:
                break
            opened += 1
            assert opened <= max_depth * 2
        depth = _depth(prefix)
        if schema is not TREE:              # one container per step: the limit is reached
            assert depth == max_depth
        if depth == max_depth:
            for b in (b"[", b"{"):          # no way to open one more container
                assert not m.copy().accept_bytes(b)
        assert depth <= max_depth
        _assert_closes(m, prefix, validator)
        assert _depth(prefix + m.completion()) <= max_depth


def _depth(doc: bytes) -> int:
    depth = best = 0
    for c in outside_strings(doc.decode("utf-8")):
        if c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best
