"""uniqueItems over a finite domain (items naming their values: enum, const, anyOf / oneOf of
those, a type of boolean or null, an integer range): an ir.AnyOrder node in brackets, each
value's element rule at most once, in any order. Checked against jsonschema on every array of
up to three values drawn from a pool (the domain, values equal to its members in another
spelling, values outside it), along random walks over the allowed bytes (each prefix closes
to a valid document), and token by token over a real vocabulary (the mask allows exactly the
tokens the matcher accepts). Refusals name uniqueItems and its pointer: an unbounded domain
(strings, numbers, a range past _DOMAIN_RANGE), prefixItems, a `not` of items, more values
than MAX_ORDER_STATES subsets."""
from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import cengine
from cengine.schema import MAX_ORDER_STATES
from walks import walk_random

OPTIONS = {"closed_objects": False, "whitespace_budget": None}

# (name, schema, the values the documents use)
CASES = [
    ("enum", {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
     ["a", "b", "c", "d", 1]),
    ("boolean-min", {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True,
                     "minItems": 2}, [True, False, None, 1]),
    ("mixed-max", {"type": "array", "items": {"enum": [1, 1.0, 2, "x", None, True]},
                   "uniqueItems": True, "maxItems": 2}, [1, 1.0, 2, "x", None, True, False]),
    ("enum-filtered", {"type": "array", "items": {"enum": ["a", "b", 1], "type": "string"},
                       "uniqueItems": True}, ["a", "b", 1]),
    ("const", {"type": "array", "items": {"const": "a"}, "uniqueItems": True}, ["a", "b"]),
    ("ref", {"type": "array", "items": {"$ref": "#/$defs/e"}, "uniqueItems": True,
             "$defs": {"e": {"enum": ["a", "b", "c"]}}}, ["a", "b", "c", "z"]),
    ("allof", {"allOf": [{"type": "array", "items": {"enum": ["a", "b"]}},
                         {"uniqueItems": True}]}, ["a", "b", 2]),
    ("composite-values", {"type": "array", "items": {"enum": [[1], [1.0], {"a": 1}, "s"]},
                          "uniqueItems": True}, [[1], [1.0], {"a": 1}, "s", [2]]),
    ("nullable-type", {"type": ["array", "string"], "items": {"type": ["boolean", "null"]},
                       "uniqueItems": True}, [True, False, None, 0]),
    ("property", {"type": "object", "properties": {"tags": {
        "type": "array", "items": {"enum": ["red", "green"]}, "uniqueItems": True}},
        "required": ["tags"], "additionalProperties": False}, None),
    ("anyof", {"anyOf": [{"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
                         {"type": "string"}]}, ["a", "b", "c"]),
    ("oneof-consts", {"type": "array", "items": {"oneOf": [
        {"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]}, "uniqueItems": True},
     ["x", "y", "z"]),
    ("anyof-enum-type", {"type": "array", "items": {"anyOf": [
        {"enum": ["a", "b"]}, {"type": "boolean"}]}, "uniqueItems": True},
     ["a", "b", True, False, "c"]),
    ("integer-range", {"type": "array", "items": {"type": "integer", "minimum": 1,
                                                  "maximum": 5}, "uniqueItems": True},
     [1, 2, 5, 6, 0, 2.5]),     # (no 1.0: a typed integer is written as digits, as elsewhere)
    ("integer-exclusive-multiple", {"type": "array", "items": {
        "type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 30, "multipleOf": 5},
        "uniqueItems": True, "minItems": 1}, [5, 10, 25, 30, 0, 7]),
    ("max-one", {"type": "array", "items": {"type": "string"}, "uniqueItems": True,
                 "maxItems": 1}, ["a", "b"]),
]
SCHEMAS = {name: schema for name, schema, _ in CASES}


def _accepts(grammar, doc: str) -> bool:
    m = grammar.matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


def _documents(pool):
    for k in range(4):
        for values in itertools.product(pool, repeat=k):
            yield list(values)


@pytest.mark.parametrize("name,schema,pool", [c for c in CASES if c[2] is not None],
                         ids=[c[0] for c in CASES if c[2] is not None])
def test_accepts_exactly_what_jsonschema_validates(name, schema, pool):
    grammar = cengine.compile_json_schema(schema, **OPTIONS)
    validator = Draft202012Validator(schema)
    seen_valid = seen_invalid = 0
    for value in _documents(pool):
        want = validator.is_valid(value)
        for doc in (json.dumps(value), json.dumps(value, separators=(",", ":")),
                    json.dumps(value, indent=1)):
            assert _accepts(grammar, doc) == want, (doc, want)
        seen_valid += want
        seen_invalid += not want
    assert seen_valid and seen_invalid


def test_object_property_in_any_order():
    grammar = cengine.compile_json_schema(SCHEMAS["property"], **OPTIONS)
    for doc, want in (('{"tags": []}', True), ('{"tags": ["green", "red"]}', True),
                      ('{"tags": ["red", "green"]}', True), ('{"tags": ["red", "red"]}', False),
                      ('{"tags": ["red", "green", "red"]}', False),
                      ('{"tags": ["blue"]}', False)):
        assert _accepts(grammar, doc) == want, doc


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_random_walks_over_allowed_bytes_close_to_valid_documents(name):
    schema = SCHEMAS[name]
    grammar = cengine.compile_json_schema(schema, **OPTIONS)
    validator = Draft202012Validator(schema)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(0, 2**32 - 1), st.integers(1, 60))
    def run(seed, steps):
        m = grammar.matcher()
        prefix = walk_random(m, random.Random(seed), steps)
        tail = m.completion()
        value = json.loads(prefix + tail)
        assert validator.is_valid(value), prefix + tail
        done = m.copy()
        assert done.accept_bytes(tail) and done.is_accepting()
    run()


def test_the_closer_ends_an_array_without_a_repeat():
    schema = {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True,
              "minItems": 3}
    grammar = cengine.compile_json_schema(schema, **OPTIONS)
    for prefix in (b'[', b'["b"', b'["b", "c",', b'["c","a"', b'["a", "'):
        m = grammar.matcher()
        assert m.accept_bytes(prefix)
        doc = json.loads(prefix + m.completion())
        assert sorted(doc) == ["a", "b", "c"], doc


def test_the_mask_allows_exactly_the_tokens_the_matcher_takes(llama_bpe_vocab):
    """At states inside and between the elements, every token of the vocabulary: in the mask
    if and only if the matcher accepts its bytes (a written value's token is refused)."""
    vocab = llama_bpe_vocab
    schema = {"type": "array", "items": {"enum": ["red", "green", "blue"]},
              "uniqueItems": True}
    grammar = cengine.compile_json_schema(schema, **OPTIONS)
    out = np.zeros(cengine.mask_words(vocab.size), np.int32)
    words = out.view(np.uint32)
    special = set(vocab.special_ids)
    for prefix in (b'["red",', b'["red", "', b'["red", "green"', b'["blue", "red", '):
        m = grammar.matcher(vocab)
        assert m.accept_bytes(prefix)
        m.fill_mask(out)
        for t in range(vocab.size):
            if t in special:
                continue
            data = vocab.token_bytes(t)
            allowed = bool(words[t >> 5] >> (t & 31) & 1)
            taken = bool(data) and m.copy().accept_bytes(data)
            assert allowed == taken, (prefix, data)
        if prefix.endswith(b","):
            # a written value cannot come again; an unwritten one can
            assert not m.copy().accept_bytes(b' "red"')
            assert m.copy().accept_bytes(b' "green"')


def test_a_range_is_counted_after_its_other_keywords():
    """0..19 is 20 values, past the bound; with multipleOf 2 it is 10, within it."""
    items = {"type": "integer", "minimum": 0, "maximum": 19}
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema({"type": "array", "items": items, "uniqueItems": True},
                                    **OPTIONS)
    assert e.value.keyword == "uniqueItems"
    grammar = cengine.compile_json_schema(
        {"type": "array", "items": {**items, "multipleOf": 2}, "uniqueItems": True}, **OPTIONS)
    assert _accepts(grammar, json.dumps(list(range(18, -1, -2))))
    assert not _accepts(grammar, "[2, 4, 2]")


def test_eleven_values_compile_twelve_are_refused():
    values = [f"v{i}" for i in range(12)]
    assert (1 << 11) <= MAX_ORDER_STATES < (1 << 12)
    ok = cengine.compile_json_schema(
        {"type": "array", "items": {"enum": values[:11]}, "uniqueItems": True}, **OPTIONS)
    assert _accepts(ok, json.dumps(values[10::-1]))
    assert not _accepts(ok, json.dumps(values[:2] + values[:1]))
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema(
            {"type": "array", "items": {"enum": values}, "uniqueItems": True}, **OPTIONS)
    assert e.value.keyword == "uniqueItems" and e.value.pointer == "/uniqueItems"


# (schema, the pointer the refusal names)
REFUSED = [
    ({"type": "array", "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True},
      "/uniqueItems"),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
      "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "items": {"anyOf": [{"enum": ["x"]}, {"type": "string"}]},
      "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "prefixItems": [{"const": "a"}], "items": {"enum": ["a", "b"]},
      "uniqueItems": True}, "/uniqueItems"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {
        "type": "number", "minimum": 0, "maximum": 1}, "uniqueItems": True}}},
     "/properties/a/uniqueItems"),
    ({"type": "array", "items": {"enum": ["a"]}, "uniqueItems": "yes"}, "/uniqueItems"),
]


@pytest.mark.parametrize("schema,pointer", REFUSED)
def test_refused_where_the_domain_is_not_finite_or_not_alone(schema, pointer):
    with pytest.raises(cengine.CompileError) as e:
        cengine.compile_json_schema(schema, **OPTIONS)
    assert e.value.keyword == "uniqueItems" and e.value.pointer == pointer


# (values, what _distinct keeps): JSON Schema's equality, not Python's (True == 1 there)
DISTINCT = [
    ([1, 1.0, True, 1], [1, True]),
    ([10**20, 10**20 + 1, 2.5, 2.5], [10**20, 10**20 + 1, 2.5]),
    (["1", 1, None, None, False, 0, 0.0], ["1", 1, None, False, 0]),
    ([[1], [1.0], {"a": 1}, {"a": 1.0}, [True]], [[1], {"a": 1}, [True]]),
]


@pytest.mark.parametrize("values,kept", DISTINCT)
def test_values_are_taken_once_as_json_schema_compares_them(values, kept):
    from cengine.schema.compiler import _distinct
    got = _distinct(values)
    assert got == kept and [type(v) for v in got] == [type(v) for v in kept]


def test_a_long_enum_is_refused_at_the_bound():
    """An enum of thousands of values past the bound is refused (its values are not all
    checked against items first)."""
    values = [f"v{i}" for i in range(5000)]
    with pytest.raises(cengine.LimitError) as e:
        cengine.compile_json_schema(
            {"type": "array", "items": {"enum": values + values[:10]}, "uniqueItems": True},
            **OPTIONS)
    assert e.value.keyword == "uniqueItems" and e.value.pointer == "/uniqueItems"
