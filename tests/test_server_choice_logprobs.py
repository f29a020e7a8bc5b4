"""llamay_choice_logprobs in every API shape (OpenAI chat, completions, Responses; Anthropic;
Ollama chat and generate), whole and streamed, on the live fixture server: one list of
decisions at the top level of the response object (of the final event in streams, and only
there), each with the contract's fields, at the pointers of the routing schema, `chosen`
equal to the value the output holds; tool names as the decision "tool"."""
from __future__ import annotations

import json
import math

import httpx
import pytest

ROUTING = {"type": "object",
           "properties": {"intent": {"enum": ["refund", "cancel", "track"]},
                          "urgent": {"type": "boolean"}},
           "required": ["intent", "urgent"]}
TOOLS = [{"type": "function", "function": {
    "name": name, "description": "", "parameters": {
        "type": "object", "properties": {"unit": {"enum": ["f", "c"]}}, "required": ["unit"]}}}
    for name in ["get_weather", "get_time", "send_email"]]
MSGS = [{"role": "user", "content": "I want my money back"}]
FIELDS = ["pointer", "alternatives", "logprobs", "posterior", "probed_mass", "chosen"]
TIMEOUT = 120

# route -> (body beyond model/messages, how to read the text, how to read the list)
ROUTES = {
    "chat": ("/v1/chat/completions", {"messages": MSGS, "max_tokens": 200, "seed": 4,
                                      "llamay_schema": ROUTING}),
    "completions": ("/v1/completions", {"prompt": "Route: I want my money back\n",
                                        "max_tokens": 200, "seed": 4, "llamay_schema": ROUTING}),
    "responses": ("/v1/responses", {"input": "I want my money back", "max_output_tokens": 200,
                                    "seed": 4, "text": {"format": {
                                        "type": "json_schema", "name": "r", "schema": ROUTING}}}),
    "anthropic": ("/v1/messages", {"messages": MSGS, "max_tokens": 200, "seed": 4,
                                   "llamay_schema": ROUTING}),
    "ollama-chat": ("/api/chat", {"messages": MSGS, "format": ROUTING,
                                  "options": {"num_predict": 200, "seed": 4}}),
    "ollama-generate": ("/api/generate", {"prompt": "I want my money back", "format": ROUTING,
                                          "options": {"num_predict": 200, "seed": 4}}),
}


def _body(live, route, stream):
    path, extra = ROUTES[route]
    body = {"model": live.model_name, "stream": stream, **json.loads(json.dumps(extra))}
    if route.startswith("ollama"):
        body["options"]["llamay_choice_logprobs"] = True
    else:
        body["llamay_choice_logprobs"] = True
    return path, body


def _whole_text(route, r):
    if route == "chat":
        return r["choices"][0]["message"]["content"]
    if route == "completions":
        return r["choices"][0]["text"]
    if route == "responses":
        return r["output"][0]["content"][0]["text"]
    if route == "anthropic":
        return r["content"][0]["text"]
    return r["message"]["content"] if route == "ollama-chat" else r["response"]


def _events(route, resp):
    """(text, [event objects]) of a stream."""
    out = []
    if route.startswith("ollama"):
        out = [json.loads(line) for line in resp.text.splitlines() if line.strip()]
    else:
        for line in resp.text.splitlines():
            if line.startswith("data: ") and line[6:] != "[DONE]":
                out.append(json.loads(line[6:]))
    text = ""
    for e in out:
        if route == "chat":
            for c in e.get("choices", []):
                text += c["delta"].get("content") or ""
        elif route == "completions":
            for c in e.get("choices", []):
                text += c.get("text") or ""
        elif route == "responses":
            if e.get("type") == "response.output_text.delta":
                text += e["delta"]
        elif route == "anthropic":
            if e.get("type") == "content_block_delta":
                text += e["delta"].get("text", "")
        else:
            text += (e.get("message") or {}).get("content", "") if route == "ollama-chat" \
                else e.get("response", "")
    return text, out


def _final_list(route, events):
    carrying = [e for e in events if "llamay_choice_logprobs" in e
                or "llamay_choice_logprobs" in (e.get("response") or {})]
    assert len(carrying) == 1, "exactly one event carries the list"
    e = carrying[0]
    if route == "responses":
        assert e["type"] == "response.completed"
        return e["response"]["llamay_choice_logprobs"]
    if route == "anthropic":
        assert e["type"] == "message_delta"
    elif route.startswith("ollama"):
        assert e["done"] is True
    else:
        assert e["choices"][0]["finish_reason"] is not None
    return e["llamay_choice_logprobs"]


def check_list(decisions, doc):
    assert [d["pointer"] for d in decisions] == ["/intent", "/urgent"]
    for d in decisions:
        assert list(d)[:len(FIELDS)] == FIELDS
        assert len(d["alternatives"]) == len(d["logprobs"]) == len(d["posterior"])
        assert sum(d["posterior"]) == pytest.approx(1.0)
        assert d["probed_mass"] == pytest.approx(sum(math.exp(x) for x in d["logprobs"]),
                                                 rel=1e-9)
        assert d["chosen"] == doc[d["pointer"][1:]]
    assert decisions[0]["alternatives"] == ["refund", "cancel", "track"]    # the enum's order
    assert decisions[1]["alternatives"] == [False, True]


@pytest.mark.parametrize("route", list(ROUTES))
def test_choice_logprobs_whole_response(live, route):
    path, body = _body(live, route, False)
    r = httpx.post(live.base + path, json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    r = r.json()
    check_list(r["llamay_choice_logprobs"], json.loads(_whole_text(route, r)))


@pytest.mark.parametrize("route", list(ROUTES))
def test_choice_logprobs_stream_final_event(live, route):
    path, body = _body(live, route, True)
    r = httpx.post(live.base + path, json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    text, events = _events(route, r)
    check_list(_final_list(route, events), json.loads(text))
    # the same request whole gives the same list (seeded)
    path, body = _body(live, route, False)
    whole = httpx.post(live.base + path, json=body, timeout=TIMEOUT).json()
    assert whole["llamay_choice_logprobs"] == _final_list(route, events)


@pytest.mark.parametrize("route, body", [
    ("/v1/chat/completions", {"messages": MSGS, "tools": TOOLS, "tool_choice": "required",
                              "parallel_tool_calls": False}),
    ("/v1/responses", {"input": "hi", "tools": [{"type": "function", **t["function"]}
                                                for t in TOOLS],
                       "tool_choice": "required", "parallel_tool_calls": False}),
    ("/v1/messages", {"messages": MSGS, "tool_choice": {"type": "any"},
                      "tools": [{"name": t["function"]["name"],
                                 "input_schema": t["function"]["parameters"]} for t in TOOLS]}),
])
def test_choice_logprobs_tool_name(live, route, body):
    body = {"model": live.model_name, "max_tokens": 120, "max_output_tokens": 120, "seed": 2,
            "llamay_choice_logprobs": True, **body}
    if route == "/v1/messages":
        body.pop("max_output_tokens")
    elif route == "/v1/responses":
        body.pop("max_tokens")
    else:
        body.pop("max_output_tokens")
    r = httpx.post(live.base + route, json=body, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    r = r.json()
    if route == "/v1/chat/completions":
        names = [c["function"]["name"] for c in r["choices"][0]["message"]["tool_calls"]]
        units = [json.loads(c["function"]["arguments"])["unit"]
                 for c in r["choices"][0]["message"]["tool_calls"]]
    elif route == "/v1/responses":
        calls = [o for o in r["output"] if o["type"] == "function_call"]
        names = [c["name"] for c in calls]
        units = [json.loads(c["arguments"])["unit"] for c in calls]
    else:
        calls = [b for b in r["content"] if b["type"] == "tool_use"]
        names = [c["name"] for c in calls]
        units = [c["input"]["unit"] for c in calls]
    decisions = r["llamay_choice_logprobs"]
    tool = [d for d in decisions if d["pointer"] == "tool"]
    assert [d["chosen"] for d in tool] == names
    # the tools in the order offered
    assert tool[0]["alternatives"] == ["get_weather", "get_time", "send_email"]
    assert [d["chosen"] for d in decisions if d["pointer"] == "/unit"] == units
    # an argument's enum in the order of the chosen tool's schema
    assert all(d["alternatives"] == ["f", "c"] for d in decisions if d["pointer"] == "/unit")
    assert [d["call"] for d in tool] == list(range(len(names)))
    for d in decisions:
        assert sum(d["posterior"]) == pytest.approx(1.0)


@pytest.mark.parametrize("extra, status", [
    ({"llamay_regex": "[ab]+"}, 400),
    ({"llamay_grammar": 'root ::= "a"'}, 400),
    ({}, 400),                                      # free text: no decision points
    ({"llamay_format": "json"}, 200),               # any JSON: no finite choice anywhere
    ({"llamay_schema": {"type": "string", "maxLength": 3}}, 200),
])
def test_choice_logprobs_needs_json_tools_or_a_lexicon(live, extra, status):
    r = httpx.post(live.base + "/v1/chat/completions", json={
        "model": live.model_name, "messages": MSGS, "max_tokens": 16, "seed": 1,
        "llamay_choice_logprobs": True, **extra}, timeout=TIMEOUT)
    assert r.status_code == status, r.text
    if status == 400:
        assert "llamay_choice_logprobs" in r.text
    else:
        assert r.json()["llamay_choice_logprobs"] == []


def test_choice_logprobs_absent_unless_asked(live):
    r = httpx.post(live.base + "/v1/chat/completions", json={
        "model": live.model_name, "messages": MSGS, "max_tokens": 40, "seed": 1,
        "llamay_schema": ROUTING}, timeout=TIMEOUT).json()
    assert "llamay_choice_logprobs" not in r
