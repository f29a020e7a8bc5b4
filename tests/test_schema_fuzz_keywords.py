"""Random small schemas of patternProperties (disjoint, overlapping, inert patterns beside
declared names and additionalProperties) and of contains (counts, merges under allOf, NOT),
against jsonschema on random documents (hypothesis).

A schema that compiles must accept exactly what jsonschema accepts (keys in any order:
property_order="any"; open objects: closed_objects=False); a refusal is allowed, a wrong
verdict is not.
"""
from __future__ import annotations

import json

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import CompileError

_VALUE_SCHEMAS = [True, {}, {"type": "string"}, {"type": "integer"}, {"minimum": 3},
                  {"minLength": 2}, {"type": "string", "maxLength": 1}, {"type": "null"},
                  {"description": "an annotation"}, False]
_PATTERNS = ["^a", "b", "c$", "^x-", "^[0-9]+$", "a", "^ab$", "^x-a"]
_NAMES = ["a", "ab", "b", "bc", "x-a", "x-ab", "12", "c", "abc", "", "x"]
_VALUES = [1, 5, "s", "abc", None, 1.5, [], {"k": 1}]

_settings = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _verdicts(schema, docs) -> list:
    """(document, ours, jsonschema's) for each document where they differ; [] when the
    schema is refused."""
    try:
        g = cengine.compile_json_schema(schema, closed_objects=False, property_order="any")
    except CompileError:
        return []
    cls = jsonschema.Draft202012Validator
    oracle = cls(schema, format_checker=cls.FORMAT_CHECKER)     # formats asserted, as ours
    wrong = []
    for doc in docs:
        m = g.matcher()
        ours = m.accept_bytes(json.dumps(doc).encode()) and m.is_accepting()
        if ours != oracle.is_valid(doc):
            wrong.append((doc, ours))
    return wrong


_object_schemas = st.fixed_dictionaries(
    {"type": st.just("object"),
     "patternProperties": st.dictionaries(st.sampled_from(_PATTERNS),
                                          st.sampled_from(_VALUE_SCHEMAS), min_size=1,
                                          max_size=3)},
    optional={"properties": st.dictionaries(st.sampled_from(_NAMES),
                                            st.sampled_from(_VALUE_SCHEMAS), max_size=2),
              "additionalProperties": st.sampled_from(_VALUE_SCHEMAS)})
_objects = st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(_VALUES), max_size=3)


@_settings
@given(_object_schemas, st.lists(_objects, min_size=1, max_size=12))
def test_pattern_properties_agree_with_jsonschema(schema, docs):
    assert _verdicts(schema, docs) == []


_ITEM_SCHEMAS = [True, {"type": "string"}, {"enum": ["a", "b", "c"]}, {"type": ["string", "null"]}]
_WITNESSES = [{"const": "a"}, {"enum": ["a", "b"]}, {"type": "null"}, {"minLength": 2}, True,
              False]


def _contains(draw_counts):
    return st.fixed_dictionaries(
        {"contains": st.sampled_from(_WITNESSES)},
        optional={"minContains": st.integers(0, 3), "maxContains": st.integers(0, 3),
                  "items": st.sampled_from(_ITEM_SCHEMAS), "minItems": st.integers(0, 4),
                  "maxItems": st.integers(0, 4)} if draw_counts else
        {"items": st.sampled_from(_ITEM_SCHEMAS), "minItems": st.integers(0, 4),
         "maxItems": st.integers(0, 4)})


_contains_schemas = st.one_of(
    _contains(True),
    st.builds(lambda a, b: {"allOf": [a, b]}, _contains(True), _contains(True)),
    st.builds(lambda a: {"not": a}, _contains(False)),
    st.builds(lambda a, lo, hi: {"type": "array", "not": {"items": a}, "minItems": lo,
                                 "maxItems": hi},
              st.sampled_from(_WITNESSES), st.integers(0, 4), st.integers(0, 4)),
    st.builds(lambda a, b: {"if": a, "then": b}, _contains(False), _contains(True)))
_arrays = st.lists(st.sampled_from(["a", "b", "c", "abc", None, 1]), max_size=5)


@_settings
@given(_contains_schemas, st.lists(_arrays, min_size=1, max_size=12))
def test_contains_agrees_with_jsonschema(schema, docs):
    assert _verdicts(schema, docs + ["a", {}]) == []


# enum below an if / then / else: the else branch is a rewritten node (NOT if, merged with
# the enum), whose values enums._rewritten_valid reads
_CONDITIONS = [{"pattern": "^a"}, {"pattern": "[0-9]"}, {"type": "integer"}, {"minLength": 3},
               {"enum": ["a", 1]}, {"maximum": 2}, {"format": "date"}, {"required": ["k"]},
               {"items": {"type": "integer"}}, {"anyOf": [{"pattern": "b$"}, {"maxLength": 1}]}]
_ENUM_VALUES = ["a", "ab", "abc", "b1", "2024-01-02", "", 1, 2.5, 3, None, True, {"k": 1}, {},
                [1], ["x"]]


def _conditional(values, cond, then, else_):
    return {"type": "object", "required": ["v"], "properties": {"v": {"enum": values}},
            "if": {"properties": {"v": cond}}, "then": {"properties": {"v": then}},
            "else": {"properties": {"v": else_}}}


_conditionals = st.builds(_conditional,
                          st.lists(st.sampled_from(_ENUM_VALUES), min_size=1, max_size=6,
                                   unique_by=json.dumps),
                          st.sampled_from(_CONDITIONS), st.sampled_from(_CONDITIONS + [True]),
                          st.sampled_from(_CONDITIONS + [True, False]))


@_settings
@given(_conditionals)
def test_enum_below_a_condition_agrees_with_jsonschema(schema):
    docs = [{"v": v} for v in _ENUM_VALUES]
    assert _verdicts(schema, docs) == []
