"""Ollama shape (/api/*) against a live server with the official `ollama` client."""
from __future__ import annotations

import json
import re

import httpx
import jsonschema
import pytest

ollama = pytest.importorskip("ollama")


WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
           "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                            "parameters": WEATHER}}]
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"]}
MSGS = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def client(live):
    return live.ollama()


def test_tags_show_version(client, live):
    tags = client.list()
    assert [m.model for m in tags.models] == [live.model_name]
    assert tags.models[0].size > 0 and len(tags.models[0].digest) == 64
    assert tags.models[0].details.format == "gguf"
    info = client.show(live.model_name)
    assert info.details.family == "llama"
    assert "<|im_start|>" in info.template
    assert info.modelinfo["general.architecture"] == "llama"
    assert re.match(r"\d+\.\d+", httpx.get(live.base + "/api/version").json()["version"])
    with pytest.raises(ollama.ResponseError) as e:
        client.show("no-such-model")
    assert e.value.status_code == 404


def test_show_unknown_model_in_ollamas_words(live):
    r = httpx.post(live.base + "/api/show", json={"model": "no-such-model"})
    assert (r.status_code, r.json()) == (404, {"error": "model 'no-such-model' not found"})


def test_chat_stream_default_and_whole_agree(client, live):
    opts = {"num_predict": 12, "seed": 3, "temperature": 1.0}
    parts = list(client.chat(model=live.model_name, messages=MSGS, options=opts, stream=True))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    assert parts[-1].done_reason in ("stop", "length")
    streamed = "".join(p.message.content for p in parts)
    whole = client.chat(model=live.model_name, messages=MSGS, options=opts, stream=False)
    assert whole.message.content == streamed and whole.done_reason == parts[-1].done_reason
    assert 0 < whole.eval_count <= 12 and whole.prompt_eval_count > 0
    # streaming is on when the body says nothing (raw HTTP: several NDJSON lines)
    r = httpx.post(live.base + "/api/chat", json={"model": live.model_name, "messages": MSGS,
                                                   "options": opts}, timeout=120)
    lines = [json.loads(x) for x in r.text.splitlines() if x]
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert lines[-1]["done"] is True and "".join(x["message"]["content"] for x in lines) == streamed


def test_num_predict_length(client, live):
    r = client.chat(model=live.model_name, messages=MSGS, options={"num_predict": 3, "seed": 1,
                                                                   "stop": []})
    assert r.eval_count <= 3
    assert r.done_reason in ("length", "stop")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt, check", [
    ("json", lambda s: json.loads(s) is not None or True),
    (PERSON, lambda s: jsonschema.validate(json.loads(s), PERSON) is None),
])
def test_chat_format(client, live, fmt, check, stream):
    kw = dict(model=live.model_name, messages=MSGS, format=fmt,
              options={"num_predict": 64, "seed": 2})
    if stream:
        text = "".join(p.message.content for p in client.chat(**kw, stream=True))
    else:
        text = client.chat(**kw).message.content
    assert check(text), text


@pytest.mark.parametrize("opts, check", [
    ({"llamay_regex": "[xy]{4}"}, lambda s: re.fullmatch("[xy]{4}", s)),
    ({"llamay_grammar": 'root ::= "a" "b"*'}, lambda s: re.fullmatch("ab*", s)),
    ({"llamay_schema": {"enum": [1, 2, 3]}, "llamay_choice_logprobs": True},
     lambda s: s.strip() in "123"),
])
def test_options_extensions(client, live, opts, check):
    r = client.chat(model=live.model_name, messages=MSGS,
                    options={"num_predict": 16, "seed": 1, **opts})
    assert check(r.message.content), r.message.content


def test_choice_logprobs_field(live):
    r = httpx.post(live.base + "/api/chat", json={
        "model": live.model_name, "messages": MSGS, "stream": False,
        "options": {"llamay_lexicon": ["up", "down"], "llamay_choice_logprobs": True, "seed": 1}},
        timeout=120).json()
    [out] = r["llamay_choice_logprobs"]
    assert out["alternatives"] == ["up", "down"] and abs(sum(out["posterior"]) - 1) < 1e-9


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tools(client, live, stream):
    # Ollama has no tool_choice: tools mean auto (free text until the model opens a call)
    kw = dict(model=live.model_name, messages=MSGS, tools=TOOLS,
              options={"num_predict": 24, "seed": 7})
    if stream:
        parts = list(client.chat(**kw, stream=True))
        calls = [c for p in parts for c in (p.message.tool_calls or [])]
        text = "".join(p.message.content for p in parts)
    else:
        r = client.chat(**kw)
        calls, text = r.message.tool_calls or [], r.message.content
    for c in calls:
        assert c.function.name == "get_weather"
        jsonschema.validate(dict(c.function.arguments), WEATHER)
    assert "</tool_call>" not in text


def test_chat_tool_history(client, live):
    msgs = MSGS + [{"role": "assistant", "content": "",
                    "tool_calls": [{"function": {"name": "get_weather",
                                                 "arguments": {"city": "Oslo"}}}]},
                   {"role": "tool", "content": "sunny", "tool_name": "get_weather"}]
    r = client.chat(model=live.model_name, messages=msgs, tools=TOOLS, options={"num_predict": 8})
    assert r.done


def test_generate(client, live):
    opts = {"num_predict": 10, "seed": 4, "temperature": 1.0}
    whole = client.generate(model=live.model_name, prompt="Once", options=opts)
    streamed = "".join(p.response for p in client.generate(model=live.model_name, prompt="Once",
                                                              options=opts, stream=True))
    assert whole.response == streamed and whole.done
    raw = client.generate(model=live.model_name, prompt="Once", options=opts, raw=True)
    assert raw.prompt_eval_count < whole.prompt_eval_count      # no chat template around it
    js = client.generate(model=live.model_name, prompt="Person:", format=PERSON,
                         options={"num_predict": 64, "seed": 4}, system="Answer in JSON")
    jsonschema.validate(json.loads(js.response), PERSON)
