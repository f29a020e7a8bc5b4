"""Hypothesis strategies for hostile request bodies, shared by tests/test_server_fuzz.py (a
few hundred requests) and scripts/bench_hostile.py (the big run for docs/reliability.md).

A drawn request is (api, method, path, content bytes): most are a valid minimal body of that
endpoint with some fields replaced by arbitrary JSON (wrong types, odd messages, constraint
fragments, deep or wide values), some are arbitrary bytes. Token budgets are kept tiny so a
body that happens to be valid generates little."""
from __future__ import annotations

import json

from hypothesis import strategies as st

ENDPOINTS = [
    ("openai", "POST", "/v1/chat/completions"), ("openai", "POST", "/v1/completions"),
    ("openai", "POST", "/v1/responses"), ("openai", "GET", "/v1/models"),
    ("anthropic", "POST", "/v1/messages"),
    ("ollama", "POST", "/api/chat"), ("ollama", "POST", "/api/generate"),
    ("ollama", "POST", "/api/show"), ("ollama", "GET", "/api/tags"),
    ("ollama", "GET", "/api/version"),
]

MSGS = [{"role": "user", "content": "hi"}]


def base_body(path: str, model: str) -> dict:
    return {"/v1/chat/completions": {"model": model, "messages": MSGS, "max_tokens": 2},
            "/v1/completions": {"model": model, "prompt": "hi", "max_tokens": 2},
            "/v1/responses": {"model": model, "input": "hi", "max_output_tokens": 2},
            "/v1/messages": {"model": model, "messages": MSGS, "max_tokens": 2},
            "/api/chat": {"model": model, "messages": MSGS, "stream": False,
                          "options": {"num_predict": 2}},
            "/api/generate": {"model": model, "prompt": "hi", "stream": False,
                              "options": {"num_predict": 2}},
            "/api/show": {"model": model}}.get(path, {})


# fragments that reach the compilers, the tool parser and the templates
_SNIPPETS = st.sampled_from([
    "root ::= \"a\"", "root ::= (", "root ::= x{1,100}", "((a{1,100}){1,100}){1,100}",
    "(a|b)*a(a|b){8}", "[", "\\", "a{99999}", "{{ x }}", "{% for %}", "<tool_call>",
    "</tool_call>", "<|im_start|>", "\x00", "\ud7ff", "json", "text", "json_schema",
    "json_object", "function", "auto", "required", "none", "any", "tool", "user", "assistant",
    "system", "developer", "tool_use", "tool_result", "message", "function_call",
])
_SCALARS = (st.none() | st.booleans() | st.integers(-2**64, 2**64)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
            | _SNIPPETS)
_KEYS = st.sampled_from(["type", "role", "content", "name", "function", "arguments", "schema",
                         "json_schema", "properties", "items", "enum", "const", "anyOf",
                         "pattern", "required", "text", "format", "input_schema", "parameters",
                         "tool_calls", "id", "tool_call_id", "num_predict", "minLength",
                         "maxItems", "$ref", "$defs"]) | st.text(max_size=6)
JSON = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(_KEYS, kids, max_size=4), max_leaves=12)
FIELDS = st.sampled_from([
    "model", "messages", "prompt", "input", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream", "stream_options", "tools", "tool_choice", "response_format",
    "format", "options", "temperature", "top_p", "top_k", "stop", "stop_sequences", "seed",
    "llamay_schema", "llamay_grammar", "llamay_regex", "llamay_lexicon", "llamay_format",
    "llamay_choice_logprobs", "system", "instructions", "text", "logprobs", "top_logprobs", "n",
    "echo", "suffix", "raw", "parallel_tool_calls", "name"])

_BUDGET_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def _tame(body: dict) -> dict:
    """Valid budgets stay tiny (an invalid type or value is left for the server to refuse),
    and streams are off unless the fuzz asks (a stream's frames are read to the end)."""
    for k in _BUDGET_KEYS:
        v = body.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 4:
            body[k] = 4
    opts = body.get("options")
    if isinstance(opts, dict):
        v = opts.get("num_predict")
        if isinstance(v, int) and not isinstance(v, bool) and (v > 4 or v < 0):
            opts["num_predict"] = 4
    return body


@st.composite
def requests(draw, model: str):
    """-> (api, method, path, content) with content bytes (b"" for GET)."""
    api, method, path = draw(st.sampled_from(ENDPOINTS))
    if method == "GET":
        return api, method, path, b""
    kind = draw(st.sampled_from(["fields", "fields", "fields", "messages", "raw"]))
    if kind == "raw":
        raw = draw(st.binary(max_size=64) | st.text(max_size=64).map(str.encode)
                   | JSON.map(lambda v: json.dumps(v).encode()))
        return api, method, path, raw
    body = dict(base_body(path, model)) if draw(st.booleans()) else {}
    if kind == "messages":
        body["messages"] = draw(st.lists(st.dictionaries(_KEYS, JSON, max_size=4)
                                         | JSON, max_size=4))
    body.update(draw(st.dictionaries(FIELDS, JSON, max_size=4)))
    return api, method, path, json.dumps(_tame(body)).encode()
