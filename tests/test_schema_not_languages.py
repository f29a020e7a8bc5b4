"""`not` of a string language (issue 30, item 4): `not: {pattern}`, `not: {format}` and
`not: {enum}` of strings beside string keywords are complements of regular languages, built
exactly as products of DFAs over code points (strings.excluding_string): the string is in
the format and the pattern, in none of the negated languages, none of the excluded values,
and of the counted length. jsonschema is the oracle (format asserted), both ways: every
string hypothesis draws from the patterns' alphabets is accepted exactly when it is valid,
written with and without escapes."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cengine import CompileError
from test_schema_combinators import (_compile, _validator, check_accepts_only_valid,
                                      check_exact, check_refused)

# the corpus's shapes first: Github_ultra---o65417 (a name that is not only punctuation),
# Github_medium---o10310 (a plugin name beside a pattern it must not match), o24621 (a
# pattern and lengths beside reserved names)
CASES = [
    ("not-pattern", {"type": "string", "not": {"pattern": "^a"}},
     ['"b"', '""', '"ba"', '"Ab"'], ['"a"', '"abc"', '"\\u0061b"']),
    ("min-length-not-pattern", {"type": "string", "minLength": 1,
                                "not": {"pattern": "^[\\.\\,\\*\\\\\\-\\s\\{\\}\\(\\)]+$"}},
     ['"a"', '"-a-"', '"\\u00e9"', '"{x}"'], ['""', '"-"', '"..."', '"( )"', '"\\\\"', '"\\t"']),
    ("pattern-not-pattern", {"type": "string",
                             "pattern": "^ghlint-plugin-(?:[A-Za-z0-9]+[-]?)+[A-Za-z0-9]$",
                             "not": {"pattern": ".{14,}(?:ghlint|plugin)"}},
     ['"ghlint-plugin-x1"', '"ghlint-plugin-foo-bar"'],
     ['"ghlint-plugin-plugin"', '"ghlint-plugin-a-ghlint"', '"other"', '"ghlint-plugin-"']),
    ("pattern-lengths-not-enum", {"type": "string", "pattern": "^[a-z]+[a-z0-9-]*$",
                                  "minLength": 2, "maxLength": 12,
                                  "not": {"enum": ["test", "source", "include"]}},
     ['"tests"', '"te"', '"sourc"', '"a-b"', '"include1"'],
     ['"test"', '"source"', '"include"', '"t"', '"Test"', '"abcdefghijklm"', '"1a"']),
    ("format-not-enum", {"type": "string", "format": "ipv4", "not": {"const": "0.0.0.0"}},
     ['"1.2.3.4"', '"0.0.0.1"'], ['"0.0.0.0"', '"1.2.3"', '"a"']),
    ("not-format", {"type": "string", "not": {"format": "ipv4"}},
     ['"1.2.3"', '"localhost"', '""', '"1.2.3.4.5"'], ['"1.2.3.4"', '"255.0.0.1"']),
    # without `type`: every document that is no string satisfies `pattern`, so fails its not
    ("not-pattern-any-type", {"not": {"pattern": "^a"}},
     ['"b"', '""'], ['"a"', "1", "null", "[]", "{}"]),
    # two negations beside each other (merged lists), and a negation of a negation
    ("two-not-patterns", {"type": "string", "allOf": [{"not": {"pattern": "x"}},
                                                      {"not": {"pattern": "y"}}]},
     ['"abc"', '""'], ['"x"', '"ay"', '"xy"']),
    ("not-not-pattern", {"type": "string", "not": {"not": {"pattern": "^a"}}},
     ['"a"', '"ab"'], ['"b"', '""']),
    ("not-anyof-patterns", {"type": "string", "not": {"anyOf": [{"pattern": "^a"},
                                                                 {"pattern": "z$"}]}},
     ['"b"', '"za"', '""'], ['"a"', '"bz"', '"az"']),
    # a oneOf whose branches overlap, each narrowed by the other's negation (a pattern)
    ("oneof-overlapping-patterns", {"type": "string", "oneOf": [{"pattern": "^a"},
                                                                 {"pattern": "b$"}]},
     ['"a"', '"b"', '"ax"', '"xb"'], ['"ab"', '"x"', '""']),
    ("if-pattern", {"type": "string", "if": {"pattern": "^[0-9]"}, "then": {"maxLength": 3},
                    "else": {"minLength": 2}},
     ['"123"', '"ab"', '"1"'], ['"1234"', '"a"', '""']),
    # refused before this (the refusal tables' examples until then)
    ("oneof-two-patterns", {"oneOf": [{"type": "string", "pattern": "a"},
                                      {"type": "string", "pattern": "b"}]},
     ['"a"', '"b"', '"xa"'], ['"ab"', '"x"', "1"]),
    ("oneof-format-or-length", {"type": "string", "oneOf": [{"format": "ipv4"},
                                                            {"minLength": 3}]},
     ['"abc"', '"xyz"'], ['"1.2.3.4"', '"ab"']),
    # a value that is no string satisfies `pattern`: it fails the not
    ("not-pattern-in-property", {"type": "object", "properties": {"a": {"not": {"pattern": "x"}}}},
     ['{"a": "y"}', "{}"], ['{"a": "x"}', '{"a": "yx"}', '{"a": 1}']),
    # an object satisfies the `if`: it needs `c`; a string either way satisfies `then`
    ("if-pattern-then-required", {"if": {"pattern": "x"}, "then": {"required": ["c"]}},
     ['"y"', '"x"', '{"c": 1}', "1"], ["{}", '{"d": 1}']),
    ("two-ifs-on-patterns", {"allOf": [{"if": {"pattern": "^a"}, "then": {"minLength": 2}},
                                       {"if": {"pattern": "^b"}, "then": {"minLength": 3}}]},
     ['"ab"', '"bcd"', '"c"', '""', "1"], ['"a"', '"b"', '"bc"']),
    ("oneof-string-or-pattern", {"oneOf": [{"type": "string"}, {"pattern": "a"}]},
     ['"b"', "1", "null"], ['"a"', '"ba"']),
    ("not-string-and-pattern", {"not": {"type": "string", "pattern": "^a"}},
     ['"b"', "1", "[]"], ['"a"', '"ab"']),
    # two patterns merged (allOf): the product of both languages
    ("all-of-two-patterns", {"allOf": [{"pattern": "a"}, {"pattern": "b"}]},
     ['"ab"', '"ba"', "1"], ['"a"', '"b"', '""']),
    ("all-of-patterns-format-lengths", {"type": "string", "format": "ipv4", "maxLength": 9,
                                        "allOf": [{"pattern": "^1"}, {"pattern": "9$"}]},
     ['"1.2.3.9"', '"10.0.0.9"'], ['"1.2.3.4"', '"2.2.3.9"', '"100.200.3.9"']),
    ("not-of-two-patterns", {"type": "string", "not": {"allOf": [{"pattern": "a"},
                                                                 {"pattern": "b"}]}},
     ['"a"', '"b"', '""'], ['"ab"', '"bxa"']),
]

REFUSED = [
    # a pattern the regex front end refuses, inside the not: named as a pattern
    ({"type": "string", "not": {"pattern": "(?<=a)b"}}, "pattern", "/not"),
]


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_not_languages_exact(name, schema, good, bad):
    check_exact(_compile(schema), _validator(schema), good, bad)


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_not_languages_accept_only_valid(name, schema, good, bad):
    check_accepts_only_valid(_compile(schema), _validator(schema), schema, examples=150)


_ALPHABET = st.sampled_from(list("abxyz019.-, {}()*\\\"\té") + ["ghlint-", "plugin-", "test",
                                                                 "0.", "1.2.3.4", "\u2028"])


@pytest.mark.parametrize("name,schema,good,bad", CASES, ids=[c[0] for c in CASES])
def test_not_languages_both_ways(name, schema, good, bad):
    """Strings over the cases' alphabets: accepted exactly when valid."""
    g, v = _compile(schema), _validator(schema)

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(_ALPHABET, max_size=8).map("".join), st.booleans())
    def run(s, ascii_):
        doc = json.dumps(s, ensure_ascii=ascii_).encode()
        m = g.matcher()
        assert (m.accept_bytes(doc) and m.is_accepting()) == v.is_valid(s), doc
    run()


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED,
                         ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_not_languages_refused(schema, keyword, pointer):
    check_refused(_compile, schema, keyword, pointer)


def test_not_languages_past_the_product_bound_is_a_limit():
    """A product past MAX_SEARCH_STATES is refused naming `not`, not built."""
    from cengine.schema import searches
    schema = {"type": "string", "pattern": "^[a-z]{0,60}$",
              "not": {"pattern": "a.{12}b"}}
    old = searches.MAX_SEARCH_STATES
    searches.MAX_SEARCH_STATES = 50
    try:
        with pytest.raises(CompileError) as ei:
            _compile(schema)
        assert ei.value.keyword == "not", str(ei.value)
    finally:
        searches.MAX_SEARCH_STATES = old


def test_not_languages_past_max_excluding_states_is_refused():
    """A oneOf of five overlapping searches (Github_easy---o65510's `scopes`): each branch
    minus the other four is a 960-state product, past MAX_EXCLUDING_STATES: refused naming
    `not` at the string, before the product is finished."""
    from cengine.schema import strings
    schema = {"type": "string", "oneOf": [{"pattern": w} for w in
                                          ("customer", "maker", "operator", "admin", "designer")]}
    with pytest.raises(CompileError) as ei:
        _compile(schema)
    assert ei.value.keyword == "not" and "MAX_EXCLUDING_STATES" in str(ei.value)
    # two of them are well within it
    check_exact(_compile({"type": "string", "oneOf": [{"pattern": "customer"},
                                                      {"pattern": "maker"}]}),
                _validator({"type": "string", "oneOf": [{"pattern": "customer"},
                                                        {"pattern": "maker"}]}),
                ['"customer"', '"a maker"'], ['"customer maker"', '"x"'])
    assert strings.MAX_EXCLUDING_STATES == 256
