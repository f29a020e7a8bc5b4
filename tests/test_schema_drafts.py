"""Schemas of every draft, each read through its own `$schema` (cengine/schema/drafts.py).

* JSON-Schema-Test-Suite for drafts 04, 06, 07 and 2019-09 (the root gets the draft's
  `$schema`, which the suite's files leave out): a group that compiles is exact (every
  invalid instance rejected in every spelling we try, every valid one accepted in our key
  order, the same checks as tests/test_schema_suite.py); a group that does not compile names
  a keyword its schema uses.
* case tables: draft-04 `id` and boolean exclusive bounds, `$ref` siblings ignored before
  2019-09, array-form `items` with `additionalItems`, `dependencies` in both forms,
  `$recursiveRef`, and keywords a draft does not define being annotations that the grammar
  reports in `Grammar.ignored_keywords`.
* the keyword tables agree with jsonschema's validators for each draft.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

import cengine
import material
from cengine import CompileError
from cengine.schema import drafts
from cengine.schema.drafts import IgnoredKeyword
from test_schema_suite import _check_group, _check_refusal

URIS = {
    "draft4": "http://json-schema.org/draft-04/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
}

# (draft, file, group) -> why the group is refused although it uses only enforced keywords
_REMOTE = ("remote or relative-URI $ref, or an anchor of an embedded resource: only the "
           "document's root resource is read")


def _groups():
    for suite, uri in URIS.items():
        for stem, groups in material.json_schema_test_suite(suite).items():
            for grp in groups:
                yield pytest.param(suite, uri, stem, grp,
                                   id=f"{suite}/{stem}: {grp['description']}")


@pytest.mark.parametrize("suite,uri,stem,grp", list(_groups()))
def test_suite_groups_are_exact_or_refused_naming_a_keyword(suite, uri, stem, grp):
    schema = grp["schema"]
    if isinstance(schema, dict) and "$schema" not in schema:
        schema = {"$schema": uri, **schema}
    try:
        _check_group(stem, {**grp, "schema": schema})
    except CompileError as e:
        _check_refusal(e, schema)


def test_most_older_draft_groups_compile():
    total = compiled = 0
    for suite, uri in URIS.items():
        for stem, groups in material.json_schema_test_suite(suite).items():
            for grp in groups:
                s = grp["schema"]
                if isinstance(s, dict) and "$schema" not in s:
                    s = {"$schema": uri, **s}
                total += 1
                try:
                    cengine.compile_json_schema(s, closed_objects=False)
                    compiled += 1
                except CompileError:
                    pass
    assert compiled / total >= 0.65, (compiled, total)


# --- case tables ----------------------------------------------------------------------------
D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"

CASES = [
    # draft-04: boolean exclusive bounds change minimum/maximum
    ({"$schema": D4, "type": "number", "minimum": 3, "exclusiveMinimum": True},
     ["3.5", "4"], ["3", "2"]),
    ({"$schema": D4, "type": "integer", "maximum": 3, "exclusiveMaximum": True}, ["2"], ["3"]),
    ({"$schema": D4, "type": "integer", "maximum": 3, "exclusiveMaximum": False}, ["3"], ["4"]),
    # draft-04: `id` is its $id (a root id changes nothing here); `$id`, `const` unknown
    ({"$schema": D4, "id": "http://x.org/s.json", "type": "integer"}, ["1"], ['"a"']),
    ({"$schema": D4, "properties": {"a": {"const": 1}}}, ['{"a": 2}', '{"a": 1}'], ['{"a"}']),
    # up to draft-07 a $ref's siblings are ignored
    ({"$schema": D7, "definitions": {"s": {"type": "string"}}, "properties": {
        "a": {"$ref": "#/definitions/s", "maxLength": 1}}}, ['{"a": "long"}'], ['{"a": 1}']),
    # ... and apply from 2019-09 on
    ({"$schema": D2019, "$defs": {"s": {"type": "string"}}, "properties": {
        "a": {"$ref": "#/$defs/s", "maxLength": 1}}}, ['{"a": "l"}'], ['{"a": "long"}',
                                                                       '{"a": 1}']),
    # array-form items and additionalItems
    ({"$schema": D4, "type": "array", "items": [{"type": "integer"}, {"type": "string"}],
      "additionalItems": False}, ["[1]", '[1, "a"]'], ['[1, "a", 2]', '["a"]']),
    ({"$schema": D7, "type": "array", "items": [{"type": "integer"}],
      "additionalItems": {"type": "null"}}, ["[1, null, null]"], ["[1, 2]"]),
    ({"$schema": D7, "type": "array", "items": {"type": "integer"}, "additionalItems": False},
     ["[1, 2, 3]"], ['["a"]']),                                   # additionalItems inert here
    ({"$schema": D2020, "type": "array", "additionalItems": False}, ["[1, 2]"], ["{}"]),
    # dependencies: array form and schema form
    ({"$schema": D6, "type": "object", "properties": {"a": {}, "b": {}},
      "dependencies": {"a": ["b"]}}, ['{"b": 1}', '{"a": 1, "b": 2}', "{}"], ['{"a": 1}']),
    ({"$schema": D7, "type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
      "dependencies": {"a": {"required": ["b"], "properties": {"b": {"minimum": 5}}}}},
     ['{"b": 1}', '{"a": 1, "b": 5}'], ['{"a": 1}', '{"a": 1, "b": 4}']),
    ({"$schema": D2020, "type": "object", "dependencies": {"a": ["b"]}}, ['{"a": 1}'], ["[]"]),
    # 2019-09 $recursiveRef without embedded resources is a $ref to the root
    ({"$schema": D2019, "$recursiveAnchor": True, "type": "object", "properties": {
        "kid": {"$recursiveRef": "#"}, "n": {"type": "integer"}}},
     ['{"kid": {"kid": {"n": 1}}}'], ['{"kid": {"n": "x"}}']),
    # keywords no draft defines are annotations
    ({"$schema": D4, "type": "string", "_format": "uri", "readonly": True, "javaType": "X"},
     ['"a"'], ["1"]),
]


def _accepts(g, doc: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()


@pytest.mark.parametrize("schema,good,bad", CASES, ids=[json.dumps(c[0])[:90] for c in CASES])
def test_draft_cases(schema, good, bad):
    g = cengine.compile_json_schema(schema, closed_objects=False)
    v = jsonschema.validators.validator_for(schema)(schema)
    for d in good:
        assert v.is_valid(json.loads(d)), d         # the table agrees with the oracle
        assert _accepts(g, d), d
    for d in bad:
        try:
            value = json.loads(d)
        except ValueError:
            value = None
        else:
            assert not v.is_valid(value), d
        assert not _accepts(g, d), d


REFUSED = [
    ({"$schema": D4, "type": "integer", "minimum": "3", "exclusiveMinimum": True}, "minimum",
     "/minimum"),
    ({"$schema": D2020, "type": "array", "items": [{"type": "integer"}]}, "items", "/items"),
    ({"$schema": D2019, "properties": {"a": {"items": {"$recursiveRef": "#/$defs/x"}}},
      "$defs": {"x": {}}}, "$recursiveRef", "/properties/a/items/$recursiveRef"),
    ({"$schema": D4, "properties": {"a": {"id": "http://x/a.json", "items": {"$ref": "#/b"}}},
      "b": {}}, "id", "/properties/a/id"),
]


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED, ids=[r[1] for r in REFUSED])
def test_draft_refusals_name_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)


def test_ignored_keywords_are_reported_with_pointers():
    schema = {"$schema": D4, "type": "object", "_format": 1, "properties": {
        "a": {"type": "string", "const": "x", "readonly": True},
        "b": {"$ref": "#/definitions/c", "maxLength": 3}},
        "definitions": {"c": {"type": "string", "x-java": "String"}}}
    g = cengine.compile_json_schema(schema)
    assert set(g.ignored_keywords) == {
        IgnoredKeyword("_format", "/_format"),
        IgnoredKeyword("const", "/properties/a/const"),
        IgnoredKeyword("readonly", "/properties/a/readonly"),
        IgnoredKeyword("maxLength", "/properties/b/maxLength", "beside $ref"),
        IgnoredKeyword("x-java", "/definitions/c/x-java")}
    assert len(g.ignored_keywords) == len(set(g.ignored_keywords))
    assert cengine.compile_json_schema({"type": "string", "title": "t"}).ignored_keywords == ()
    assert cengine.compile_gbnf('root ::= "a"').ignored_keywords == ()


def test_ignored_keywords_of_a_shared_object_name_its_first_place():
    # one object standing in several places (a document built in Python): its ignored
    # keywords name the first place in document order, whichever place is read first
    shared = {"type": "string", "_x": 1}
    schema = {"$schema": D4, "type": "object", "properties": {
        "a": {"$ref": "#/definitions/late"}, "b": shared, "c": {"items": shared}},
        "definitions": {"late": shared}}
    g = cengine.compile_json_schema(schema)
    assert g.ignored_keywords == (IgnoredKeyword("_x", "/properties/b/_x"),)


@pytest.mark.parametrize("uri,draft", [
    (D4, drafts.DRAFT4), ("http://json-schema.org/draft-04/schema", drafts.DRAFT4),
    (D6, drafts.DRAFT6), (D7, drafts.DRAFT7), ("https://json-schema.org/draft-07/schema#",
                                               drafts.DRAFT7),
    (D2019, drafts.DRAFT2019), (D2020, drafts.DRAFT2020), ("https://example.com/mine.json",
                                                           drafts.DRAFT2020),
    (None, drafts.DRAFT2020)])
def test_draft_of_reads_schema_uri(uri, draft):
    assert drafts.draft_of({} if uri is None else {"$schema": uri}) == draft


# keywords jsonschema reads inside another keyword's validator, not as their own
_READ_BY_PARTNER = {"exclusiveMinimum", "exclusiveMaximum", "additionalItems", "then", "else",
                    "minContains", "maxContains", "$recursiveAnchor", "$dynamicAnchor"}


@pytest.mark.parametrize("draft,cls", [
    (drafts.DRAFT4, jsonschema.Draft4Validator), (drafts.DRAFT6, jsonschema.Draft6Validator),
    (drafts.DRAFT7, jsonschema.Draft7Validator), (drafts.DRAFT2019,
                                                  jsonschema.Draft201909Validator),
    (drafts.DRAFT2020, jsonschema.Draft202012Validator)])
def test_keyword_tables_match_jsonschema(draft, cls):
    ours = drafts.KEYWORDS[draft]
    validating = ours - drafts.ALWAYS_ANNOTATIONS - {"id", "$id", "$schema", "format"}
    theirs = set(cls.VALIDATORS) - {"format"}
    assert theirs <= ours, theirs - ours
    assert validating - theirs <= _READ_BY_PARTNER, validating - theirs - _READ_BY_PARTNER
