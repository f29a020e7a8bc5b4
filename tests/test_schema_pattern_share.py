"""A patternProperties pattern is parsed once per compile, for both of its uses: matching the
declared names (pattern_names._pattern_matches: its NFA walked in the key space, its byte
grammar past the key NFA bound) and the extra keys' language (objects.Objects._pattern_language,
strings.pattern_expr). A refused pattern keeps each use's own error, and the process's
pattern grammars stay bounded. The walk answers as the pattern's grammar does."""
import itertools

import pytest

from cengine import regex
from cengine.errors import CompileError
from cengine.schema import pattern_names, schema_to_ir
from cengine.schema import searches

_fresh = itertools.count()

OPTS = dict(closed_objects=False, whitespace_budget=None, property_order="any")


def _pattern() -> str:
    # a pattern no other test compiles, so the process's grammar cache misses
    return f"^x{next(_fresh)}q[a-c]+$"


def _count_parses(monkeypatch, pattern: str) -> list:
    calls = []
    real = regex.regex_to_expr

    def counting(p, *args, **kw):
        if p == pattern:
            calls.append(p)
        return real(p, *args, **kw)

    monkeypatch.setattr(regex, "regex_to_expr", counting)
    monkeypatch.setattr(searches, "regex_to_expr", counting)
    return calls


def test_one_parse_for_names_and_keys(monkeypatch):
    p = _pattern()
    calls = _count_parses(monkeypatch, p)
    # the declared names are matched against the pattern (its grammar) and the extra keys
    # are split by it (its language): both need the parse
    name = p[1:p.index("[")] + "ab"         # matches the pattern
    schema = {"type": "object",
              "properties": {"aa": {"type": "string"}, name: {"type": "integer"}},
              "patternProperties": {p: {"type": "integer"}},
              "additionalProperties": {"type": "boolean"}}
    schema_to_ir(schema, **OPTS)
    assert len(calls) == 1


def test_every_object_of_a_compile_shares_the_parse(monkeypatch):
    p = _pattern()
    calls = _count_parses(monkeypatch, p)
    obj = {"type": "object", "properties": {"title": {"type": "string"}},
           "patternProperties": {p: {"type": "string"}}, "additionalProperties": False}
    schema = {"type": "object",
              "properties": {f"o{i}": dict(obj) for i in range(5)}}
    schema_to_ir(schema, **OPTS)
    assert len(calls) == 1


def test_same_language_as_a_separate_parse():
    p = _pattern()
    schema = {"type": "object", "properties": {"aa": {"type": "string"}},
              "patternProperties": {p: {"type": "integer"}},
              "additionalProperties": {"type": "boolean"}}
    g = schema_to_ir(schema, **OPTS)
    # what a compile that parsed the pattern on its own makes (the grammar cached, so the
    # names' matches do not parse it again here)
    g2 = schema_to_ir(schema, **OPTS)
    assert {n: r.expr for n, r in g.rules.items()} == {n: r.expr for n, r in g2.rules.items()}


@pytest.mark.parametrize("declared, keyword, pointer", [
    # the names' match refuses first, naming patternProperties
    ({"ab": {"type": "string"}}, "patternProperties", "/patternProperties"),
    # no declared name: the key language refuses, naming the pattern keyword
    ({}, "pattern", "/patternProperties/pattern"),
])
def test_refused_pattern_keeps_its_error(declared, keyword, pointer):
    schema = {"type": "object", "patternProperties": {"^a(": {"type": "integer"}}}
    if declared:
        schema["properties"] = declared
    for _ in range(2):      # a refused parse is never kept: the same error again
        with pytest.raises(CompileError) as e:
            schema_to_ir(schema, **OPTS)
        assert (e.value.keyword, e.value.pointer) == (keyword, pointer)


def test_pattern_grammars_bounded(monkeypatch):
    monkeypatch.setattr(pattern_names, "_PATTERN_GRAMMARS_MAX", 4)
    # every name matched by the pattern's grammar, as past the key NFA bound
    monkeypatch.setattr(pattern_names, "_walk", lambda pattern, expr, s: None)
    for _ in range(10):
        p = _pattern()
        schema = {"type": "object", "properties": {"ab": {"type": "string"}},
                  "patternProperties": {p: {"type": "integer"}}}
        schema_to_ir(schema, **OPTS)
    assert len(pattern_names._PATTERN_GRAMMARS) <= 4


WALK_CASES = [
    # (pattern, names: some match, some not)
    ("^x[0-9]{2,3}$", ["x12", "x123", "x1", "x1234", "ax12", ""]),
    ("ab", ["ab", "xaby", "a", "ba", ""]),
    ("^(title|description)_[a-z]{2}(-[A-Z]{2})?$",
     ["title_en", "description_fr-CA", "title_en-ca", "title_", "title_enx"]),
    ("é+ü", ["éü", "xééüy", "eu", "é"]),
    ("^(?!x)[a-z]+$", ["abc", "xabc", "Abc", ""]),
    ("\\d$", ["a1", "1a", "١"]),                      # \d: ASCII digits (dialect alphabet)
    ("^[^a]*$", ["", "bcd", "bad", "😀"]),
    (".*", ["", "anything"]),
    ("^a|b$", ["a", "xb", "xa", "bx"]),
]


@pytest.mark.parametrize("pattern, names", WALK_CASES)
def test_walk_answers_as_the_grammar(pattern, names):
    from cengine.schema.pattern_names import _pattern_grammar, _pattern_matches
    g = _pattern_grammar(pattern)
    for name in names:
        m = g.matcher()
        want = m.accept_bytes(name.encode("utf-8")) and m.is_accepting()
        assert pattern_names._walk(pattern, searches.search_expr(pattern), name) is want, name
        assert _pattern_matches(pattern, name, "") is want, name


def test_declared_names_build_no_automaton(monkeypatch):
    from cengine import automaton
    builds = []
    real = automaton.build
    monkeypatch.setattr(automaton, "build", lambda g, **kw: builds.append(g) or real(g, **kw))
    p = _pattern()
    name = p[1:p.index("[")] + "ab"
    schema = {"type": "object",
              "properties": {"aa": {"type": "string"}, name: {"type": "integer"}},
              "patternProperties": {p: {"type": "integer"}}}
    schema_to_ir(schema, **OPTS)
    assert builds == []
