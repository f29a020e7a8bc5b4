"""vLLM's `disable_any_whitespace` (in `structured_outputs`, or as the backend option
`guided_decoding_backend: "xgrammar:disable-any-whitespace"`): the JSON generated has no
whitespace outside strings. Honoured for JSON constraints, refused by name beside any other.
Live server on the fixture model, which writes whitespace wherever a grammar lets it."""
from __future__ import annotations

import json

import httpx
import jsonschema
import pytest
from json_text import outside_strings

openai = pytest.importorskip("openai")


ROWS = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
    "size": {"type": "object", "properties": {"w": {"type": "integer"}, "h": {"type": "integer"}},
             "required": ["w", "h"]}},
    "required": ["name", "tags", "size"]}
MSGS = [{"role": "user", "content": "Describe it."}]
SEEDS = [0, 1, 2, 3, 4, 5]
COMPACT = {"structured_outputs": {"disable_any_whitespace": True}}


def whitespace_outside_strings(text: str) -> bool:
    return any(ch in " \t\n\r" for ch in outside_strings(text))


@pytest.mark.parametrize("text, found", [
    ('{"a":1}', False), ('{"a": 1}', True), ('{"a b":"c d"}', False), ('["\\" x"]', False),
    ('["\\\\" ,1]', True), ('\n{}', True),
])
def test_whitespace_outside_strings(text, found):
    assert whitespace_outside_strings(text) == found


@pytest.fixture(scope="module")
def client(live):
    return live.openai()


# (request fields without the flag, the same with it, check of the document)
CASES = [
    ({"structured_outputs": {"json": ROWS}},
     {"structured_outputs": {"json": ROWS, "disable_any_whitespace": True}}, ROWS),
    ({"structured_outputs": {"json_object": True}},
     {"structured_outputs": {"json_object": True, "disable_any_whitespace": True}},
     {"type": "object"}),
    ({"guided_json": ROWS},
     {"guided_json": ROWS, "guided_decoding_backend": "xgrammar:disable-any-whitespace"}, ROWS),
    ({"guided_json": ROWS},
     {"guided_json": ROWS,
      "guided_decoding_backend": "guidance:no-fallback,disable-any-whitespace"},
     ROWS),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": ROWS}}},
     {"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": ROWS}},
      **COMPACT}, ROWS),
]


def _chat(client, live, fields, seed) -> str:
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=120,
                                       seed=seed, extra_body=fields)
    return r.choices[0].message.content


@pytest.mark.parametrize("plain, compact, schema", CASES)
def test_disable_any_whitespace_chat(client, live, plain, compact, schema):
    texts = [_chat(client, live, compact, seed) for seed in SEEDS]
    for text in texts:
        jsonschema.validate(json.loads(text), schema)
        assert not whitespace_outside_strings(text), text
    # the same requests without the flag do get whitespace from this model: the check above
    # would see it if the flag were ignored
    assert any(whitespace_outside_strings(_chat(client, live, plain, seed)) for seed in SEEDS)


def test_disable_any_whitespace_completions_and_responses(client, live):
    for seed in SEEDS[:3]:
        r = client.completions.create(model=live.model_name, prompt="JSON:", max_tokens=120,
                                      seed=seed, extra_body={"guided_json": ROWS, **COMPACT})
        text = r.choices[0].text
        jsonschema.validate(json.loads(text), ROWS)
        assert not whitespace_outside_strings(text), text
        r = client.responses.create(model=live.model_name, input="JSON", max_output_tokens=120,
                                    extra_body={"seed": seed, "guided_json": ROWS, **COMPACT})
        assert not whitespace_outside_strings(r.output_text), r.output_text
        jsonschema.validate(json.loads(r.output_text), ROWS)


def test_disable_any_whitespace_with_tools_auto(client, live):
    # one grammar for the answer or a call: neither has whitespace outside strings
    tools = [{"type": "function", "function": {"name": "measure", "parameters": ROWS}}]
    for seed in SEEDS:
        r = client.chat.completions.create(
            model=live.model_name, messages=MSGS, max_tokens=160, seed=seed, tools=tools,
            extra_body={"guided_json": ROWS, **COMPACT})
        msg = r.choices[0].message
        if msg.tool_calls:
            for call in msg.tool_calls:
                assert not whitespace_outside_strings(call.function.arguments), call
        else:
            assert not whitespace_outside_strings(msg.content), msg.content


# (body fields, the field the 400 names)
REFUSED = [
    ({"structured_outputs": {"regex": "[a-c]+", "disable_any_whitespace": True}},
     "structured_outputs.disable_any_whitespace"),
    ({"structured_outputs": {"grammar": 'root ::= "a b"', "disable_any_whitespace": True}},
     "structured_outputs.disable_any_whitespace"),
    ({"structured_outputs": {"choice": ["a b", "c"], "disable_any_whitespace": True}},
     "structured_outputs.disable_any_whitespace"),
    ({"guided_regex": "[a-c]+", "guided_decoding_backend": "xgrammar:disable-any-whitespace"},
     "guided_decoding_backend"),
    ({"llamay_grammar": 'root ::= "a"', **COMPACT}, "structured_outputs.disable_any_whitespace"),
    (COMPACT, "structured_outputs.disable_any_whitespace"),
    ({"structured_outputs": {"json": ROWS, "disable_any_whitespace": "yes"}},
     "structured_outputs.disable_any_whitespace"),
    ({"guided_json": ROWS, "guided_decoding_backend": "xgrammar:whitespace-pattern"},
     "guided_decoding_backend"),
]


@pytest.mark.parametrize("fields, param", REFUSED)
def test_disable_any_whitespace_refused_by_name(live, fields, param):
    r = httpx.post(live.base + "/v1/chat/completions", timeout=60, json={
        "model": live.model_name, "messages": MSGS, "max_tokens": 4, **fields})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert f"'{param}'" in err["message"] and err["param"] == param
