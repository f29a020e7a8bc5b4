"""property_order="any": an object's properties in every order, each at most once, every other
keyword of the object as in declared order.

The oracle is jsonschema on the parsed document plus "no declared name twice" (jsonschema sees
a parsed dict, where a repeated key has silently replaced the first; a repeated extra key is
accepted as in declared order, so a document repeating one only has to be valid when
accepted). Case tables first; then, for small objects, every document of up to four members
over the declared names, other names and two values is tried (the grammar must accept exactly
the valid ones); the combinator tables of
test_schema_combinators run again under the option (hypothesis documents near each schema,
random walks and every prefix closing to a valid document); past MAX_ORDER_STATES the declared
properties keep declared order (the documented narrowing) and only that is refused.
"""
from __future__ import annotations

import itertools
import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import CompileError, LimitError
from cengine.schema import MAX_ORDER_STATES
from test_schema_combinators import CASES, _assert_closes, _near
from walks import walk_random

ANY = {"closed_objects": False, "whitespace_budget": None, "property_order": "any"}


def _validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode() if isinstance(doc, str) else doc) and m.is_accepting()


def _no_repeated_key(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"repeated key in {keys}")
    return dict(pairs)


def _oracle(v, doc) -> bool:
    """Valid and without a repeated key (at any depth)."""
    try:
        value = json.loads(doc, object_pairs_hook=_no_repeated_key)
    except ValueError:
        return False
    return v.is_valid(value)


def _expected(v, doc, declared):
    """A flat document's verdict: True / False, or None when it repeats only extra keys (then
    acceptance must imply validity)."""
    keys = [k for k, _ in json.loads(doc, object_pairs_hook=lambda p: p)]
    repeated = {k for k in keys if keys.count(k) > 1}
    if repeated & set(declared):
        return False
    valid = v.is_valid(json.loads(doc))
    return None if repeated and valid else valid


def _declared(schema) -> list:
    return list(schema.get("properties", {})) + [r for r in schema.get("required", [])
                                                 if r not in schema.get("properties", {})]


def _doc(pairs) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(x)}" for k, x in pairs) + "}"


# --- case tables -------------------------------------------------------------------------------
FOUR = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                         "c": {"type": "boolean"}, "d": {"type": "null"}},
        "required": ["a", "c"], "additionalProperties": False}
FOUR_MEMBERS = [("a", 1), ("b", "x"), ("c", True), ("d", None)]

# (name, schema, accepted documents, refused documents): refused ones are invalid or repeat a key
CASES_ANY = [
    ("permutations", FOUR,
     [_doc(p) for p in itertools.permutations(FOUR_MEMBERS)] +
     [_doc(p) for p in itertools.permutations(FOUR_MEMBERS[:3])] + ['{"c": true, "a": 1}'],
     ['{"a": 1, "b": "x"}', '{"c": true}', "{}", '{"c": true, "a": 1, "a": 2}',
      '{"a": 1, "c": true, "c": false}', '{"b": "x", "a": 1, "c": true, "b": "y"}',
      '{"c": true, "a": 1, "e": 0}', '{"d": null, "a": "1", "c": true}']),
    ("additional-true", {**FOUR, "additionalProperties": True},
     ['{"e": 0, "c": true, "a": 1}', '{"c": true, "e": [], "a": 1, "f": {}}'],
     ['{"e": 0, "c": true}', '{"c": true, "a": 1, "c": false}', '{"a": 1, "e": 0, "a": 1}']),
    ("additional-schema", {**FOUR, "additionalProperties": {"type": "integer"}},
     ['{"zz": 5, "c": false, "b": "s", "a": 0}', '{"c": false, "a": 0, "b\\u00f1": 3}'],
     ['{"zz": "5", "c": false, "a": 0}', '{"c": false, "a": 0, "b": 3}',
      '{"c": false, "a": 0, "\\u0061": 0}']),
    ("closed-objects-default", {k: v for k, v in FOUR.items() if k != "additionalProperties"},
     ['{"c": true, "a": 1}'], ['{"c": true, "a": 1, "e": 0}']),
    ("pattern-properties", {"type": "object", "properties": {"name": {"type": "string"}},
                            "patternProperties": {"^x-": {"type": "integer"}},
                            "additionalProperties": False, "required": ["name"]},
     ['{"x-a": 1, "name": "n"}', '{"x-a": 1, "name": "n", "x-b": 2}'],
     ['{"x-a": "s", "name": "n"}', '{"y": 1, "name": "n"}', '{"x-a": 1}',
      '{"name": "n", "x-a": 1, "name": "m"}']),
    ("property-names", {"type": "object", "properties": {"long_name": {}},
                        "propertyNames": {"pattern": "^x"},
                        "additionalProperties": {"type": "integer"}},
     ['{"xa": 1, "xb": 2}', '{"xb": 2, "xa": 1}', "{}"],
     ['{"xa": 1, "long_name": 1}', '{"ya": 1}', '{"xb": 2, "xa": "s"}']),
    ("min-max-closed", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                        "additionalProperties": False, "minProperties": 2, "maxProperties": 2},
     ['{"c": 1, "a": 2}', '{"b": 1, "a": 2}', '{"c": 1, "b": 2}'],
     ['{"c": 1}', '{"c": 1, "b": 2, "a": 3}', '{"c": 1, "c": 2}']),
    ("max-open", {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"],
                  "maxProperties": 2},
     ['{"x": 1, "b": 2}', '{"b": 1, "a": 2}', '{"a": 1, "b": 2}'],
     ['{"x": 1, "a": 2}', '{"x": 1, "y": 2, "b": 3}', '{"a": 1, "x": 2, "b": 3}']),
    ("dependent-required", {"type": "object", "properties": {"card": {}, "address": {}, "n": {}},
                            "dependentRequired": {"card": ["address"]},
                            "additionalProperties": False},
     ['{"address": 1, "card": 2}', '{"card": 2, "address": 1}', '{"n": 0}',
      '{"n": 0, "address": 1}'],
     ['{"card": 1}', '{"n": 0, "card": 1}', '{"card": 1, "n": 0, "card": 2}']),
    ("oneof-variants", {"type": "object", "properties": {"radius": {}, "w": {}, "h": {},
                                                         "shape": {"type": "string"}},
                        "oneOf": [{"required": ["radius"]}, {"required": ["w", "h"]}],
                        "required": ["shape"]},
     ['{"shape": "c", "radius": 1}', '{"h": 1, "shape": "r", "w": 2}',
      '{"radius": 1, "w": 2, "shape": "s"}'],
     ['{"shape": "c"}', '{"h": 1, "radius": 1, "shape": "r", "w": 2}', '{"radius": 1}']),
    ("nested", {"type": "object", "properties": {
        "id": {"type": "integer"},
        "owner": {"type": "object", "properties": {"name": {"type": "string"},
                                                   "email": {"type": "string"}},
                  "required": ["name", "email"], "additionalProperties": False}},
        "required": ["id", "owner"], "additionalProperties": False},
     ['{"owner": {"email": "e", "name": "n"}, "id": 1}'],
     ['{"owner": {"email": "e"}, "id": 1}', '{"owner": {"email": "e", "name": "n", "email": "f"}, '
                                            '"id": 1}']),
    ("allof-merge", {"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     ['{"b": "x", "a": 1}', '{"c": null, "b": "x", "a": 1}'], ['{"b": "x"}', '{"b": 1, "a": 1}']),
    ("empty-object", {"type": "object", "properties": {}, "additionalProperties": False},
     ["{}"], ['{"a": 1}']),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES_ANY, ids=[c[0] for c in CASES_ANY])
def test_any_order_cases(name, schema, good, bad):
    v = _validator(schema)
    closed = name == "closed-objects-default"
    g = cengine.compile_json_schema(schema, **{**ANY, "closed_objects": closed})
    for d in good:
        assert json.loads(d) is not None and v.is_valid(json.loads(d)), d
        assert _accepts(g, d), d
    for d in bad:
        if not closed:
            assert not _oracle(v, d), d         # the table itself: invalid or a repeated key
        assert not _accepts(g, d), d


def test_declared_order_is_the_default_and_keeps_the_narrowing():
    g = cengine.compile_json_schema(FOUR)
    assert _accepts(g, '{"a": 1, "c": true}')
    assert not _accepts(g, '{"c": true, "a": 1}')
    assert cengine.compile_json_schema(FOUR, property_order="declared") is g


def test_the_option_is_part_of_the_cache_key():
    declared = cengine.compile_json_schema(FOUR, closed_objects=False)
    any_order = cengine.compile_json_schema(FOUR, closed_objects=False, property_order="any")
    assert declared is not any_order
    assert not _accepts(declared, '{"c": true, "a": 1}')
    assert _accepts(any_order, '{"c": true, "a": 1}')
    assert cengine.compile_json_schema(FOUR, closed_objects=False, property_order="any") \
        is any_order
    part = cengine.JsonSchema(FOUR, property_order="any")
    assert part != cengine.JsonSchema(FOUR) and part.key != cengine.JsonSchema(FOUR).key
    g = cengine.compile_structural(cengine.Concat(cengine.Text("<"), part, cengine.Text(">")))
    assert _accepts(g, '<{"c":true,"a":1}>')


@pytest.mark.parametrize("bad", ["sorted", "", None, "ANY"])
def test_unknown_property_order_is_refused(bad):
    with pytest.raises(ValueError):
        cengine.compile_json_schema(FOUR, property_order=bad)
    with pytest.raises(ValueError):
        cengine.JsonSchema(FOUR, property_order=bad)


# --- every small document: the grammar accepts exactly the valid ones ---------------------------
# (name, schema, names the documents use, values they use)
EXHAUSTIVE = [
    ("required-optional", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {}, "c": {"type": "string"}}, "required": ["a", "c"],
        "additionalProperties": False}, ["a", "b", "c", "x"], [1, "s"]),
    ("open-extras", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
                     "required": ["b"]}, ["a", "b", "x", "y"], [1, "s"]),
    ("extras-schema", {"type": "object", "properties": {"a": {}, "b": {"type": "string"}},
                       "additionalProperties": {"type": "integer"}}, ["a", "b", "x"], [1, "s"]),
    ("max-properties-extras", {"type": "object", "properties": {"a": {}, "b": {}},
                               "maxProperties": 2, "minProperties": 1},
     ["a", "b", "x", "y"], [1]),
    ("min-max-closed", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                        "additionalProperties": False, "minProperties": 2, "maxProperties": 3},
     ["a", "b", "c", "x"], [1]),
    ("pattern", {"type": "object", "properties": {"ab": {"type": "string"}},
                 "patternProperties": {"^a": {"type": "integer"}},
                 "additionalProperties": False}, ["ab", "a", "ac", "b"], [1, "s"]),
    ("dependent", {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "string"}},
                   "dependentRequired": {"a": ["b"], "c": ["a"]}},
     ["a", "b", "c", "x"], [1, "s"]),
    ("oneof-required", {"type": "object", "properties": {"r": {}, "w": {}, "h": {}},
                        "oneOf": [{"required": ["r"]}, {"required": ["w", "h"]}],
                        "additionalProperties": False}, ["r", "w", "h"], [1]),
]


def _all_documents(names, values, most=4):
    members = [(k, x) for k in names for x in values]
    for n in range(most + 1):
        for combo in itertools.product(members, repeat=n):
            yield _doc(combo)


@pytest.mark.parametrize("name,schema,names,values", EXHAUSTIVE, ids=[c[0] for c in EXHAUSTIVE])
def test_any_order_is_exact_on_every_small_document(name, schema, names, values):
    wrong = _disagreements(cengine.compile_json_schema(schema, **ANY), schema, names, values)
    assert not wrong, wrong[:10]


def _disagreements(g, schema, names, values, declared_order_only=False):
    """The small documents on which g's verdict differs from the validator's (with
    declared_order_only, a valid document whose declared properties stand out of declared
    order counts as invalid); documents the validator cannot judge are skipped."""
    v = _validator(schema)
    declared = _declared(schema)
    wrong = []
    for d in _all_documents(names, values):
        want, got = _expected(v, d, declared), _accepts(g, d)
        if declared_order_only and want is not False:
            want = want if _declared_in_order(d, declared) else False
        if want is not None and got != want:
            wrong.append((d, got))
    return wrong


def _declared_in_order(doc, declared) -> bool:
    keys = [k for k, _ in json.loads(doc, object_pairs_hook=lambda p: p)]
    pos = [declared.index(k) for k in keys if k in declared]
    return pos == sorted(pos)


@pytest.mark.parametrize("name,schema,names,values", EXHAUSTIVE[:5],
                         ids=[c[0] for c in EXHAUSTIVE[:5]])
def test_past_the_state_budget_declared_properties_keep_declared_order(
        small_order_budget, name, schema, names, values):
    """Accepted: exactly the valid documents whose declared properties stand in declared
    order; extra keys may stand anywhere between them."""
    g = cengine.compile_json_schema(schema, **ANY)
    wrong = _disagreements(g, schema, names, values, declared_order_only=True)
    assert not wrong, wrong[:10]
    if name == "open-extras":
        assert _accepts(g, '{"x": 1, "a": 1, "y": 2, "b": 1}')


def test_objects_past_the_budget_are_narrowed_not_refused():
    n = MAX_ORDER_STATES.bit_length()              # 2**n > MAX_ORDER_STATES
    props = {f"p{i}": {"type": "integer"} for i in range(n)}
    schema = {"type": "object", "properties": props, "required": ["p0", f"p{n - 1}"]}
    g = cengine.compile_json_schema(schema, **ANY)
    names = list(props)
    assert _accepts(g, _doc([(k, 1) for k in names]))
    assert _accepts(g, _doc([("x", 0), ("p0", 1), ("zz", 2), (names[-1], 1)]))
    assert not _accepts(g, _doc([(names[-1], 1), ("p0", 1)]))     # the documented narrowing
    assert not _accepts(g, _doc([("p0", 1), ("p0", 1), (names[-1], 1)]))
    # one property fewer fits the budget: every order
    small = {"type": "object", "properties": dict(list(props.items())[:n - 1])}
    g = cengine.compile_json_schema(small, **ANY)
    assert _accepts(g, _doc([(k, 1) for k in reversed(names[:n - 1])]))


def test_counting_past_the_budget_is_refused_naming_the_keyword():
    props = {f"p{i}": {} for i in range(40)}
    schema = {"type": "object", "properties": props, "maxProperties": 30}
    with pytest.raises(LimitError) as ei:
        cengine.compile_json_schema(schema, **ANY)
    assert (ei.value.keyword, ei.value.pointer) == ("maxProperties", "/maxProperties")
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema({"type": "object", "minProperties": 2}, **ANY)
    assert ei.value.keyword == "minProperties"


# --- the combinator tables under the option ------------------------------------------------------
def _shuffled(doc: str, rng: random.Random) -> str:
    def go(x):
        if isinstance(x, dict):
            items = [(k, go(y)) for k, y in x.items()]
            rng.shuffle(items)
            return dict(items)
        if isinstance(x, list):
            return [go(y) for y in x]
        return x
    return json.dumps(go(json.loads(doc)), ensure_ascii=False)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_combinator_cases_in_any_order(name, schema, good, bad):
    v = _validator(schema)
    g = cengine.compile_json_schema(schema, **ANY)
    rng = random.Random(name)
    for d in good:
        for _ in range(4):
            e = _shuffled(d, rng)
            assert _oracle(v, e) and _accepts(g, e), e
    for d in bad:
        for _ in range(4):
            e = _shuffled(d, rng)
            assert not _accepts(g, e), e


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_any_order_acceptance_never_exceeds_validity(name, schema, good, bad):
    v = _validator(schema)
    g = cengine.compile_json_schema(schema, **ANY)

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_near(schema))
    def run(value):
        doc = json.dumps(value, ensure_ascii=False)
        if _accepts(g, doc):
            assert v.is_valid(value), doc
    run()


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_any_order_prefixes_and_walks_close_to_valid_documents(name, schema, good, bad):
    v = _validator(schema)
    g = cengine.compile_json_schema(schema, **ANY)
    rng = random.Random(name)
    for d in good:
        doc = _shuffled(d, rng).encode()
        m = g.matcher()
        for i in range(len(doc)):
            _assert_closes(m, doc[:i], v)
            assert m.accept_bytes(doc[i:i + 1]), (doc, i)

    @settings(max_examples=30, deadline=None)
    @given(st.integers(0, 2**32 - 1), st.integers(1, 40))
    def run(seed, steps):
        m = g.matcher()
        prefix = walk_random(m, random.Random(seed), steps)
        _assert_closes(m, prefix, v)
    run()
