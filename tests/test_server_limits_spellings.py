"""One map of request constraints (server/api/structured.py: SPELLINGS, request_constraints).

- Every spelling each generation route accepts is in its table here, so a spelling added to
  the map without a case fails `test_every_spelling_has_a_case`.
- The map finds each spelling, and the route compiles and enforces exactly what the map found
  (the output of a random model is the one word the constraint allows).
- Every spelling, tool parameter schemas included, is held to the request limits: each over
  the limit it can exceed gets that limit's 4xx in the API's own error shape.
"""
from __future__ import annotations

import json
import re

import httpx
import pytest

from fuzz_bodies import base_body
from server.api import structured
from server.api.settings import Limits
from server_harness import LiveServer

BIG_ENUM = {"enum": [f"v{i}" for i in range(5000)]}
LONG_GRAMMAR = 'root ::= "' + "a" * 70_000 + '"'
LONG_REGEX = "a" * 5000
MANY = [f"w{i}" for i in range(5000)]

PATHS = {route: path for path, route in structured.ROUTES.items()}
# structured_outputs' key for each kind (vLLM's names)
_SO_KEY = {"schema": "json", "object": "json_object"}
WORD = "zebra"

# kind -> (the value that allows only WORD, or a JSON object, for that kind)
_ONLY = {"schema": {"enum": [WORD]}, "grammar": f'root ::= "{WORD}"', "regex": WORD,
         "choice": [WORD], "lexicon": [WORD]}


def _fragment(spelling: str, kind: str, value=None) -> dict:
    """The body fields that spell a constraint of `kind` as `spelling` (value: the one that
    allows only WORD, unless given)."""
    value = _ONLY.get(kind) if value is None else value
    if spelling == "response_format" or spelling == "text.format":
        fmt = ({"type": "json_object"} if kind == "object" else
               {"type": "json_schema", "name": "x", "schema": value})
        if spelling == "response_format" and kind == "schema":
            fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": value}}
        return {"text": {"format": fmt}} if spelling == "text.format" else {spelling: fmt}
    if spelling in ("output_config.format", "output_format"):
        fmt = {"type": "json_schema", "schema": value}
        return ({"output_config": {"format": fmt}} if spelling == "output_config.format"
                else {spelling: fmt})
    if spelling == "format":
        return {"format": "json" if kind == "object" else value}
    if spelling.startswith("options."):
        return {"options": {spelling[len("options."):]: "json" if kind == "json" else value}}
    if spelling == "structured_outputs":
        key = _SO_KEY.get(kind, kind)
        return {"structured_outputs": {key: True if kind == "object" else value}}
    if spelling == "llamay_format":
        return {spelling: "json"}
    return {spelling: value}


# (route, spelling, kind): every spelling of every route, with each kind it takes
_KINDS = {"response_format": ("schema", "object"), "text.format": ("schema", "object"),
          "structured_outputs": ("schema", "regex", "choice", "grammar", "object"),
          "format": ("schema", "object"), "llamay_format": ("json",),
          "output_config.format": ("schema",), "output_format": ("schema",),
          "guided_json": ("schema",), "guided_regex": ("regex",), "guided_choice": ("choice",),
          "guided_grammar": ("grammar",), "json_schema": ("schema",), "grammar": ("grammar",),
          "llamay_schema": ("schema",), "llamay_grammar": ("grammar",),
          "llamay_regex": ("regex",), "llamay_lexicon": ("lexicon",)}


def _kinds(spelling: str):
    return _KINDS[spelling.split("options.")[-1]]


SPELLING_CASES = [(route, spelling, kind)
                  for route, spec in sorted(structured.SPELLINGS.items())
                  for spelling in sorted(spec.spellings) for kind in _kinds(spelling)]


def _body(path: str, model: str, extra: dict, budget: int = 2) -> dict:
    """The route's smallest request (fuzz_bodies.base_body) with these fields added."""
    b = base_body(path, model)
    for k in ("max_tokens", "max_output_tokens"):
        if k in b:
            b[k] = budget
    if "options" in b:
        b["options"]["num_predict"] = budget
    for k, v in extra.items():
        if k == "options":
            b.setdefault("options", {}).update(v)
        else:
            b[k] = v
    return b


def _output_text(route: str, reply: dict) -> str:
    if route == "chat":
        return reply["choices"][0]["message"]["content"]
    if route == "completions":
        return reply["choices"][0]["text"]
    if route == "responses":
        return "".join(c["text"] for item in reply["output"] if item["type"] == "message"
                       for c in item["content"] if c["type"] == "output_text")
    if route == "messages":
        return "".join(b["text"] for b in reply["content"] if b["type"] == "text")
    if route == "ollama_chat":
        return reply["message"]["content"]
    return reply["response"]


def test_every_spelling_has_a_case():
    """The routes' tables and this file's cases name the same spellings."""
    _kinds_known = set(_KINDS)
    for route, spec in structured.SPELLINGS.items():
        for spelling in spec.spellings:
            assert spelling.split("options.")[-1] in _kinds_known, (route, spelling)
    assert set(structured.ROUTES.values()) == set(structured.SPELLINGS)


@pytest.mark.parametrize("route, spelling, kind", SPELLING_CASES,
                         ids=[f"{r}:{s}:{k}" for r, s, k in SPELLING_CASES])
def test_the_map_finds_each_spelling(route, spelling, kind):
    body = _body(PATHS[route], "m", _fragment(spelling, kind))
    found = structured.request_constraints(body, route)
    path = _found_path(spelling, kind)
    assert [(f.path, f.kind) for f in found.output] == [(path, kind)]
    assert found.tools == [] and found.tool_fields == []


def _spelling_of(path: str) -> str:
    return "structured_outputs" if path.startswith("structured_outputs.") else path


@pytest.mark.parametrize("route", sorted(structured.SPELLINGS))
def test_each_route_reads_only_its_spellings(route):
    """A body carrying every spelling of every route: the route's extractor finds exactly its
    own (so an extractor cannot read a field its table does not list)."""
    body = _body(PATHS[route], "m", {})
    for _, spelling, kind in SPELLING_CASES:
        for key, value in _fragment(spelling, kind).items():
            if isinstance(value, dict) and isinstance(body.get(key), dict) \
                    and key in ("options", "structured_outputs", "text"):
                body[key] = {**body[key], **value}
            else:
                body.setdefault(key, value)
    found = {_spelling_of(f.path) for f in structured.request_constraints(body, route).output}
    assert found == set(structured.SPELLINGS[route].spellings)


def test_refuse_unknown_reads_the_map():
    """What each route understands at the top of its body is read off the same table: a
    constraint-like name outside it is refused, every spelling in it is not."""
    from server.api import anthropic, ollama, openai
    understood = {"chat": openai.CHAT_CONSTRAINT_FIELDS,
                  "completions": openai.COMPLETIONS_CONSTRAINT_FIELDS,
                  "responses": openai.RESPONSES_CONSTRAINT_FIELDS,
                  "messages": anthropic.CONSTRAINT_FIELDS,
                  "ollama_chat": ollama.CONSTRAINT_FIELDS,
                  "ollama_generate": ollama.GENERATE_CONSTRAINT_FIELDS}
    for route, spec in structured.SPELLINGS.items():
        tops = {s.split(".")[0] for s in spec.spellings}
        assert tops <= understood[route], route
    assert "guided_json" not in understood["messages"] | understood["ollama_chat"]


TOOLS = {"chat": [{"type": "function", "function": {"name": "f", "parameters": BIG_ENUM}}],
         "responses": [{"type": "function", "name": "f", "parameters": BIG_ENUM}],
         "messages": [{"name": "f", "input_schema": BIG_ENUM}],
         "ollama_chat": [{"type": "function", "function": {"name": "f", "parameters": BIG_ENUM}}]}
def _tool_schema(route: str, schema) -> dict:
    """The fields of a route's tool that hold `schema` as its parameters."""
    if route == "messages":
        return {"input_schema": schema}
    if route == "responses":
        return {"parameters": schema}
    return {"function": {"name": "f", "parameters": schema}}


TOOL_PATHS = {"chat": "tools[0].function.parameters", "responses": "tools[0].parameters",
              "messages": "tools[0].input_schema", "ollama_chat": "tools[0].function.parameters"}


@pytest.mark.parametrize("route", sorted(TOOLS))
def test_the_map_holds_the_tools(route):
    body = _body(PATHS[route], "m", {"tools": TOOLS[route]})
    found = structured.request_constraints(body, route)
    assert [t.name for t in found.tools] == ["f"]
    assert [(f.path, f.kind) for f in found.tool_fields] == \
        [(TOOL_PATHS[route], structured.TOOL_PARAMETERS)]
    assert found.fields() == found.tool_fields


def test_routes_without_tools_take_none_from_the_map():
    for route in ("completions", "ollama_generate"):
        assert structured.SPELLINGS[route].tools is None


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=2)
    yield s
    s.stop()


@pytest.mark.parametrize("route, spelling, kind", SPELLING_CASES,
                         ids=[f"{r}:{s}:{k}" for r, s, k in SPELLING_CASES])
def test_each_spelling_is_enforced_by_its_route(live, route, spelling, kind):
    """What the map found is what the route compiles: the output is the one word allowed (or,
    for JSON modes, a JSON value / object), whatever the random model would write."""
    body = _body(PATHS[route], live.model_name, _fragment(spelling, kind), budget=12)
    r = httpx.post(live.base + PATHS[route], json=body, timeout=120)
    assert r.status_code == 200, r.text
    text = _output_text(route, r.json())
    if kind == "schema":
        assert json.loads(text) == WORD
    elif kind in ("object", "json"):
        value = json.loads(text)
        assert kind == "json" or isinstance(value, dict)
    elif kind == "lexicon":
        assert set(re.findall(r"[A-Za-z]+", text)) == {WORD}      # words, and punctuation
    else:
        assert text == WORD


def _nested(depth: int) -> dict:
    v: dict = {}
    for _ in range(depth):
        v = {"type": "array", "items": v}
    return v


# what exceeds each limit, for each kind of constraint value
OVER = {"schema": [("max_enum_values", BIG_ENUM), ("max_schema_depth", _nested(80)),
                   ("max_schema_nodes", {"anyOf": [{"type": "string"}] * 10_500}),
                   ("max_regex_chars", {"type": "string", "pattern": LONG_REGEX})],
        "grammar": [("max_grammar_chars", LONG_GRAMMAR)],
        "regex": [("max_regex_chars", LONG_REGEX)],
        "choice": [("max_enum_values", MANY)], "lexicon": [("max_enum_values", MANY)]}


def _found_path(spelling: str, kind: str) -> str:
    return (f"structured_outputs.{_SO_KEY.get(kind, kind)}" if spelling == "structured_outputs"
            else spelling)


# (route, body fields, the field named, the limit named): every spelling of every route (its
# JSON modes aside: they carry no value) over every limit its kind of value can exceed, and
# every route's tool parameter schemas over the schema limits
LIMIT_CASES = [(route, _fragment(spelling, kind, value), _found_path(spelling, kind), limit)
               for route, spelling, kind in SPELLING_CASES
               for limit, value in OVER.get(kind, ())] + [
    ("chat", {"response_format": {"type": "json_object", "schema": BIG_ENUM}}, "response_format",
     "max_enum_values"),
] + [(route, {"tools": [{**TOOLS[route][0], **_tool_schema(route, value)}]}, TOOL_PATHS[route],
      limit) for route in sorted(TOOLS) for limit, value in OVER["schema"]]


def test_the_limit_cases_exceed_the_default_limits():
    lim = Limits()
    assert len(BIG_ENUM["enum"]) > lim.max_enum_values and len(MANY) > lim.max_enum_values
    assert len(LONG_GRAMMAR) > lim.max_grammar_chars and len(LONG_REGEX) > lim.max_regex_chars


@pytest.mark.parametrize("route, extra, param, limit", LIMIT_CASES,
                         ids=[f"{c[0]}:{c[2]}" for c in LIMIT_CASES])
def test_every_spelling_is_held_to_the_limits(live, route, extra, param, limit):
    r = httpx.post(live.base + PATHS[route], json=_body(PATHS[route], live.model_name, extra),
                   timeout=60)
    assert r.status_code == 400, r.text
    body = r.json()
    if route in ("chat", "completions", "responses"):
        assert body["error"]["code"] == "limit_exceeded" and body["error"]["param"] == param
        assert limit in body["error"]["message"]
    elif route == "messages":
        assert body["type"] == "error" and limit in body["error"]["message"]
        assert f"'{param}'" in body["error"]["message"]
    else:
        assert limit in body["error"] and f"'{param}'" in body["error"]


@pytest.mark.parametrize("route, extra, param, limit", LIMIT_CASES,
                         ids=[f"{c[0]}:{c[2]}" for c in LIMIT_CASES])
def test_the_limits_read_the_map(route, extra, param, limit):
    """The field the limit names is one the map found in the body."""
    found = structured.request_constraints(_body(PATHS[route], "m", extra), route)
    assert param in [f.path for f in found.fields()]
