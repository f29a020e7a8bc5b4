"""Compile once (server/api/runner.py Turn.compile_grammars): a request is checked completely
before anything compiles, and its constraint compiles exactly once, in the shape it is used:
alone (no tools; tools required or named, where it only stands to be refused if unenforceable),
or inside the tool-call union (tool_choice auto).

The schema compiler's two entry points are counted (schema_to_ir: a schema alone; add_schema: a
schema as a part of a composition); each test's schema is new, so no grammar cache can hide a
compile."""
from __future__ import annotations

import itertools
import json

import httpx
import pytest

import cengine.schema
from server.api import structured
from server.api.runner import Turn
from server.runtime.types import SamplingParams
from server.tools import ToolSpec
from server_harness import LiveServer

_fresh = itertools.count()


def fresh_schema() -> dict:
    return {"type": "object", "properties": {"n": {"enum": [f"compile-once-{next(_fresh)}"]}},
            "required": ["n"]}


@pytest.fixture
def compiles(monkeypatch):
    """(entry point, schema text) of every schema compile while the test runs."""
    seen = []
    alone, part = cengine.schema.schema_to_ir, cengine.schema.add_schema

    def schema_to_ir(schema, **kw):
        seen.append(("alone", json.dumps(schema, sort_keys=True)))
        return alone(schema, **kw)

    def add_schema(g, schema, **kw):
        seen.append(("part", json.dumps(schema, sort_keys=True)))
        return part(g, schema, **kw)
    monkeypatch.setattr(cengine.schema, "schema_to_ir", schema_to_ir)
    monkeypatch.setattr(cengine.schema, "add_schema", add_schema)
    return seen


def _of(seen, schema):
    text = json.dumps(schema, sort_keys=True)
    return [how for how, s in seen if s == text]


TOOL = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

# (tool_choice mode, how the response_format's schema is compiled)
CASES = [("none", ["alone"]), ("auto", ["part"]), ("required", ["alone"]), ("named", ["alone"])]


@pytest.mark.parametrize("mode, how", CASES, ids=[c[0] for c in CASES])
def test_the_constraint_compiles_once_in_its_shape(compiles, mode, how):
    schema = fresh_schema()
    constraint = structured.plan([("response_format", "schema", schema)])
    assert _of(compiles, schema) == []              # planning compiles nothing
    tools = [ToolSpec("get_weather", "", TOOL)] if mode != "none" else []
    turn = Turn(params=SamplingParams(max_tokens=8), messages=[{"role": "user", "content": "x"}],
                tools=tools, tool_mode=mode,
                tool_name="get_weather" if mode == "named" else None, constraint=constraint)
    assert _of(compiles, schema) == []
    turn.compile_grammars()
    turn.compile_grammars()                         # a second call finds the grammars made
    assert _of(compiles, schema) == how


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=4)
    yield s
    s.stop()


def _chat(live, **fields):
    body = {"model": live.model_name, "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4, **fields}
    return httpx.post(live.base + "/v1/chat/completions", json=body, timeout=120)


def _tools(schema):
    return [{"type": "function", "function": {"name": "get_weather", "parameters": schema}}]


def test_a_request_compiles_its_schema_once_beside_tools(live, compiles):
    schema, tool = fresh_schema(), fresh_schema()
    r = _chat(live, response_format={"type": "json_schema",
                                     "json_schema": {"name": "x", "schema": schema}},
              tools=_tools(tool), tool_choice="auto")
    assert r.status_code == 200, r.text
    assert _of(compiles, schema) == ["part"] and _of(compiles, tool) == ["part"]


# fields checked by the route after its constraint fields; each makes the request a 400
LATE_ERRORS = [{"temperature": "hot"}, {"top_logprobs": 99, "logprobs": True},
               {"tool_choice": {"type": "function", "function": {"name": "nope"}}},
               {"stream_options": "yes"}, {"n": 2}]


@pytest.mark.parametrize("late", LATE_ERRORS, ids=[next(iter(x)) for x in LATE_ERRORS])
def test_a_bad_request_compiles_nothing(live, compiles, late):
    schema, tool = fresh_schema(), fresh_schema()
    r = _chat(live, response_format={"type": "json_schema",
                                     "json_schema": {"name": "x", "schema": schema}},
              tools=_tools(tool), **late)
    assert r.status_code == 400, r.text
    assert _of(compiles, schema) == [] and _of(compiles, tool) == []
