"""Every constraint a request carries is honoured or refused, never ignored; a finished
document ends the turn. Live server on the fixture model (random weights, so an ignored
constraint shows as output that does not fit), driven by the official clients."""
from __future__ import annotations

import json
import re

import httpx
import jsonschema
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")


PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "ok": {"type": "boolean"}},
          "required": ["name", "ok"]}
SMALL = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
GBNF = 'root ::= "yes" | "no" | "n/a"'
LARK = '?start: answer\nanswer: "yes" | "no"\n'
REGEX = "[a-c]{2,4}-[0-9]{3}"
CHOICES = ["alpha", "beta gamma", "delta"]
MSGS = [{"role": "user", "content": "Answer."}]


@pytest.fixture(scope="module")
def client(live):
    return live.openai()


def _is_object(s):
    assert isinstance(json.loads(s), dict), s


def _person(s):
    jsonschema.validate(json.loads(s), PERSON)


def _yes_no(s):
    assert s in ("yes", "no", "n/a"), s


def _regex(s):
    assert re.fullmatch(REGEX, s), s


def _choice(s):
    assert s in CHOICES, s


# (request fields, check of the output): each one constraint, in the OpenAI-shaped routes
OPENAI_FIELDS = [
    ({"response_format": {"type": "json_object"}}, _is_object),
    ({"response_format": {"type": "json_object", "schema": PERSON}}, _person),
    ({"guided_json": PERSON}, _person),
    ({"guided_json": json.dumps(PERSON)}, _person),
    ({"guided_regex": REGEX}, _regex),
    ({"guided_choice": CHOICES}, _choice),
    ({"guided_grammar": GBNF}, _yes_no),
    ({"guided_json": PERSON, "guided_decoding_backend": "xgrammar"}, _person),
    ({"structured_outputs": {"json": PERSON}}, _person),
    ({"structured_outputs": {"regex": REGEX}}, _regex),
    ({"structured_outputs": {"choice": CHOICES}}, _choice),
    ({"structured_outputs": {"grammar": GBNF, "disable_fallback": True}}, _yes_no),
    ({"structured_outputs": {"json_object": True}}, _is_object),
    ({"json_schema": PERSON}, _person),
    ({"grammar": GBNF}, _yes_no),
]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("fields, check", OPENAI_FIELDS)
def test_chat_honours(client, live, fields, check, seed):
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=80,
                                       seed=seed, extra_body=fields)
    check(r.choices[0].message.content)


@pytest.mark.parametrize("fields, check", OPENAI_FIELDS)
def test_completions_honour(client, live, fields, check):
    r = client.completions.create(model=live.model_name, prompt="Answer:", max_tokens=80, seed=3,
                                  extra_body=fields)
    check(r.choices[0].text)


@pytest.mark.parametrize("fields, check", [f for f in OPENAI_FIELDS
                                           if "response_format" not in f[0]])
def test_responses_honour(client, live, fields, check):
    r = client.responses.create(model=live.model_name, input="Answer.", max_output_tokens=80,
                                extra_body=fields)
    check(r.output_text)


@pytest.mark.parametrize("fields, check", [
    ({"output_config": {"format": {"type": "json_schema", "schema": PERSON}}}, _person),
    ({"output_format": {"type": "json_schema", "schema": PERSON}}, _person),
    ({"llamay_regex": REGEX}, _regex),
])
def test_anthropic_honours(live, fields, check):
    m = live.anthropic().messages.create(model=live.model_name, max_tokens=80, messages=MSGS,
                                         extra_body=fields)
    check(m.content[0].text)


def test_anthropic_sdk_output_config(live):
    m = live.anthropic().messages.create(
        model=live.model_name, max_tokens=80, messages=MSGS,
        output_config={"format": {"type": "json_schema", "schema": PERSON}})
    _person(m.content[0].text)


# (route, body fields, the field the 400 must name)
REFUSED = [
    ("/v1/chat/completions", {"guided_grammar": LARK}, "guided_grammar"),
    ("/v1/chat/completions", {"grammar": LARK}, "grammar"),
    ("/v1/chat/completions", {"structured_outputs": {"grammar": "start: \"a\""}},
     "structured_outputs.grammar"),
    ("/v1/chat/completions", {"structured_outputs": {"structural_tag": "{}"}},
     "structured_outputs.structural_tag"),
    ("/v1/chat/completions", {"structured_outputs": {"whitespace_pattern": " ?"}},
     "structured_outputs.whitespace_pattern"),
    ("/v1/chat/completions", {"guided_whitespace_pattern": " ?"}, "guided_whitespace_pattern"),
    ("/v1/chat/completions", {"guided_json_object": True}, "guided_json_object"),
    ("/v1/chat/completions", {"regex": "a+"}, "regex"),
    ("/v1/chat/completions", {"format": "json"}, "format"),
    ("/v1/chat/completions", {"response_schema": SMALL}, "response_schema"),
    ("/v1/chat/completions", {"logit_bias": {"50256": 100}}, "logit_bias"),
    ("/v1/chat/completions", {"response_format": {"type": "json_object", "grammar": GBNF}},
     "response_format"),
    ("/v1/chat/completions", {"response_format": {"type": "structural_tag"}},
     "response_format.type"),
    ("/v1/chat/completions", {"guided_choice": []}, "guided_choice"),
    ("/v1/completions", {"guided_grammar": LARK}, "guided_grammar"),
    ("/v1/completions", {"json_mode": True}, "json_mode"),
    ("/v1/responses", {"response_format": {"type": "json_object"}}, "response_format"),
    ("/v1/responses", {"text": {"format": {"type": "text"}, "json_schema": SMALL}},
     "text.json_schema"),
    ("/v1/messages", {"guided_json": SMALL}, "guided_json"),
    ("/v1/messages", {"response_format": {"type": "json_object"}}, "response_format"),
    ("/v1/messages", {"output_config": {"format": {"type": "json_object"}}},
     "output_config.format"),
    ("/api/chat", {"grammar": GBNF}, "grammar"),
    ("/api/chat", {"options": {"grammar": GBNF}}, "options.grammar"),
    ("/api/generate", {"json_schema": SMALL}, "json_schema"),
    ("/api/generate", {"tool_choice": "required"}, "tool_choice"),
]

# two constraints in one request: a 400 naming both
CONFLICTS = [
    ("/v1/chat/completions", {"response_format": {"type": "json_object"}, "guided_json": SMALL},
     ["response_format", "guided_json"]),
    ("/v1/chat/completions", {"guided_regex": "a", "grammar": GBNF}, ["guided_regex", "grammar"]),
    ("/v1/chat/completions", {"structured_outputs": {"json": SMALL, "regex": "a"}},
     ["structured_outputs.json", "structured_outputs.regex"]),
    ("/v1/chat/completions", {"json_schema": SMALL, "llamay_lexicon": ["a"]},
     ["json_schema", "llamay_lexicon"]),
    ("/v1/responses", {"text": {"format": {"type": "json_object"}}, "guided_choice": ["a"]},
     ["text.format", "guided_choice"]),
    ("/v1/messages", {"output_config": {"format": {"type": "json_schema", "schema": SMALL}},
                      "output_format": {"type": "json_schema", "schema": SMALL}},
     ["output_config.format", "output_format"]),
    ("/api/chat", {"format": "json", "options": {"llamay_regex": "a"}},
     ["format", "options.llamay_regex"]),
]


def _body(path, model, extra):
    if path == "/v1/completions":
        body = {"model": model, "prompt": "x", "max_tokens": 4}
    elif path == "/v1/responses":
        body = {"model": model, "input": "x", "max_output_tokens": 4}
    elif path == "/v1/messages":
        body = {"model": model, "max_tokens": 4, "messages": MSGS}
    elif path == "/api/generate":
        body = {"model": model, "prompt": "x", "stream": False, "options": {"num_predict": 4}}
    elif path == "/api/chat":
        body = {"model": model, "messages": MSGS, "stream": False, "options": {"num_predict": 4}}
    else:
        body = {"model": model, "messages": MSGS, "max_tokens": 4}
    if "options" in extra and "options" in body:
        extra = {**extra, "options": {**body["options"], **extra["options"]}}
    return {**body, **extra}


def _message(path, payload) -> str:
    if path.startswith("/api/"):
        return payload["error"]
    return payload["error"]["message"]


@pytest.mark.parametrize("path, extra, field", REFUSED)
def test_refused_by_name(live, path, extra, field):
    r = httpx.post(live.base + path, json=_body(path, live.model_name, extra), timeout=60)
    assert r.status_code == 400, r.text
    assert f"'{field}'" in _message(path, r.json())


@pytest.mark.parametrize("path, extra, fields", CONFLICTS)
def test_conflict_names_both(live, path, extra, fields):
    r = httpx.post(live.base + path, json=_body(path, live.model_name, extra), timeout=60)
    assert r.status_code == 400, r.text
    msg = _message(path, r.json())
    assert "at most one output constraint" in msg
    assert " and ".join(fields) in msg


# fields known and ignored (they cannot change the output), or empty
@pytest.mark.parametrize("path, extra", [
    ("/v1/chat/completions", {"user": "u", "metadata": {"k": "v"}, "store": False,
                              "service_tier": "auto", "logit_bias": {}}),
    ("/v1/chat/completions", {"guided_decoding_backend": "outlines", "prompt_cache_key": "k"}),
    ("/v1/chat/completions", {"structured_outputs": {"disable_any_whitespace": False}}),
    ("/v1/responses", {"store": False, "truncation": "disabled", "text": {"verbosity": "low"}}),
    ("/v1/messages", {"metadata": {"user_id": "u"}, "output_config": {"effort": "low"}}),
    ("/api/chat", {"keep_alive": "5m", "think": False}),
])
def test_known_fields_ignored(live, path, extra):
    r = httpx.post(live.base + path, json=_body(path, live.model_name, extra), timeout=60)
    assert r.status_code == 200, r.text


def test_lexicon_with_tools_auto_is_refused(live):
    r = httpx.post(live.base + "/v1/chat/completions", json=_body(
        "/v1/chat/completions", live.model_name,
        {"llamay_lexicon": ["a"], "tools": [{"type": "function", "function": {"name": "f"}}]}))
    assert r.status_code == 400 and "llamay_lexicon" in r.json()["error"]["message"]


# --- a complete document ends the turn --------------------------------------------------

def _doc_checks(text: str, finish: str, stop_word: str):
    # the fixture model writes whitespace wherever the grammar lets it: none may stand
    # around the document, and the turn ends with the document, not at the budget
    assert text == text.strip(), repr(text)
    jsonschema.validate(json.loads(text), SMALL)
    assert finish == stop_word


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_document_ends_the_turn_every_shape(live, client, seed):
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": SMALL}}
    r = client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=120,
                                       seed=seed, response_format=rf)
    _doc_checks(r.choices[0].message.content, r.choices[0].finish_reason, "stop")
    parts, finish = [], None
    for c in client.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=120,
                                            seed=seed, response_format=rf, stream=True):
        if c.choices:
            parts.append(c.choices[0].delta.content or "")
            finish = c.choices[0].finish_reason or finish
    _doc_checks("".join(parts), finish, "stop")
    r = client.completions.create(model=live.model_name, prompt="JSON:", max_tokens=120,
                                  seed=seed, extra_body={"guided_json": SMALL})
    _doc_checks(r.choices[0].text, r.choices[0].finish_reason, "stop")
    r = client.responses.create(model=live.model_name, input="JSON", max_output_tokens=120,
                                extra_body={"seed": seed},
                                text={"format": {"type": "json_schema", "name": "s",
                                                 "schema": SMALL}})
    _doc_checks(r.output_text, r.status, "completed")
    m = live.anthropic().messages.create(model=live.model_name, max_tokens=120, messages=MSGS,
                                         extra_body={"seed": seed, "llamay_schema": SMALL})
    _doc_checks(m.content[0].text, m.stop_reason, "end_turn")
    o = live.ollama().chat(model=live.model_name, messages=MSGS, format=SMALL,
                           options={"num_predict": 120, "seed": seed})
    _doc_checks(o.message.content, o.done_reason, "stop")
    o = live.ollama().generate(model=live.model_name, prompt="JSON", format=SMALL,
                               options={"num_predict": 120, "seed": seed})
    _doc_checks(o.response, o.done_reason, "stop")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_json_has_no_surrounding_whitespace(live, seed):
    # any JSON value may run to the budget (a number never has to end), but no whitespace
    # stands before or after it
    o = live.ollama().generate(model=live.model_name, prompt="JSON",
                               options={"num_predict": 40, "seed": seed, "llamay_format": "json"})
    assert o.response == o.response.strip(), repr(o.response)
    json.loads(o.response)


@pytest.mark.parametrize("seed", [0, 1])
def test_ollama_json_mode_is_an_object(live, seed):
    o = live.ollama().chat(model=live.model_name, messages=MSGS, format="json",
                           options={"num_predict": 120, "seed": seed})
    _is_object(o.message.content)


# --- Ollama tool_choice on the real decode loop ---------------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.mark.parametrize("budget", [1, 2, 5, 16])
def test_ollama_tool_choice_required_gives_a_call(live, budget):
    # without tool_choice the small model answers prose under a small budget; required makes
    # the output a call from the first token (closed by the closer when the budget is short)
    r = httpx.post(live.base + "/api/chat", json={
        "model": live.model_name, "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
                                                    "parameters": WEATHER}}],
        "tool_choice": "required", "stream": False,
        "options": {"num_predict": budget, "seed": 1}}, timeout=60)
    assert r.status_code == 200, r.text
    calls = r.json()["message"].get("tool_calls") or []
    assert calls and all(c["function"]["name"] == "get_weather" for c in calls)
    for c in calls:
        jsonschema.validate(c["function"]["arguments"], WEATHER)


def test_ignored_schema_keywords_are_logged(caplog):
    """Keywords the schema's draft does not define change nothing; the server says so."""
    import logging

    from server.api import structured
    schema = {"type": "object", "properties": {"a": {"type": "string", "javaType": "String"}},
              "propertyOrder": ["a"]}
    with caplog.at_level(logging.WARNING, logger="llamay"):
        grammar = structured.plan([("response_format", "schema", schema)]).compile()
    assert {(k.keyword, k.pointer) for k in grammar.ignored_keywords} == \
        {("javaType", "/properties/a/javaType"), ("propertyOrder", "/propertyOrder")}
    text = caplog.text
    assert "response_format" in text and "javaType at /properties/a/javaType" in text
    assert "propertyOrder at /propertyOrder" in text
