"""Grammar composition refuses what it cannot enforce or does not understand, at compile time,
with the front ends' typed errors."""
from __future__ import annotations

import pytest

import cengine
from cengine import (CompileError, Concat, Gbnf, JsonSchema, OneOf, Regex, Repeat, Tagged,
                     TriggeredRegion)


@pytest.mark.parametrize("make, match", [
    (lambda: TriggeredRegion("", "x", "y"), "trigger .* must not be empty"),
    (lambda: OneOf(), "at least one alternative"),
    (lambda: Repeat("x", 3, 2), "below min"),
    (lambda: Repeat("x", -1), "non-negative"),
    (lambda: Repeat("x", 0, 1.5), "non-negative"),
    (lambda: JsonSchema("{not json"), "not valid JSON"),
    (lambda: JsonSchema(3), "object or a boolean"),
    (lambda: JsonSchema({"const": float("nan")}), "not JSON"),
])
def test_compose_refuses_bad_descriptions(make, match):
    with pytest.raises(CompileError, match=match):
        make()


@pytest.mark.parametrize("make", [
    lambda: Concat("a", 3),
    lambda: OneOf(b"bytes"),
    lambda: Tagged(1, "x", "y"),
    lambda: TriggeredRegion("<t>", None, "</t>"),
    lambda: Regex(None),
    lambda: cengine.compile_structural(42),
    lambda: cengine.compile_triggered(Concat("a")),
])
def test_compose_refuses_wrong_types(make):
    with pytest.raises(TypeError):
        make()


def test_compose_unenforceable_schema_names_keyword_and_pointer():
    part = Tagged("<x>", JsonSchema({"type": "object", "properties": {
        "a": {"type": "array", "uniqueItems": True}}}), "</x>")
    with pytest.raises(CompileError) as e:
        cengine.compile_structural(part)
    assert e.value.keyword == "uniqueItems"
    assert e.value.pointer == "/properties/a/uniqueItems"


@pytest.mark.parametrize("part", [
    Tagged("<x>", JsonSchema(False), "</x>"),
    TriggeredRegion("<c>", OneOf(JsonSchema(False), JsonSchema({"enum": []})), "</c>"),
])
def test_compose_refuses_what_accepts_nothing(part):
    with pytest.raises(CompileError, match="accepts no document"):
        cengine.compile_structural(part)


def test_compose_gbnf_errors_keep_their_position():
    with pytest.raises(CompileError) as e:
        cengine.compile_structural(Concat("a", Gbnf('root ::= "x" undefined-rule')))
    assert e.value.rule is not None or e.value.line is not None


def test_compose_bad_regex_is_a_compile_error():
    with pytest.raises(CompileError):
        cengine.compile_structural(Regex("a(b"))


@pytest.mark.parametrize("options", [
    {"whitespace_budget": -1}, {"whitespace_budget": 1.5}, {"max_depth": 0}, {"max_depth": True},
])
def test_compose_refuses_bad_limits(options):
    with pytest.raises(CompileError):
        cengine.compile_structural("x", **options)
