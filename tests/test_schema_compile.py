"""Schema compiler: case tables per keyword (accepted / rejected documents), refusals with
keyword and pointer, limits, and the grammar shape other components rely on."""
from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cengine
from cengine import CompileError, LimitError, ir
from cengine.schema import json_grammar as jg
from cengine.grammar import Grammar
from cengine.schema import MAX_UNROLL, add_schema, schema_to_ir
from cengine.schema.json_grammar import MAX_STRING_LENGTH


def accepts(schema, doc, **kw) -> bool:
    g = cengine.compile_json_schema(schema, **kw)
    m = g.matcher()
    data = doc.encode("utf-8") if isinstance(doc, str) else doc
    return m.accept_bytes(data) and m.is_accepting()


def check(schema, good, bad, **kw):
    for d in good:
        assert accepts(schema, d, **kw), d
    for d in bad:
        assert not accepts(schema, d, **kw), d


# --- types -------------------------------------------------------------------------------
TYPE_CASES = [
    ("null", ["null"], ["nul", "false", '"null"', "0", "{}"]),
    ("boolean", ["true", "false"], ["True", "1", "null", '"true"']),
    ("string", ['""', '"a b"', '"\\n\\t\\"\\\\\\/"', '"é😀"', '"\\ud83d\\ude00"', '"\\u00E9"'],
     ['"', "abc", '"\x01"', '"\\x41"', '"\\ud83d"', '"\\ude00x"', b'"\xff"', b'"\xc0\xaf"',
      '"\\ud83d\\u0041"', '"\\u12"', "1"]),
    ("number", ["0", "-0", "12", "-1.5", "1e5", "1E+5", "2.5e-3", "1.0"],
     ["1.", "1e", "01", "+1", ".5", "-", "1.e3", "--1", "0x10", "NaN", "Infinity", '"1"']),
    ("integer", ["0", "-0", "42", "-7"],                        # integers written as integers
     ["1.5", "1e2", "01", "+1", "1.", "-", "true", '"1"', "1.0", "3.000", "12345.0"]),
    ("object", ["{}", '{"a": 1}', '{"a":{"b":[1,2]},"c":null}'], ["[]", "{", '{"a"}', '{a:1}',
                                                                  '{"a":1,}', "null"]),
    ("array", ["[]", "[1, \"a\", [null], {}]"], ["[", "[1,]", "[,1]", "{}", "null"]),
]


@pytest.mark.parametrize("t,good,bad", TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_single_types(t, good, bad):
    check({"type": t}, good, bad)


TYPE_UNIONS = [
    (["string", "null"], ['"x"', "null"], ["1", "[]"]),
    (["integer", "boolean"], ["1", "true"], ["1.5", "null"]),
    (["number", "integer"], ["1.5", "2"], ['"2"']),
    (["object", "array"], ["{}", "[]"], ["null", '""']),
]


@pytest.mark.parametrize("ts,good,bad", TYPE_UNIONS)
def test_type_unions(ts, good, bad):
    check({"type": ts}, good, bad)


def test_true_and_empty_schema_are_any_json():
    for schema in (True, {}, {"description": "anything", "title": "x"}):
        check(schema, ['{"a": [1, {"b": null}]}', "1", '"s"', "[true]"], ["", "{", "tru", "1 2"])


def test_keywords_apply_only_to_their_type():
    # minLength constrains strings; every other type stays valid (spec semantics)
    check({"minLength": 2}, ['"ab"', "1", "null", "[]"], ['"a"'])
    check({"maxItems": 1, "type": ["array", "string"]}, ["[1]", '"abc"'], ["[1,2]"])
    # a refused keyword of an excluded type is irrelevant, so it compiles
    check({"type": "string", "minimum": 3}, ['"a"'], ["5"])


# --- strings -------------------------------------------------------------------------------
LENGTH_CASES = [
    ({"minLength": 2}, ['"ab"', '"abc"', '"é😀"', '"\\n\\t"', '"\\ud83d\\ude00x"'],
     ['""', '"a"', '"😀"', '"\\ud83d\\ude00"', '"\\u0041"']),
    ({"maxLength": 2}, ['""', '"ab"', '"\\u0041\\n"', '"😀😀"', '"\\ud83d\\ude00\\ud83d\\ude00"'],
     ['"abc"', '"\\n\\n\\n"', '"😀😀😀"']),
    ({"minLength": 1, "maxLength": 1}, ['"a"', '"\\""', '"é"'], ['""', '"ab"']),
    ({"minLength": 3, "maxLength": 2}, [], ['""', '"ab"', '"abc"']),
]


@pytest.mark.parametrize("kw,good,bad", LENGTH_CASES)
def test_string_lengths_count_code_points(kw, good, bad):
    schema = {"type": "string", **kw}
    if not good:
        with pytest.raises(CompileError):
            schema_to_ir(schema)
        return
    check(schema, good, bad)


def test_free_strings_share_one_body_rule():
    g = schema_to_ir({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"},
        "c": {"type": "array", "items": {"type": "string"}},
        "d": {"type": "string", "minLength": 1}}})
    body_rules = [n for n in g.rules if "body" in n]
    assert body_rules == [jg.STRING_BODY]
    assert g.rules[jg.WS].whitespace and not g.rules[jg.STRING_BODY].whitespace
    assert all(r.container for n, r in g.rules.items() if n.endswith(("-object", "-array")))


# --- objects -------------------------------------------------------------------------------
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name"]}

OBJECT_CASES = [
    (PERSON, {}, ['{"name":"a"}', '{"name":"a","age":1}', '{"name":"a","tags":[]}',
                  '{ "name" : "a" , "age" : 2 , "tags" : [ "x" ] }'],
     ['{}', '{"age":1}', '{"age":1,"name":"a"}', '{"name":"a","x":1}', '{"name":1}',
      '{"name":"a","name":"b"}', '{"n\\u0061me":"a"}', '{"name":"a",}']),
    (PERSON, {"closed_objects": False},
     ['{"name":"a","x":1}', '{"name":"a","age":1,"x":[1],"y":{}}',
      '{"name":"a","nam":1,"namex":2}'],
     ['{"name":"a","name":"b"}', '{"name":"a","n\\u0061me":"b"}', '{"name":"a","age":"x"}',
      '{"x":1,"name":"a"}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}},
      "additionalProperties": {"type": "string"}},
     {}, ['{"a":1,"b":"x"}', '{"b":"x","c":"y"}', '{}'],
     ['{"b":1}', '{"a":"x"}', '{"\\u0061":"s"}']),
    ({"type": "object", "additionalProperties": False}, {}, ["{}"], ['{"a":1}']),
    ({"type": "object", "properties": {}}, {}, ["{}"], ['{"a":1}']),
    ({"type": "object", "properties": {}}, {"closed_objects": False}, ["{}", '{"a":1}'], []),
    ({"type": "object", "required": ["x", "y"]}, {}, ['{"x":1,"y":[]}', '{"x":1,"y":2,"z":3}'],
     ['{"x":1}', '{"y":1,"x":2}']),
    ({"type": "object", "properties": {"a": False, "b": {}}}, {"closed_objects": False},
     ['{"b":1}', '{"c":1}'], ['{"a":1}', '{"b":1,"a":1}']),
    ({"type": "object", "properties": {"x": {"type": "object", "properties": {"y": {"const": 1}},
                                             "required": ["y"]}}, "required": ["x"]},
     {}, ['{"x":{"y":1}}'], ['{"x":{}}', '{"x":{"y":2}}']),
    ({"type": "object", "properties": {"a\"b": {}, "é/~": {}}}, {},
     ['{"a\\"b":1,"é/~":2}'], ['{"a\\u0022b":1}']),
    # an escaped name character ('"' here, next to '!' in code point order) leaves the trie
    # of the declared names where it is not the next character of one
    ({"type": "object", "properties": {"!": {}, "\"x": {}}}, {"closed_objects": False},
     ['{"!\\"": 1}', '{"\\"": 1}', '{"\\"y": 1}', '{"!": 1, "\\"x": 2}'],
     ['{"!": 1, "!": 2}', '{"\\"x": 1, "\\"x": 2}']),
]


@pytest.mark.parametrize("schema,kw,good,bad", OBJECT_CASES)
def test_objects(schema, kw, good, bad):
    check(schema, good, bad, **kw)


def test_required_property_that_cannot_exist_makes_the_object_impossible():
    with pytest.raises(CompileError):
        schema_to_ir({"type": "object", "properties": {"a": False}, "required": ["a"]})
    with pytest.raises(CompileError):
        schema_to_ir({"type": "object", "properties": {"a": {}}, "required": ["b"]})  # closed


def test_many_optional_properties_stay_linear():
    props = {f"p{i}": {"type": "integer"} for i in range(60)}
    g = Grammar.from_ir(schema_to_ir({"type": "object", "properties": props}))
    assert g.automaton.n_positions < 20_000
    m = g.matcher()
    assert m.accept_bytes(b'{"p7":1,"p30":2,"p59":3}') and m.is_accepting()
    m = g.matcher()
    assert not m.accept_bytes(b'{"p30":1,"p7":2}')


# --- arrays --------------------------------------------------------------------------------
ARRAY_CASES = [
    ({"items": {"type": "integer"}}, ["[]", "[1]", "[1, 2,3]"], ["[1.5]", '["a"]', "[1,]"]),
    ({"items": False}, ["[]"], ["[1]"]),
    ({"minItems": 2}, ["[1,2]", '[1,"a",null]'], ["[]", "[1]"]),
    ({"maxItems": 2}, ["[]", "[1,2]"], ["[1,2,3]"]),
    ({"minItems": 1, "maxItems": 1, "items": {"type": "null"}}, ["[null]"], ["[]", "[null,null]"]),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]},
     ["[]", "[1]", '[1,"a"]', '[1,"a",null,{}]'], ['["a"]', "[1,2]"]),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
     ["[]", "[1]", '[1,"a"]'], ['[1,"a",1]']),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "minItems": 3},
     ["[1,true,false]"], ["[1,true]", "[1,2,true]"]),
    ({"prefixItems": [{}, False]}, ["[]", "[1]"], ["[1,2]"]),
    ({"minItems": 3, "items": False}, [], []),
]


@pytest.mark.parametrize("kw,good,bad", ARRAY_CASES)
def test_arrays(kw, good, bad):
    schema = {"type": "array", **kw}
    if not good:
        with pytest.raises(CompileError):
            schema_to_ir(schema)
        return
    check(schema, good, bad)


def _hex_ids(n: int) -> str:
    return "[" + ",".join(f'"{i:024x}"' for i in range(n)) + "]"


# (items, lo, hi): elements written inline (a pattern string, an enum, a bounded integer)
# counted past the builder's inlined run
LONG_RUN_CASES = [
    ({"type": "string", "pattern": "^[A-Fa-f0-9]{24}$"}, 0, 1000),
    ({"type": "string", "pattern": "^[A-Fa-f0-9]{24}$"}, 40, 45),
    ({"enum": ["000000000000000000000000", "000000000000000000000001"]}, 0, 40),
]


@pytest.mark.parametrize("items,lo,hi", LONG_RUN_CASES)
def test_long_counted_runs_of_inline_elements_are_calls(items, lo, hi):
    # maxItems 1000 of a 24-character pattern was over 400,000 positions (a LimitError);
    # the run is calls of one element rule now, and counted exactly at both ends
    schema = {"type": "array", "items": items, "minItems": lo, "maxItems": hi}
    g = Grammar.from_ir(schema_to_ir(schema))
    assert g.automaton.n_positions < 20_000
    n_ok = 2 if "enum" in items else hi
    for n, ok in ((max(lo - 1, 0), lo == 0), (lo, True), (n_ok, True), (hi + 1, False)):
        doc = _hex_ids(n) if "enum" not in items else \
            "[" + ",".join(['"000000000000000000000001"'] * n) + "]"
        m = g.matcher()
        assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == ok, n
    bad = '["' + "g" * 24 + '"]'
    assert not g.matcher().accept_bytes(bad.encode())


# --- enum / const -------------------------------------------------------------------------
ENUM_CASES = [
    ({"enum": ["a", "b"]}, ['"a"', '"b"'], ['"c"', '"ab"', "a"]),
    ({"enum": [1, "1", None]}, ["1", "1.0", '"1"', "null"], ["2", "true", "1e0"]),
    ({"type": "integer", "enum": [0, 1.0]}, ["0", "1"], ["1.0", "0.0", "2"]),   # as integers
    ({"enum": [0]}, ["0", "-0", "0.0"], ["false", "1"]),
    ({"enum": [False]}, ["false"], ["0", "null"]),
    ({"enum": [1.5, -2.25]}, ["1.5", "1.50", "-2.25"], ["1.51", "2.25"]),
    ({"const": {"a": [1, {"b": None}]}},
     ['{"a":[1,{"b":null}]}', '{ "a" : [ 1 , { "b" : null } ] }'],
     ['{"a":[1,{"b":null},2]}', '{"a":[1]}']),
    ({"const": []}, ["[]", "[ ]"], ["[1]"]),
    ({"const": "é\n\"x"}, ['"é\\n\\"x"'], ['"\\u00e9\\n\\"x"', '"é\n\\"x"']),
    ({"enum": ["a", 1], "type": "string"}, ['"a"'], ["1"]),            # siblings filter values
    ({"enum": ["ab", "abc"], "maxLength": 2}, ['"ab"'], ['"abc"']),
    # string lengths read as jsonschema reads them (code points; other values pass)
    ({"enum": ["a", "ab", "abc", "abcd", "éé", 5, None], "minLength": 2, "maxLength": 3},
     ['"ab"', '"abc"', '"éé"', "5", "null"], ['"a"', '"abcd"']),
    ({"type": ["string", "null"], "enum": ["ab", None, "x", 7], "minLength": 2},
     ['"ab"', "null"], ['"x"', "7"]),
    # draft 4 types 1.0 apart from the integers
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
      "enum": [1.0, 2, "abc"], "maxLength": 2}, ["2"], ["1", '"abc"']),
    # ... beside an identifier and a keyword the draft does not define (no effect)
    ({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"c": {
        "id": "http://x.example/c", "name": "c", "type": "string", "maxLength": 2,
        "enum": ["ab", "abc", 3]}}}, ['{"c":"ab"}'], ['{"c":"abc"}', '{"c":3}']),
    ({"enum": ["ab", "abc"], "maxLength": 2, "$id": "http://x.example/d", "x-y": 1,
      "minimum": 5}, ['"ab"'], ['"abc"']),
    ({"enum": [3, 7], "minimum": 5}, ["7"], ["3"]),                    # any sibling, via filtering
    ({"const": "x", "enum": ["x", "y"]}, ['"x"'], ['"y"']),
]


@pytest.mark.parametrize("schema,good,bad", ENUM_CASES)
def test_enum_and_const(schema, good, bad):
    check(schema, good, bad)


ENUM_BY_LENGTHS = [
    # (schema, read by the lengths alone: no value sent to the validator)
    ({"enum": ["ab", "abc"], "type": "string", "maxLength": 2}, True),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://x.example/",
      "name": "n", "enum": ["ab", "abc"], "maxLength": 2}, True),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "id": "http://x.example/",
      "enum": ["ab", "abc"], "maxLength": 2}, True),            # `id`: unknown in draft 7
    ({"enum": ["ab", "abc"], "maxLength": 2, "pattern": "b$"}, False),
    ({"enum": ["2020-01-01", "2020-01-011", "x"], "maxLength": 10, "format": "date"}, False),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "enum": ["ab", "abc"],
      "maxLength": 2, "const": "ab"}, True),                     # `const`: not in draft 4
    ({"$schema": "http://json-schema.org/draft-06/schema#", "enum": ["ab", "abc"],
      "maxLength": 2, "const": "ab"}, False),
]


@pytest.mark.parametrize("schema,by_lengths", ENUM_BY_LENGTHS)
def test_enum_beside_lengths_needs_no_validator(schema, by_lengths, monkeypatch):
    from cengine.schema.enums import Enums
    calls = []
    real = Enums._spec_valid

    def spy(self, value, part):
        calls.append(value)
        return real(self, value, part)
    monkeypatch.setattr(Enums, "_spec_valid", spy)
    cls = jsonschema.validators.validator_for(schema)
    oracle = cls(schema, format_checker=cls.FORMAT_CHECKER)
    want = [json.dumps(v) for v in schema["enum"] if oracle.is_valid(v)]
    check(schema, want, [json.dumps(v) for v in schema["enum"] if json.dumps(v) not in want])
    assert (not calls) == by_lengths


def test_empty_enum_accepts_nothing():
    with pytest.raises(CompileError):
        schema_to_ir({"enum": []})


# --- $ref ---------------------------------------------------------------------------------
TREE = {"$defs": {"node": {"type": "object", "properties": {
    "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["value"]}}, "$ref": "#/$defs/node"}

REF_CASES = [
    (TREE, ['{"value":1}', '{"value":1,"children":[{"value":2,"children":[{"value":3}]}]}'],
     ['{"value":1,"children":[{}]}', '{"children":[]}']),
    ({"definitions": {"s": {"type": "string"}}, "type": "array",
      "items": {"$ref": "#/definitions/s"}},
     ['["a"]'], ["[1]"]),
    ({"type": "object", "properties": {"self": {"$ref": "#"}, "n": {"type": "null"}}},
     ['{}', '{"self":{"self":{"n":null}}}'], ['{"self":1}']),
    ({"$defs": {"a/b": {"type": "integer"}, "c%d": {"type": "null"}, "t~": {"type": "boolean"}},
      "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c%25d"},
                      {"$ref": "#/$defs/t~0"}]},
     ["[1,null,true]"], ['["x"]', "[1,1]", "[1,null,1]"]),
    ({"$defs": {"l": {"anyOf": [{"type": "null"},
                                {"type": "array", "prefixItems": [{"$ref": "#/$defs/l"}],
                                 "items": False, "minItems": 1}]}},
      "$ref": "#/$defs/l"}, ["null", "[null]", "[[[null]]]"], ["[]", "[[]]", "[null,null]"]),
    ({"$defs": {"int": {"type": "integer"}}, "$ref": "#/$defs/int", "description": "annotation"},
     ["1"], ["1.5"]),
    ({"$defs": {"o": {"type": "object"}}, "$ref": "#/$defs/o", "required": ["a"]},
     ['{"a":1}'], ["{}"]),                                                # merged siblings
]


@pytest.mark.parametrize("schema,good,bad", REF_CASES)
def test_refs(schema, good, bad):
    check(schema, good, bad)


def test_required_endless_recursion_is_refused():
    with pytest.raises(CompileError):
        schema_to_ir({"type": "object", "properties": {"next": {"$ref": "#"}},
                      "required": ["next"]})
    with pytest.raises(CompileError):
        schema_to_ir({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                      "$ref": "#/$defs/a"})


# --- anyOf / boolean schemas ----------------------------------------------------------------
ANYOF_CASES = [
    ({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer"}]}, ['"a"', "5"],
     ['"ab"', "1.5"]),
    ({"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     ['{"a":1}', '{"b":"x"}'], ['{"a":"x"}', "{}", '{"a":1,"b":"x"}']),
    ({"type": "string", "anyOf": [{"maxLength": 1}, {"minLength": 3}]}, ['"a"', '"abc"'],
     ['"ab"', "1"]),                                                          # siblings merged
    ({"anyOf": [True, False]}, ["1", "{}"], []),
    ({"type": "object", "properties": {"a": False}, "anyOf": [{"required": ["b"]}]},
     [], []),                                                               # impossible: closed
]


@pytest.mark.parametrize("schema,good,bad", ANYOF_CASES)
def test_any_of(schema, good, bad):
    if not good:
        with pytest.raises(CompileError):
            schema_to_ir(schema)
        return
    check(schema, good, bad)


# --- refusals -------------------------------------------------------------------------------
REFUSED = [
    ({"type": "string", "pattern": "a(?=b)"}, "pattern", "/pattern"),
    ({"type": "string", "format": 3}, "format", "/format"),
    ({"properties": {"age": {"type": "integer", "minimum": "0"}}}, "minimum",
     "/properties/age/minimum"),
    ({"maximum": None}, "maximum", "/maximum"),
    ({"exclusiveMinimum": True}, "exclusiveMinimum", "/exclusiveMinimum"),
    ({"type": "number", "multipleOf": 0}, "multipleOf", "/multipleOf"),
    ({"allOf": [{"type": "array", "contains": {"const": 1}}, {"contains": {"const": 2}}]},
     "allOf", "/allOf"),                                  # two witnesses: not one schema
    ({"oneOf": [{"type": "integer"}, {"multipleOf": 2}]}, "oneOf", "/oneOf"),
    ({"not": {"type": "integer", "multipleOf": 2}}, "not", "/not"),
    ({"if": {"multipleOf": 3}, "then": {"multipleOf": 2}}, "if", "/if"),
    ({"type": "array", "uniqueItems": True}, "uniqueItems", "/uniqueItems"),
    ({"type": "array", "prefixItems": [{}], "contains": {"type": "null"}}, "contains",
     "/contains"),
    ({"type": "object", "patternProperties": {"a": {"type": "integer"}, "b": {"type": "null"},
                                              "c": {"type": "string"}, "d": {"minimum": 1},
                                              "e": {}}, "additionalProperties": {"type": "array"}},
     "patternProperties", "/patternProperties"),   # 5 schemas a name may meet together
    ({"type": "object", "properties": {"ab": {}}, "propertyNames": {"maxLength": 3},
      "additionalProperties": True}, "propertyNames", "/propertyNames"),  # extras minus "ab"
    ({"dependentRequired": {"a": 3}}, "dependentRequired", "/dependentRequired"),
    ({"minProperties": 2}, "minProperties", "/minProperties"),    # a repeated key counts once
    ({"unevaluatedProperties": False}, "unevaluatedProperties", "/unevaluatedProperties"),
    ({"type": "array", "unevaluatedItems": False}, "unevaluatedItems", "/unevaluatedItems"),
    ({"$dynamicRef": "#x"}, "$dynamicRef", "/$dynamicRef"),            # no such anchor
    ({"$defs": {"a": {"$dynamicAnchor": "x"}}, "$id": "http://e.org/a",
      "properties": {"b": {"$id": "b", "$dynamicRef": "#x"}}}, "$dynamicRef",
     "/properties/b/$dynamicRef"),                          # an embedded resource's scope
    ({"$ref": "http://example.com/s.json"}, "$ref", "/$ref"),
    ({"$ref": "#anchor"}, "$ref", "/$ref"),                              # no such anchor
    ({"$ref": "#/$defs/missing"}, "$ref", "/$ref"),
    ({"items": {"$ref": "other.json#/x"}}, "$ref", "/items/$ref"),
    ({"type": "array", "items": [{"type": "string"}]}, "items", "/items"),
    ({"type": "strin"}, "type", "/type"),
    ({"minLength": -1}, "minLength", "/minLength"),
    ({"properties": {"a~b/c": {"pattern": "(x)\\1"}}}, "pattern", "/properties/a~0b~1c/pattern"),
    ({"anyOf": [{"type": "integer"}, {"type": "string", "format": ["email"]}]}, "format",
     "/anyOf/1/format"),
    ({"type": "array", "anyOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}],
      "contains": {"const": 3}}, "anyOf", "/anyOf"),                      # cannot merge exactly
]


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED, ids=[r[1] for r in REFUSED])
def test_refused_keywords_name_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        cengine.compile_json_schema(schema)
    assert ei.value.keyword == keyword
    assert ei.value.pointer == pointer
    assert keyword in str(ei.value)
    assert isinstance(ei.value, ValueError)


NOOPS = [{"uniqueItems": False}, {"minProperties": 0}, {"then": {"minLength": 3}},
         {"maxContains": 1}, {"if": {"type": "string"}}, {"propertyNames": True},
         {"title": "t", "description": "d", "examples": [1], "default": 2, "$comment": "c",
          "deprecated": True, "readOnly": True, "writeOnly": False,
          "contentMediaType": "text/plain", "x-vendor": {"minimum": 3}}]


@pytest.mark.parametrize("schema", NOOPS)
def test_no_op_keywords_and_annotations_compile(schema):
    check(schema, ['"abc"', "1", "[]"], ["{"])


# --- limits ---------------------------------------------------------------------------------
def test_whitespace_budget_counts_bytes():
    schema = {"type": "array", "items": {"type": "integer"}}
    doc = "[" + " " * 30 + "1," + "\n" * 34 + "2]"
    assert accepts(schema, doc)                                # exactly 64 bytes
    assert not accepts(schema, doc.replace("1,", "1, "))        # 65
    assert accepts(schema, doc.replace("1,", "1, "), whitespace_budget=None)
    assert not accepts(schema, "[1, 2]", whitespace_budget=0)
    assert accepts(schema, "[1,2]", whitespace_budget=0)


def test_max_depth_counts_containers():
    assert accepts(True, "[[[1]]]", max_depth=3)
    assert not accepts(True, "[[[[1]]]]", max_depth=3)
    assert accepts(TREE, '{"value":1,"children":[{"value":2}]}', max_depth=3)
    assert not accepts(TREE, '{"value":1,"children":[{"value":2,"children":[]}]}', max_depth=3)
    g = cengine.compile_json_schema(True, max_depth=2)
    m = g.matcher()
    assert m.accept_bytes(b'{"a":[') and not m.accept_bytes(b"[") and not m.accept_bytes(b"{")
    assert m.completion() == b"]}"


def test_unroll_limit_is_a_limit_error():
    with pytest.raises(LimitError) as ei:
        schema_to_ir({"type": "string", "maxLength": MAX_STRING_LENGTH + 1})
    assert ei.value.keyword == "maxLength" and ei.value.pointer == "/maxLength"
    with pytest.raises(LimitError):
        schema_to_ir({"type": "array", "minItems": MAX_UNROLL + 1})
    check({"type": "string", "maxLength": 300}, ['"' + "x" * 300 + '"'], ['"' + "x" * 301 + '"'])


# --- composition ------------------------------------------------------------------------------
def test_add_schema_composes_into_another_grammar():
    g = ir.GrammarIR()
    call = add_schema(g, {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}, prefix="weather-")
    other = add_schema(g, {"enum": ["c", "f"]}, prefix="unit-")
    g.add("root", ir.seq(ir.lit("<tool_call>"), call, ir.lit("|"), other, ir.lit("</tool_call>")))
    g.root = "root"
    assert any(n.startswith("weather-") for n in g.rules)
    gram = Grammar.from_ir(g)
    m = gram.matcher()
    assert m.accept_bytes(b'<tool_call>{"city": "Oslo"}|"c"</tool_call>') and m.is_accepting()
    m = gram.matcher()
    assert m.accept_bytes(b'<tool_call>{"ci')
    assert m.completion() == b'ty":""}|"c"</tool_call>'
    assert not gram.matcher().accept_bytes(b'<tool_call>{"town"')


def test_schema_as_json_text_and_errors():
    assert accepts('{"type": "integer"}', "12")
    with pytest.raises(CompileError):
        cengine.compile_json_schema("{not json")
    with pytest.raises(CompileError):
        cengine.compile_json_schema({"properties": {"a": 3}})


def test_completion_of_tool_call_shape():
    schema = {"type": "object", "properties": {
        "name": {"const": "get_weather"},
        "arguments": {"type": "object", "properties": {"city": {"type": "string", "minLength": 2},
                                                         "days": {"type": "integer"}},
                      "required": ["city", "days"]}}, "required": ["name", "arguments"]}
    m = cengine.compile_json_schema(schema).matcher()
    assert m.accept_bytes(b'{"name": "get_weather", "arguments": {"city": "O')
    doc = b'{"name": "get_weather", "arguments": {"city": "O' + m.completion()
    value = json.loads(doc)
    assert value["arguments"]["city"].startswith("O") and len(value["arguments"]["city"]) == 2
    assert isinstance(value["arguments"]["days"], int)


# Open objects: a key that is not declared may be anything but a declared name, in whatever
# spelling; keys still on the way to a declared name write its characters as themselves
# (json.dumps with ensure_ascii=False), a documented narrowing.
OPEN_NAMES = ["name", "nam", "n\u00e4me", "na\"me", "tab\there", "\U0001F600x"]


def _open_object_schema():
    return {"type": "object", "properties": {n: {"type": "integer"} for n in OPEN_NAMES},
            "additionalProperties": {"type": "string"}}


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(OPEN_NAMES),
                 st.text(alphabet="nameä\"\t\U0001F600x\\/é", max_size=6)),
       st.booleans(), st.sampled_from(['1', '"s"']))
def test_open_object_keys_sound_and_canonical_complete(key, ascii_only, value):
    g = cengine.compile_json_schema(_open_object_schema(), closed_objects=False)
    doc = "{" + json.dumps(key, ensure_ascii=ascii_only) + ": " + value + "}"
    valid = jsonschema.Draft202012Validator(_open_object_schema()).is_valid(json.loads(doc))
    m = g.matcher()
    accepted = m.accept_bytes(doc.encode()) and m.is_accepting()
    if accepted:
        assert valid, doc                                # never a wrong document
    if not ascii_only:
        assert accepted == valid, doc                    # the canonical spelling: exactly
    elif valid and all(ord(c) >= 0x80 and c not in "".join(OPEN_NAMES) for c in key):
        assert accepted, doc                             # escapes of other characters: free


def test_cache_keys_on_the_schema_as_written():
    """Declared property order is part of the grammar: the same schema with its properties
    in another order is another grammar, not a cache hit."""
    ab = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    ba = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}}
    g1 = cengine.compile_json_schema(ab)
    g2 = cengine.compile_json_schema(ba)
    assert g1 is not g2
    assert _accepts_grammar(g1, '{"a": 1, "b": 2}')
    assert _accepts_grammar(g2, '{"b": 2, "a": 1}')
    assert cengine.compile_json_schema(dict(ba)) is g2       # equal text: a hit


def _accepts_grammar(g, doc: str) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode()) and m.is_accepting()
