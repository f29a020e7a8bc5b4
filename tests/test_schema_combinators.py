"""allOf, oneOf, not, if/then/else, patternProperties, propertyNames, minProperties /
maxProperties, dependentRequired / dependentSchemas: exact where compiled, refused otherwise.

jsonschema (the validator of each schema's draft) is the oracle: the case tables are checked
against it first; hypothesis then draws documents near each schema (its names and values,
other types, missing and extra keys) and every document the grammar accepts must be valid
(acceptance never exceeds validity); random walks over allowed bytes and every prefix of the
tables' valid documents close, through `completion()`, to a valid document.
"""
from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine import CompileError
from walks import walk_random

OBJ = {"type": "object"}

# (name, schema, valid documents (as written in our key order), invalid documents)
CASES = [
    # --- allOf: one merged schema
    ("allof-properties", {"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     ['{"a": 1, "b": "x"}', '{"a": 1, "b": "x", "c": null}'],
     ['{"a": 1}', '{"b": "x"}', '{"a": "1", "b": "x"}', "[]"]),
    ("allof-types-bounds", {"allOf": [{"type": ["integer", "string"], "minimum": 2},
                                      {"type": ["number", "null"], "maximum": 5}]},
     ["2", "5"], ["1", "6", '"a"', "null", "2.5"]),
    ("allof-enums", {"allOf": [{"enum": [1, 2, 3]}, {"enum": [2, 3, 4]}, {"not": {"const": 3}}]},
     ["2"], ["1", "3", "4"]),
    ("allof-ref-inheritance", {
        "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}},
                           "required": ["id"]}},
        "allOf": [{"$ref": "#/$defs/base"},
                  {"properties": {"name": {"type": "string", "maxLength": 3}},
                   "required": ["name"]}]},
     ['{"id": 1, "name": "ab"}'], ['{"id": 1}', '{"id": 1, "name": "abcd"}', '{"name": "a"}']),
    ("allof-closed-sides", {"allOf": [
        {"properties": {"a": {}}, "additionalProperties": False},
        {"properties": {"b": {}}, "additionalProperties": False}]},
     ["{}", "1", '"s"'], ['{"a": 1}', '{"b": 1}', '{"c": 1}']),
    ("allof-closed-and-open", {"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"a": {"minimum": 3}, "b": {}}}]},
     ['{"a": 3}', "{}"], ['{"a": 2}', '{"b": 1}', '{"a": 3, "b": 1}']),
    ("allof-items", {"allOf": [{"type": "array", "prefixItems": [{"type": "integer"}],
                                "items": {"type": "string"}},
                               {"prefixItems": [{"minimum": 0}, {"maxLength": 1}], "maxItems": 3}]},
     ["[]", "[0]", '[1, "a"]', '[1, "a", "bb"]'], ['[-1]', '[1, "ab"]', '[1, "a", "b", "c"]',
                                                   '[1, 2]']),
    # --- oneOf: disjoint branches, or narrowed by the others' negation
    ("oneof-types", {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
     ['"a"', "1", "null"], ["1.5", "[]", "true"]),
    ("oneof-discriminator", {"type": "object", "oneOf": [
        {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind",
                                                                                        "x"]},
        {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}]},
     ['{"kind": "a", "x": 1}', '{"kind": "b"}', '{"kind": "b", "y": "s"}'],
     ['{"kind": "a"}', '{"kind": "c"}', '{"kind": "b", "y": 1}', "{}"]),
    ("oneof-required-xor", {"type": "object", "properties": {"a": {}, "b": {}},
                            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
     ['{"a": 1}', '{"b": 1}'], ["{}", '{"a": 1, "b": 2}']),
    ("oneof-open-properties", {"type": "object", "oneOf": [
        {"properties": {"dog": {"type": "string"}}}, {"properties": {"cat": {"type": "string"}}}]},
     ['{"dog": "x", "cat": 1}', '{"cat": "y", "dog": 1}'],
     ["{}", '{"dog": "x"}', '{"dog": "x", "cat": "y"}', '{"dog": 1, "cat": 2}']),
    # --- not
    ("not-type", {"not": {"type": ["string", "null"]}}, ["1", "[]", "{}", "true"], ['"a"', "null"]),
    ("not-enum", {"type": "string", "not": {"enum": ["a", "b"]}}, ['"c"', '"ab"', '""'],
     ['"a"', '"b"', "1"]),
    ("not-required", {"type": "object", "properties": {"a": {}}, "not": {"required": ["b"]}},
     ["{}", '{"a": 1}', '{"a": 1, "c": 2}'], ['{"b": 1}', '{"a": 1, "b": 2}']),
    ("not-conjunction", {"not": {"type": "object", "required": ["a", "b"]}},
     ["1", '"s"', "{}", '{"a": 1}', '{"b": 1}'], ['{"a": 1, "b": 2}']),
    ("not-bounds", {"type": ["integer", "string"], "not": {"minimum": 3, "maxLength": 2}},
     ["2", "-5", '"abc"'], ["3", "7", '"ab"']),
    ("oneof-required-lists", {"type": "object", "properties": {
        "radius": {"type": "number"}, "length": {"type": "number"}, "width": {"type": "number"}},
        "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]},
     ['{"radius": 1}', '{"length": 1, "width": 2}', '{"radius": 1, "length": 2}'],
     ['{"radius": 1, "length": 1, "width": 2}', "{}", '{"length": 1}']),
    # --- if / then / else
    ("if-then-else", {"type": "object", "properties": {"kind": {"enum": ["n", "s"]}, "v": {}},
                      "required": ["kind", "v"],
                      "if": {"properties": {"kind": {"const": "n"}}},
                      "then": {"properties": {"v": {"type": "number"}}},
                      "else": {"properties": {"v": {"type": "string"}}}},
     ['{"kind": "n", "v": 1}', '{"kind": "s", "v": "x"}'],
     ['{"kind": "n", "v": "x"}', '{"kind": "s", "v": 1}', '{"kind": "n"}']),
    # --- patternProperties / propertyNames
    ("pattern-universal", {"type": "object", "properties": {"a": {"type": "integer"}},
                           "patternProperties": {".*": {"minimum": 0}}},
     ['{"a": 1}', '{"a": 0, "zz": 5}'], ['{"a": -1}', '{"b": -1}', '{"a": 1.5}']),
    ("pattern-closed", {"type": "object", "properties": {"name": {"type": "string"}},
                        "patternProperties": {"^x-": {"type": "integer"}},
                        "additionalProperties": False},
     ['{"name": "n", "x-a": 1}', '{"x-": 2}', "{}"], ['{"x-a": "s"}', '{"y": 1}', '{"name": 1}']),
    ("pattern-open", {"type": "object", "properties": {"ab": {"type": "string"}},
                      "patternProperties": {"^a": {"type": "integer"}}},
     ['{"b": "s"}', '{"a": 1, "x": "s"}', '{"\\u0061c": 2}', "{}"],
     ['{"ab": "s"}', '{"ab": 1}', '{"a": "s"}', '{"ac": "s", "b": 1}', '{"\\u0061c": "s"}']),
    ("pattern-open-addl", {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}},
                           "additionalProperties": {"type": "string"}},
     ['{"abc": 1, "A": "s", "": "e", "a b": "x"}'],
     ['{"abc": "s"}', '{"A": 1}', '{"": 1}', '{"a\\n": ""}']),     # Python's $ matches before \n
    # a pattern whose schema is the rest's splits nothing (OpenAPI's `^x-` of `{}`), beside
    # another pattern too; a declared name matching it still meets it
    ("pattern-inert", {"type": "object", "properties": {"a": {"type": "integer"}},
                       "patternProperties": {"^x-": {"description": "vendor"}}},
     ['{"a": 1, "x-y": [1]}', '{"x-a": "s", "b": 2}', "{}"], ['{"a": "s"}', '{"a": 1.5}']),
    ("pattern-inert-beside", {"type": "object", "properties": {"x-n": {"type": "integer"}},
                              "patternProperties": {"^x-": {"maximum": 3}, "^y": True},
                              "additionalProperties": True},
     ['{"x-a": 1, "yb": "s", "c": []}', '{"x-n": 3, "y": 9}', '{"x-a": "s"}'],
     ['{"x-a": 4}', '{"x-n": 4}', '{"x-n": "s"}']),
    # a pattern whose schema equals the rest's is still one a name can meet beside another
    ("pattern-rest-overlap", {"type": "object", "additionalProperties": {"type": "string"},
                              "patternProperties": {"^x-": {"type": "string"},
                                                    "^x-a": {"minLength": 3}}},
     ['{"x-ab": "abc"}', '{"y": "s"}', '{"x-b": ""}'],
     ['{"x-ab": 12345}', '{"x-ab": "ab"}', '{"x-b": 1}', '{"y": 1}']),
    ("pattern-inert-addl", {"type": "object", "additionalProperties": {"type": "string"},
                            "patternProperties": {"^x-": {"type": "string"},
                                                  "^y": {"type": "string"}}},
     ['{"x-a": "s", "yb": "t", "c": ""}'], ['{"x-a": 1}', '{"yb": 1}', '{"c": 1}']),
    # patterns of different schemas whose languages share no name: each name meets one
    ("pattern-disjoint", {"type": "object", "properties": {"/x": {"maxLength": 3}},
                          "patternProperties": {"^/": {"type": "string", "pattern": "^/"},
                                                "^[^/]": {"type": "object"}},
                          "additionalProperties": False},
     ['{"/a": "/b", "c": {}}', '{"/x": "/ab"}', '{"d": {"/": 1}}', "{}"],
     ['{"/a": "b"}', '{"/a": {}}', '{"c": "/"}', '{"": 1}', '{"/x": "/abc"}', '{"/x": "x"}']),
    ("pattern-disjoint-rest", {"type": "object",
                               "patternProperties": {"^field_patterns$": {"type": "array"},
                                                     "^hash_type$": {"enum": ["a", "b"]}},
                               "additionalProperties": {"type": "integer"}},
     ['{"field_patterns": [], "hash_type": "a", "x": 1}', "{}"],
     ['{"field_patterns": 1}', '{"hash_type": "c"}', '{"x": "a"}', '{"hash_type": 1}']),
    # patterns of different schemas that one name can match: a name meets every one it matches
    ("pattern-overlap", {"type": "object", "additionalProperties": {"type": "null"},
                         "patternProperties": {"^a": {"type": "integer"}, "b": {"minimum": 3},
                                               "c$": {"type": "string"}}},
     ['{"ab": 3}', '{"xb": 5}', '{"x": null}', '{"bc": "s"}', '{"\\u0061b": 4}', "{}"],
     ['{"ab": 2}', '{"a": 1.5}', '{"xb": 2}', '{"abc": 3}', '{"ac": "s"}', '{"ac": 1}',
      '{"x": 1}', '{"bc": 3}']),
    ("pattern-dot-plus", {"type": "object", "patternProperties": {".+": {"type": "integer"}},
                          "additionalProperties": False},
     ['{"a": 1}', "{}"], ['{"": 1}', '{"a": "s"}', '{"\\n": 1}']),
    ("property-names", {"type": "object", "propertyNames": {"pattern": "^[a-z]{1,3}$",
                                                            "maxLength": 3},
                        "additionalProperties": {"type": "integer"}},
     ["{}", '{"ab": 1, "xyz": 2}'], ['{"abcd": 1}', '{"A": 1}', '{"ab": "s"}']),
    ("property-names-declared", {"type": "object", "properties": {"long_name": {}, "ok": {}},
                                 "propertyNames": {"maxLength": 4}, "additionalProperties": False},
     ['{"ok": 1}', "{}"], ['{"long_name": 1}']),
    # --- counting properties
    ("min-properties-1", {"type": "object", "additionalProperties": {"type": "integer"},
                          "minProperties": 1}, ['{"a": 1}', '{"a": 1, "b": 2}'], ["{}",
                                                                                  '{"a": "x"}']),
    ("min-max-properties", {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                            "additionalProperties": False, "minProperties": 2, "maxProperties": 2},
     ['{"a": 1, "b": 2}', '{"a": 1, "c": 3}', '{"b": 1, "c": 2}'],
     ['{"a": 1}', '{"a": 1, "b": 2, "c": 3}', "{}"]),
    ("max-properties-open", {"type": "object", "properties": {"a": {}}, "maxProperties": 2},
     ['{"a": 1, "x": 2}', '{"x": 1, "y": 2}', "{}"], ['{"a": 1, "x": 2, "y": 3}',
                                                      '{"x": 1, "y": 2, "z": 3}']),
    # --- dependentRequired / dependentSchemas
    ("dependent-required", {"type": "object", "properties": {"card": {}, "address": {}},
                            "dependentRequired": {"card": ["address"]}},
     ["{}", '{"address": 1}', '{"card": 1, "address": 2}', '{"x": 1}'], ['{"card": 1}']),
    ("dependent-schemas", {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
                           "dependentSchemas": {"a": {"properties": {"b": {"minimum": 10}},
                                                      "required": ["b"]}}},
     ['{"b": 1}', '{"a": 0, "b": 10}'], ['{"a": 0}', '{"a": 0, "b": 9}']),
]

REFUSED = [
    # (two patterns merge: test_schema_not_languages)
    ({"allOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}]}, "allOf", "/allOf"),
    ({"allOf": [{"$ref": "#"}]}, "allOf", "/allOf"),
    ({"allOf": [{"patternProperties": {"^a": {}}}, {"additionalProperties": {"type": "integer"}}]},
     "allOf", "/allOf"),
    # NOT multipleOf is no schema the compiler writes (NOT pattern is: test_schema_not_languages)
    ({"oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 3}]},
     "oneOf", "/oneOf"),
    ({"type": "object", "properties": {"a": {"not": {"multipleOf": 3}}}}, "not",
     "/properties/a/not"),
    ({"if": {"multipleOf": 3}, "then": {"required": ["c"]}}, "if", "/if"),
    ({"type": "object", "patternProperties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                              "c": {"type": "null"}, "d": {"minimum": 1},
                                              "e": {"type": "array"}}},     # 5 overlapping
     "patternProperties", "/patternProperties"),
    ({"type": "object", "additionalProperties": True, "minProperties": 3}, "minProperties",
     "/minProperties"),
    ({"type": "object", "dependentRequired": {n: [] for n in "abcdefg"}}, "dependentRequired",
     "/dependentRequired"),
]


def _validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _compile(schema):
    return cengine.compile_json_schema(schema, closed_objects=False)


def _accepts(g, doc: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc) and m.is_accepting()


def check_exact(g, v, good, bad):
    """The oracle and the grammar agree on every listed document: good ones valid and
    accepted, bad ones invalid and rejected (shared by the combinator case tables)."""
    for d in good:
        assert v.is_valid(json.loads(d)), d
        assert _accepts(g, d.encode()), d
    for d in bad:
        assert not v.is_valid(json.loads(d)), d
        assert not _accepts(g, d.encode()), d


def check_accepts_only_valid(g, v, schema, examples=300, ensure_ascii=True):
    """Every document near the schema (hypothesis, _near) that the grammar accepts is valid."""
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_near(schema))
    def run(value):
        doc = json.dumps(value, ensure_ascii=ensure_ascii).encode()
        if _accepts(g, doc):
            assert v.is_valid(value), doc
    run()


def check_refused(compile_, schema, keyword, pointer):
    """compile_(schema) is refused naming `keyword`, at `pointer` or below it."""
    with pytest.raises(CompileError) as ei:
        compile_(schema)
    assert ei.value.keyword == keyword, str(ei.value)
    assert ei.value.pointer.startswith(pointer), str(ei.value)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_combinator_cases_are_exact(name, schema, good, bad):
    check_exact(_compile(schema), _validator(schema), good, bad)


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED,
                         ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_combinator_refusals_name_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        _compile(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer), str(ei.value)


def test_closed_objects_only_narrow():
    """closed_objects=True (the default) accepts a subset of what closed_objects=False does."""
    for name, schema, good, bad in CASES:
        g = cengine.compile_json_schema(schema)
        for d in bad:
            assert not _accepts(g, d.encode()), (name, d)


# --- hypothesis: documents near each schema --------------------------------------------------
def _atoms(schema) -> tuple:
    """Names and values that occur in the schema: material for documents near it."""
    names, values = set(), {0, 1, -1, 2, 3, 5, 9, 10, 1.5, "", "a", "x", None, True}
    stack = [schema]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, y in x.items():
                if k in ("properties", "patternProperties", "dependentRequired",
                         "dependentSchemas"):
                    if isinstance(y, dict):
                        names.update(y)
                if k in ("const", "minimum", "maximum") and not isinstance(y, (dict, list)):
                    values.add(y)
                if k == "enum" and isinstance(y, list):
                    values.update(v for v in y if not isinstance(v, (dict, list)))
                stack.append(y)
        elif isinstance(x, list):
            stack.extend(x)
    names |= {"x-a", "zz", "abcd"}
    return sorted(names), sorted(values, key=repr)


def _near(schema):
    names, values = _atoms(schema)
    leaf = st.sampled_from(values)
    return st.recursive(leaf, lambda kids: st.lists(kids, max_size=3) |
                        st.dictionaries(st.sampled_from(names), kids, max_size=4), max_leaves=8)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_acceptance_never_exceeds_validity(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema, examples=150,
                             ensure_ascii=False)


def _assert_closes(m, prefix: bytes, v) -> None:
    tail = m.completion()
    doc = prefix + tail
    assert v.is_valid(json.loads(doc)), doc
    done = m.copy()
    assert done.accept_bytes(tail) and done.is_accepting(), doc


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_every_prefix_of_a_valid_document_closes_to_a_valid_one(name, schema, good, bad):
    v = _validator(schema)
    g = cengine.compile_json_schema(schema, closed_objects=False, whitespace_budget=None)
    for d in good:
        doc = d.encode()
        m = g.matcher()
        for i in range(len(doc)):
            _assert_closes(m, doc[:i], v)
            assert m.accept_bytes(doc[i:i + 1])


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_random_walks_close_to_valid_documents(name, schema, good, bad):
    v = _validator(schema)
    g = _compile(schema)

    @settings(max_examples=30, deadline=None)
    @given(st.integers(0, 2**32 - 1), st.integers(1, 40))
    def run(seed, steps):
        m = g.matcher()
        prefix = walk_random(m, random.Random(seed), steps)
        _assert_closes(m, prefix, v)
    run()


MORE = [
    # an idle `then` (no `if` beside it) must not pair with another branch's `if`
    ("allof-idle-partners", {"allOf": [{"if": {"type": "string"}}, {"then": {"maxLength": 1}}]},
     ['"abc"', '"a"', "1"], []),
    # oneOf beside anyOf: both stay
    ("oneof-and-anyof", {"anyOf": [{"type": "string"}, {"type": "integer"}],
                         "oneOf": [{"type": "integer"}, {"type": "null"}]}, ["1"], ['"a"', "null"]),
]


@pytest.mark.parametrize("name,schema,good,bad", MORE, ids=[c[0] for c in MORE])
def test_more_combinator_cases(name, schema, good, bad):
    test_combinator_cases_are_exact(name, schema, good, bad)


ENUM_MERGES = [
    # enums of merged parts are intersected, not one of them kept (found by random walks
    # over a oneOf whose narrowed branches merge three `shape` enums)
    ("enum-in-both-parts", {"type": "object", "properties": {"shape": {"enum": ["a", "b", "c"]}},
                            "allOf": [{"properties": {"shape": {"enum": ["b"]}}}]},
     ['{"shape": "b"}'], ['{"shape": "a"}', '{"shape": "c"}']),
    ("const-beside-enum", {"const": "a", "enum": ["b", "c"]}, [], ['"a"', '"b"']),
    ("oneof-shape-discriminator", {
        "type": "object", "required": ["shape"],
        "properties": {"shape": {"enum": ["circle", "rectangle"], "type": "string"},
                       "radius": {"type": "number"}, "width": {"type": "number"}},
        "oneOf": [{"properties": {"radius": {}, "shape": {"enum": ["circle"]}},
                   "required": ["radius"]},
                  {"properties": {"width": {}, "shape": {"enum": ["rectangle"]}},
                   "required": ["width"]}]},
     ['{"shape": "circle", "radius": 1}', '{"shape": "rectangle", "width": 1}'],
     ['{"shape": "rectangle", "radius": 1}', '{"shape": "circle", "width": 1}',
      '{"shape": "circle"}']),
]


@pytest.mark.parametrize("name,schema,good,bad", ENUM_MERGES, ids=[c[0] for c in ENUM_MERGES])
def test_enum_merges(name, schema, good, bad):
    if not good:
        with pytest.raises(CompileError):
            _compile(schema)
        assert not any(_validator(schema).is_valid(json.loads(d)) for d in bad)
        return
    test_combinator_cases_are_exact(name, schema, good, bad)
