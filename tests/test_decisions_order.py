"""Alternatives in the order the request lists them (server/runtime/schema_order.py).

* listed_values: the values a schema lists for an instance pointer, through properties,
  pattern/additional properties, items and prefixItems, allOf/anyOf/oneOf branches, local
  $refs and if/then/else, in the order written;
* in_listed_order: alternatives sorted by that list under JSON equality, the unlisted last;
* in the decode loop: the same (alternative, logprob) pairs as without an order, permuted
  together, for a schema, a discriminated anyOf and the tool names and arguments.
"""
from __future__ import annotations

import pytest

import cengine
from cengine import Alternative
from server.runtime.schema_order import in_listed_order, listed_values
from server.runtime.types import ChoiceScope
from server.tools import ToolSpec, hermes

from test_decisions_probe import run

SHAPES = {"anyOf": [
    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer"}},
     "required": ["kind", "side"]},
    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "integer"}},
     "required": ["kind", "r"]}]}

LISTED = [
    ({"enum": ["yes", "no", "maybe"]}, "", ["yes", "no", "maybe"]),
    ({"properties": {"a": {"properties": {"b": {"enum": ["z", "a", "m"]}}}}}, "/a/b",
     ["z", "a", "m"]),
    ({"properties": {"a/b": {"enum": [3, 1, 2]}}}, "/a~1b", [3, 1, 2]),
    ({"items": {"enum": ["red", "green", "blue"]}}, "/4", ["red", "green", "blue"]),
    ({"prefixItems": [{"enum": ["x", "a"]}], "items": {"enum": ["q", "b"]}}, "/0", ["x", "a"]),
    ({"prefixItems": [{"enum": ["x", "a"]}], "items": {"enum": ["q", "b"]}}, "/1", ["q", "b"]),
    ({"items": [{"enum": ["x", "a"]}], "additionalItems": {"enum": ["q", "b"]}}, "/1",
     ["q", "b"]),
    (SHAPES, "/kind", ["square", "circle"]),
    ({"oneOf": [{"const": "b"}, {"const": "a"}]}, "", ["b", "a"]),
    ({"$defs": {"level": {"enum": ["low", "high"]}},
      "properties": {"l": {"$ref": "#/$defs/level"}}}, "/l", ["low", "high"]),
    ({"properties": {"l": {"allOf": [{"enum": ["c", "b", "a"]}, {"enum": ["b", "c"]}]}}},
     "/l", ["c", "b", "a", "b", "c"]),
    ({"patternProperties": {"^x_": {"enum": ["k", "j"]}},
      "additionalProperties": {"enum": ["other"]}}, "/x_1", ["k", "j"]),
    ({"patternProperties": {"^x_": {"enum": ["k", "j"]}},
      "additionalProperties": {"enum": ["other"]}}, "/y", ["other"]),
    ({"if": {"properties": {"t": {"const": 1}}}, "then": {"properties": {"v": {"enum": [9, 8]}}},
      "else": {"properties": {"v": {"enum": [7]}}}}, "/v", [9, 8, 7]),
    ({"type": "boolean"}, "", []),
    ({"properties": {"a": {"enum": ["x"]}}}, "/b", []),
    ({"enum": [{"an": "object"}, "s", [1]]}, "", ["s"]),
    (True, "/a", []),
]


@pytest.mark.parametrize("schema, pointer, want", LISTED)
def test_listed_values_follow_the_schema(schema, pointer, want):
    assert listed_values(schema, pointer) == want


def alts(*texts):
    import json
    return [Alternative(t.encode(), json.loads(t)) for t in texts]


@pytest.mark.parametrize("texts, listed, want", [
    (['"a"', '"b"', '"c"'], ["c", "a", "b"], [2, 0, 1]),
    (["false", "true"], [], [0, 1]),                         # unlisted: the engine's order
    (["false", "true"], [True, False], [1, 0]),
    (["1", "2"], [2.0, 1.0], [1, 0]),                        # JSON equality: 2 == 2.0
    (["1", "true"], [True, 1], [1, 0]),                      # true is not 1
    (['"a"', '"b"', '"c"'], ["b"], [1, 0, 2]),                # the unlisted after
    (['"a"', '"b"'], ["b", "a", "b"], [1, 0]),                # the first listing counts
])
def test_in_listed_order(texts, listed, want):
    assert in_listed_order(alts(*texts), listed) == want


@pytest.fixture(scope="module")
def model(fixture_model_path):
    from server.runtime.model import Model
    m = Model(str(fixture_model_path), n_ctx=1024)
    yield m
    m.close()


def pairs(d):
    return sorted(zip(map(repr, d.alternatives), d.logprobs, d.posterior))


ROUTING = {"type": "object",
           "properties": {"intent": {"enum": ["track", "refund", "cancel"]},
                          "urgent": {"type": "boolean"}},
           "required": ["intent", "urgent"]}


@pytest.mark.parametrize("schema, want", [
    (ROUTING, {"/intent": ["track", "refund", "cancel"], "/urgent": [False, True]}),
    (SHAPES, {"/kind": ["square", "circle"]}),
])
def test_json_decisions_come_in_schema_order(model, schema, want):
    grammar = cengine.compile_json_schema(schema)
    _, engine_order = run(model, grammar=grammar, seed=1)
    _, ordered = run(model, grammar=grammar, seed=1, scope=ChoiceScope("json", schema=schema))
    assert [d.pointer for d in ordered] == [d.pointer for d in engine_order] != []
    for a, b in zip(engine_order, ordered):
        assert b.alternatives == want[b.pointer]
        assert pairs(a) == pairs(b) and a.chosen == b.chosen
        # the probe tokens travel with their alternative
        assert sorted(zip(map(repr, a.alternatives), map(tuple, a.probe_sequences))) == \
            sorted(zip(map(repr, b.alternatives), map(tuple, b.probe_sequences)))


TOOLS = [ToolSpec(name, "", {"type": "object", "properties": {"unit": {"enum": units}},
                             "required": ["unit"]})
         for name, units in [("send_email", ["z", "k"]), ("book_table", ["q", "b"]),
                             ("get_weather", ["f", "c"])]]


def test_tool_decisions_come_in_the_order_offered(model):
    grammar = hermes.HERMES.call_grammar(TOOLS, parallel=False)
    _, engine_order = run(model, "hi", scope=ChoiceScope("calls"), seed=3, grammar=grammar)
    scope = ChoiceScope("calls", tools=[(t.name, t.parameters) for t in TOOLS])
    _, ordered = run(model, "hi", scope=scope, seed=3, grammar=grammar)
    tool, *args = ordered
    assert tool.pointer == "tool" and tool.alternatives == [t.name for t in TOOLS]
    units = {t.name: t.parameters["properties"]["unit"]["enum"] for t in TOOLS}
    assert [d.pointer for d in args] == ["/unit"]
    assert args[0].alternatives == units[tool.chosen]
    for a, b in zip(engine_order, ordered):
        assert pairs(a) == pairs(b)


# an answer whose members are spelled like a call's: its decisions must keep the document's
# pointers (not "tool", not relative to "/arguments") and carry no call index
ANSWER = {"type": "object",
          "properties": {"name": {"enum": ["zed", "amy"]},
                         "arguments": {"type": "object",
                                       "properties": {"unit": {"enum": ["q", "b"]}},
                                       "required": ["unit"]}},
          "required": ["name", "arguments"]}


def test_answer_beside_calls_is_reported_as_its_own_document(model):
    # tool_choice auto with a response format: one grammar, either the answer or the calls;
    # over seeds the random fixture model writes both
    grammar = hermes.HERMES.answer_or_call_grammar(cengine.JsonSchema(ANSWER), TOOLS,
                                                   parallel=False)
    scope = ChoiceScope("calls", tools=[(t.name, t.parameters) for t in TOOLS], schema=ANSWER,
                        call_open=hermes.CALL_OPEN)
    seen = set()
    for seed in range(12):
        out, decisions = run(model, "hi", scope=scope, seed=seed, grammar=grammar,
                             max_tokens=160)
        if run.finish.reason != "stop":
            continue
        if out.startswith(hermes.CALL_OPEN.encode()):
            seen.add("call")
            assert [(d.call, d.pointer) for d in decisions] == [(0, "tool"), (0, "/unit")]
            assert decisions[0].alternatives == [t.name for t in TOOLS]
        else:
            seen.add("answer")
            assert [(d.call, d.pointer) for d in decisions] == \
                [(None, "/name"), (None, "/arguments/unit")]
            assert [d.alternatives for d in decisions] == [["zed", "amy"], ["q", "b"]]
            assert "call" not in decisions[0].as_dict()
        if seen == {"call", "answer"}:
            break
    assert seen == {"call", "answer"}
