"""Triggered regions (cengine.compile_triggered): the lazy form a decode loop runs after the
trigger, repetition, and the closer completing the open region and its end string across
the whole output."""
from __future__ import annotations

import json
import random

import pytest
from jsonschema import Draft202012Validator

import cengine
from cengine import Concat, JsonSchema, OneOf, Regex, Repeat, Tagged, TriggeredRegion

WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                            "days": {"type": "integer", "minimum": 1}},
           "required": ["city"]}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}
SCHEMAS = {"get_weather": WEATHER, "get_time": CLOCK}


def calls(repeat: bool) -> TriggeredRegion:
    """A Hermes-like tool-call region: a union of tagged schemas between <call> and </call>."""
    nl = Repeat("\n", 0, 1)
    tagged = [Tagged('{"name": ' + json.dumps(n) + ', "arguments": ', JsonSchema(s), "}")
              for n, s in SCHEMAS.items()]
    return TriggeredRegion("<call>", Concat(nl, OneOf(*tagged), nl), "</call>", repeat=repeat,
                           separator=nl)


ONE = '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'
TWO = '{"name": "get_time", "arguments": {"zone": "UTC"}}'


@pytest.mark.parametrize("repeat, after_trigger, ok", [
    (False, ONE + "</call>", True),
    (False, "\n" + TWO + "\n</call>", True),
    (False, ONE + "</call>\n<call>" + TWO + "</call>", False),     # one region only
    (True, ONE + "</call>\n<call>" + TWO + "</call>", True),
    (True, ONE + "</call><call>" + TWO + "</call>", True),
    (True, ONE + "</call> free text", False),                     # nothing after the last block
    (True, ONE, False),                                           # the end string is required
    (True, '{"name": "rm", "arguments": {}}</call>', False),      # not one of the tagged schemas
    (True, '{"name": "get_time", "arguments": {"zone": "PST"}}</call>', False),
])
def test_compose_triggered_language(repeat, after_trigger, ok):
    trigger, g = cengine.compile_triggered(calls(repeat))
    assert trigger == "<call>"
    m = g.matcher()
    assert (m.accept_bytes(after_trigger.encode()) and m.is_accepting()) is ok


def test_compose_triggered_result_is_a_named_pair():
    lazy = cengine.compile_triggered(calls(True))
    assert isinstance(lazy, cengine.TriggeredGrammar) and isinstance(lazy.grammar, cengine.Grammar)
    assert lazy == (lazy.trigger, lazy.grammar)
    assert cengine.compile_triggered(calls(True)).grammar is lazy.grammar      # cached


def _check_closed(doc: str, n_regions_max: int):
    """doc is what follows the trigger, closed: region end (sep trigger region end)*."""
    assert doc.endswith("</call>"), doc
    blocks = [b.strip() for b in doc.split("</call>")[:-1]]
    assert 1 <= len(blocks) <= n_regions_max
    for i, b in enumerate(blocks):
        if i:
            assert b.startswith("<call>")
            b = b[len("<call>"):].strip()
        call = json.loads(b)
        Draft202012Validator(SCHEMAS[call["name"]]).validate(call["arguments"])


@pytest.mark.parametrize("repeat, text", [
    (False, "\n" + ONE + "\n</call>"),
    (True, ONE + "</call>\n<call>\n" + TWO + "</call>"),
])
def test_compose_triggered_closer_completes_the_whole(repeat, text):
    """Cut anywhere after the trigger, completion() closes the open schema, the region and
    its end string: the result is accepted and every call validates."""
    _, g = cengine.compile_triggered(calls(repeat))
    data = text.encode()
    for cut in range(len(data) + 1):
        m = g.matcher()
        assert m.accept_bytes(data[:cut])
        done = data[:cut] + m.completion()
        check = g.matcher()
        assert check.accept_bytes(done) and check.is_accepting(), done
        _check_closed(done.decode(), 2 if repeat else 1)


def test_compose_triggered_closer_on_random_walks():
    _, g = cengine.compile_triggered(calls(True))
    rng = random.Random(7)
    for _ in range(40):
        m = g.matcher()
        for _ in range(rng.randrange(0, 120)):
            allowed = m.allowed_bytes()
            if not allowed:
                break
            assert m.accept_bytes(bytes([rng.choice(allowed)]))
        closer = m.completion()
        assert m.accept_bytes(closer) and m.is_accepting()


def test_compose_structural_closer_from_nothing():
    # the forced form (tool_choice required): from the first byte, the shortest whole call
    g = cengine.compile_structural(calls(False))
    done = g.matcher().completion().decode()
    assert done.startswith("<call>")
    _check_closed(done[len("<call>"):], 1)


def test_compose_triggered_region_may_be_any_part():
    _, g = cengine.compile_triggered(TriggeredRegion("```json\n", Regex("[0-9]+"), "\n```"))
    m = g.matcher()
    assert m.accept_bytes(b"12") and m.completion() == b"\n```"
