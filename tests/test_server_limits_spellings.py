"""One map of request constraints: every spelling a route compiles is held to the request
limits. The compiler's list (structured.request_constraints) is the one the limits read; this
sends each accepted spelling over each limit it can exceed and expects that limit's 4xx in the
API's own error shape."""
from __future__ import annotations

import httpx
import pytest

from fuzz_bodies import base_body
from server.api import structured
from server.api.limits import constraint_fields
from server_harness import LiveServer

BIG_ENUM = {"enum": [f"v{i}" for i in range(5000)]}
LONG_GRAMMAR = 'root ::= "' + "a" * 70_000 + '"'
LONG_REGEX = "a" * 5000
MANY = [f"w{i}" for i in range(5000)]

# (api, path, body fields, the field named, the limit named)
CASES = [
    ("openai", "/v1/chat/completions", {"llamay_schema": BIG_ENUM}, "llamay_schema",
     "max_enum_values"),
    ("openai", "/v1/chat/completions", {"guided_json": BIG_ENUM}, "guided_json",
     "max_enum_values"),
    ("openai", "/v1/chat/completions", {"json_schema": BIG_ENUM}, "json_schema",
     "max_enum_values"),
    ("openai", "/v1/chat/completions", {"structured_outputs": {"json": BIG_ENUM}},
     "structured_outputs.json", "max_enum_values"),
    ("openai", "/v1/chat/completions",
     {"response_format": {"type": "json_schema", "json_schema": {"name": "x",
                                                                 "schema": BIG_ENUM}}},
     "response_format", "max_enum_values"),
    ("openai", "/v1/chat/completions",
     {"response_format": {"type": "json_object", "schema": BIG_ENUM}}, "response_format",
     "max_enum_values"),
    ("openai", "/v1/responses",
     {"text": {"format": {"type": "json_schema", "name": "x", "schema": BIG_ENUM}}},
     "text.format", "max_enum_values"),
    ("openai", "/v1/chat/completions", {"llamay_grammar": LONG_GRAMMAR}, "llamay_grammar",
     "max_grammar_chars"),
    ("openai", "/v1/chat/completions", {"guided_grammar": LONG_GRAMMAR}, "guided_grammar",
     "max_grammar_chars"),
    ("openai", "/v1/chat/completions", {"grammar": LONG_GRAMMAR}, "grammar",
     "max_grammar_chars"),
    ("openai", "/v1/chat/completions", {"structured_outputs": {"grammar": LONG_GRAMMAR}},
     "structured_outputs.grammar", "max_grammar_chars"),
    ("openai", "/v1/chat/completions", {"guided_regex": LONG_REGEX}, "guided_regex",
     "max_regex_chars"),
    ("openai", "/v1/chat/completions", {"structured_outputs": {"regex": LONG_REGEX}},
     "structured_outputs.regex", "max_regex_chars"),
    ("openai", "/v1/chat/completions", {"guided_choice": MANY}, "guided_choice",
     "max_enum_values"),
    ("openai", "/v1/chat/completions", {"structured_outputs": {"choice": MANY}},
     "structured_outputs.choice", "max_enum_values"),
    ("openai", "/v1/chat/completions", {"llamay_lexicon": MANY}, "llamay_lexicon",
     "max_enum_values"),
    ("openai", "/v1/completions", {"guided_json": BIG_ENUM}, "guided_json", "max_enum_values"),
    ("anthropic", "/v1/messages",
     {"output_config": {"format": {"type": "json_schema", "schema": BIG_ENUM}}},
     "output_config.format", "max_enum_values"),
    ("anthropic", "/v1/messages", {"output_format": {"type": "json_schema", "schema": BIG_ENUM}},
     "output_format", "max_enum_values"),
    ("anthropic", "/v1/messages", {"llamay_grammar": LONG_GRAMMAR}, "llamay_grammar",
     "max_grammar_chars"),
    ("ollama", "/api/chat", {"format": BIG_ENUM}, "format", "max_enum_values"),
    ("ollama", "/api/chat", {"options": {"llamay_regex": LONG_REGEX}}, "options.llamay_regex",
     "max_regex_chars"),
    ("ollama", "/api/generate", {"options": {"llamay_grammar": LONG_GRAMMAR}},
     "options.llamay_grammar", "max_grammar_chars"),
]


def _body(api, path, name, extra):
    """The route's smallest request (fuzz_bodies.base_body) with the constraint fields."""
    b = base_body(path, name)
    for k, v in extra.items():
        if k == "options":
            b.setdefault("options", {}).update(v)
        else:
            b[k] = v
    return b


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=2)
    yield s
    s.stop()


@pytest.mark.parametrize("api, path, extra, param, limit", CASES,
                         ids=[f"{c[1]}:{c[3]}" for c in CASES])
def test_every_spelling_is_held_to_the_limits(live, api, path, extra, param, limit):
    r = httpx.post(live.base + path, json=_body(api, path, live.model_name, extra), timeout=60)
    assert r.status_code == 400, r.text
    body = r.json()
    if api == "openai":
        assert body["error"]["code"] == "limit_exceeded" and body["error"]["param"] == param
        assert limit in body["error"]["message"]
    elif api == "anthropic":
        assert body["type"] == "error" and limit in body["error"]["message"]
    else:
        assert limit in body["error"]


@pytest.mark.parametrize("api, path, extra, param, limit", CASES,
                         ids=[f"{c[1]}:{c[3]}" for c in CASES])
def test_the_limits_read_the_compilers_list(api, path, extra, param, limit):
    """What the limits check is exactly what the routes compile (plus tool schemas)."""
    body = _body(api, path, "m", extra)
    compiled = [(p, k) for p, k, _ in structured.request_constraints(body, api)]
    checked = [(p, k) for p, k, _ in constraint_fields(body, api)]
    assert checked == compiled and param in [p for p, _ in compiled]


def test_every_route_spelling_is_in_the_map():
    """The fields the OpenAI routes understand as constraints are the ones the map yields."""
    from server.api.openai import CHAT_CONSTRAINT_FIELDS
    body = {"llamay_schema": {}, "llamay_grammar": "root ::= \"a\"", "llamay_regex": "a",
            "llamay_lexicon": ["a"], "guided_json": {}, "guided_regex": "a",
            "guided_choice": ["a"], "guided_grammar": "root ::= \"a\"", "json_schema": {},
            "grammar": "root ::= \"a\"",
            "structured_outputs": {"json": {}, "regex": "a", "choice": ["a"],
                                   "grammar": "root ::= \"a\""},
            "response_format": {"type": "json_object"}}
    found = {p.split(".")[0] for p, _, _ in structured.request_constraints(body, "openai")}
    wanted = {f for f in CHAT_CONSTRAINT_FIELDS
              if f not in ("tool_choice", "llamay_choice_logprobs", "llamay_format",
                           "guided_decoding_backend", "llamay_reasoning_budget")}
    assert wanted <= found
