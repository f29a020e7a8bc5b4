"""cengine.alternatives.value_alternatives: the finite set of JSON values legal at a decision
point."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cengine
from cengine.alternatives import Alternative, value_alternatives

INTENTS = ["refund", "cancel", "track"]


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


def matcher_at(schema, prefix: bytes, grammar=None):
    g = grammar if grammar is not None else cengine.compile_json_schema(schema)
    m = g.matcher()
    assert m.accept_bytes(prefix), prefix
    return m


class ContractOnly:
    """A matcher seen only through the contract's API (no allowed_bytes): the slow path."""

    def __init__(self, m):
        self._m = m

    def copy(self):
        return ContractOnly(self._m.copy())

    def accept_bytes(self, data):
        return self._m.accept_bytes(data)

    def is_accepting(self):
        return self._m.is_accepting()


def values(alternatives):
    return None if alternatives is None else [a.value for a in alternatives]


# (schema, bytes before the decision point, the values expected in spelling order, or None)
CASES = [
    ({"enum": INTENTS}, b"", ["cancel", "refund", "track"]),
    (obj(intent={"enum": INTENTS}), b'{"intent":', ["cancel", "refund", "track"]),
    (obj(intent={"enum": INTENTS}), b'{"intent": ', ["cancel", "refund", "track"]),
    (obj(a=obj(b=obj(c={"enum": ["x", "y"]}))), b'{"a":{"b":{"c":', ["x", "y"]),
    ({"type": "array", "items": {"enum": INTENTS}, "minItems": 1}, b"[",
     ["cancel", "refund", "track"]),
    ({"type": "array", "items": {"enum": INTENTS}}, b'["track",', ["cancel", "refund", "track"]),
    ({"type": "array", "items": {"enum": INTENTS}}, b"[", ["cancel", "refund", "track"]),  # or "]"
    (obj(urgent={"type": "boolean"}), b'{"urgent":', [False, True]),
    ({"type": "boolean"}, b"", [False, True]),
    ({"type": "null"}, b"", [None]),
    ({"type": ["boolean", "null"]}, b"", [False, None, True]),
    (obj(intent={"enum": INTENTS}, urgent={"type": "boolean"}), b'{"intent":"track","urgent":',
     [False, True]),
    ({"const": "only"}, b"", ["only"]),
    ({"anyOf": [{"const": "a"}, {"const": "b"}, {"enum": [1, 2]}]}, b"", ["a", "b", 1, 2]),
    ({"anyOf": [obj(kind={"const": "circle"}, r={"type": "number"}),
                obj(kind={"const": "square"}, side={"type": "number"})]}, b'{"kind":',
     ["circle", "square"]),
    ({"enum": [1, 12, 123]}, b"", [1, 12, 123]),
    ({"enum": [0, 2.5, -3, 10]}, b"", [-3, 0, 10, 2.5]),
    (obj(n={"enum": [1, 2]}, b={"type": "boolean"}), b'{"n":', [1, 2]),
    ({"enum": [1, "1", True, None]}, b"", ["1", 1, None, True]),
    ({"enum": ["a", "ab", "abc"]}, b"", ["a", "ab", "abc"]),
    ({"enum": ['say "hi"', "back\\slash", "tab\there", "é", "日本"]}, b"",
     ['back\\slash', 'say "hi"', "tab\there", "é", "日本"]),
    # infinite or containers: no finite decision
    ({"type": "string"}, b"", None),
    (obj(name={"type": "string"}), b'{"name":', None),
    ({"type": "number"}, b"", None),
    ({"type": "integer", "minimum": 0, "maximum": 3}, b"", [0, 1, 2, 3]),
    ({"type": "integer"}, b"", None),
    ({"enum": ["a", {"x": 1}]}, b"", None),
    ({"anyOf": [{"const": "a"}, {"type": "string"}]}, b"", None),
    ({"anyOf": [{"type": "boolean"}, {"type": "object"}]}, b"", None),
    # an array starts here
    (obj(tags={"type": "array", "items": {"enum": INTENTS}}), b'{"tags":', None),
]


@pytest.mark.parametrize("schema, prefix, expected", CASES)
def test_alternatives_case_table(schema, prefix, expected):
    m = matcher_at(schema, prefix)
    before = m.completion()
    got = value_alternatives(m)
    assert values(got) == expected
    assert m.completion() == before                       # the matcher is left as it was
    if got is not None:
        assert got == sorted(got, key=lambda a: a.text)
        for a in got:
            assert json.loads(a.text) == a.value and type(json.loads(a.text)) is type(a.value)
            c = m.copy()
            assert c.accept_bytes(a.text)


@pytest.mark.parametrize("schema, prefix, expected", CASES)
def test_the_contract_api_gives_the_same_answer(schema, prefix, expected):
    m = matcher_at(schema, prefix)
    assert value_alternatives(ContractOnly(m)) == value_alternatives(m)


def test_enum_strings_keep_their_canonical_spelling():
    words = ['say "hi"', "tab\there", "é", "\x01"]
    got = value_alternatives(matcher_at({"enum": words}, b""))
    assert {a.text for a in got} == {json.dumps(w, ensure_ascii=False).encode() for w in words}


def test_numbers_keep_their_shortest_spelling():
    # the engine also takes 1.0, 1.00, ... and -0 for 0: one value each, spelled the shortest way
    got = value_alternatives(matcher_at({"enum": [1, 0, 2.5]}, b""))
    assert [(a.text, a.value) for a in got] == [(b"0", 0), (b"1", 1), (b"2.5", 2.5)]


def test_gbnf_literals_end_at_the_end_of_the_document():
    g = cengine.compile_gbnf('root ::= "true" | "false" | "12" | "1"')
    assert values(value_alternatives(g.matcher())) == [1, 12, False, True]


def test_a_gbnf_that_is_not_json_gives_none():
    g = cengine.compile_gbnf('root ::= "yes" | "no"')
    assert value_alternatives(g.matcher()) is None


@pytest.mark.parametrize("n, cap, finite", [(10, 64, True), (64, 64, True), (65, 64, False),
                                            (100, 64, False), (100, 200, True), (3, 2, False)])
def test_the_alternative_cap(n, cap, finite):
    words = [f"w{i:03d}" for i in range(n)]
    got = value_alternatives(matcher_at({"enum": words}, b""), max_alternatives=cap)
    assert (got is not None) is finite
    if finite:
        assert [a.value for a in got] == words


def test_the_value_length_cap():
    long_word = "x" * 300
    assert value_alternatives(matcher_at({"enum": ["a", long_word]}, b"")) is None
    got = value_alternatives(matcher_at({"enum": ["a", long_word]}, b""), max_value_bytes=400)
    assert values(got) == ["a", long_word]


def test_a_long_number_is_refused_past_the_number_cap():
    big = 12345678901234567890123456789012345
    assert value_alternatives(matcher_at({"enum": [big]}, b"")) is None
    # big.0, big.00, ... are spellings of the same number, not floats of their own
    assert values(value_alternatives(matcher_at({"enum": [big]}, b""),
                                     max_number_bytes=64)) == [big]


def test_alternative_is_a_value_object():
    [a] = value_alternatives(matcher_at({"const": "x"}, b""))
    assert a == Alternative(b'"x"', "x")


# every alternative is accepted from the decision point, is one complete value there (the
# document can go on after it), and the set is exactly the schema's
scalar = (st.text(min_size=0, max_size=6) | st.integers(-1000, 1000) | st.booleans() | st.none()
          | st.sampled_from([0.5, -2.25, 1e-3, 3.0]))


def _key(v):
    return (type(v).__name__ if isinstance(v, bool) or v is None else
            "number" if isinstance(v, (int, float)) else "string", v)


@st.composite
def placed_enum(draw):
    enum = draw(st.lists(scalar, min_size=1, max_size=8, unique_by=_key))
    where = draw(st.sampled_from(["root", "member", "item", "second_member"]))
    leaf = {"enum": enum}
    if where == "root":
        return enum, leaf, b"", b""
    if where == "member":
        return enum, obj(k=leaf), b'{"k":', b"}"
    if where == "item":
        return enum, {"type": "array", "items": leaf, "minItems": 1}, b"[", b"]"
    return enum, obj(a={"type": "boolean"}, k=leaf), b'{"a":true,"k":', b"}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(placed_enum())
def test_every_alternative_is_accepted_and_complete(case):
    enum, schema, prefix, closing = case
    m = matcher_at(schema, prefix)
    got = value_alternatives(m)
    assert got is not None
    assert {_key(a.value) for a in got} == {_key(v) for v in enum}
    for a in got:
        c = m.copy()
        assert c.accept_bytes(a.text)
        assert json.loads(a.text) == a.value
        # complete: what closes the document may follow at once
        assert c.accept_bytes(closing) and c.is_accepting(), (a.text, closing)
