"""The truncation gate: when max_tokens runs out inside a tool call or a schema document,
the closer ends it; every API shape returns a parseable, schema-valid result and says the
budget ran out (finish_reason length / stop_reason max_tokens / done_reason length)."""
from __future__ import annotations

import json

import jsonschema
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")


pytestmark = pytest.mark.truncation

BUDGETS = [1, 2, 3, 5, 8, 16, 64]
# budgets this small cannot finish these documents, so they must end by the budget
SURELY_CUT = 8

ORDER = {"type": "object",
         "properties": {"item": {"type": "string", "minLength": 2, "maxLength": 20},
                        "qty": {"type": "integer"},
                        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1,
                                 "maxItems": 3},
                        "note": {"type": "object", "properties": {"text": {"type": "string"}},
                                 "required": ["text"]}},
         "required": ["item", "qty", "tags", "note"]}
LOOKUP = {"type": "object", "properties": {"id": {"type": "integer"}},
          "required": ["id"]}
SCHEMAS = {"place_order": ORDER, "lookup": LOOKUP}
OA_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in SCHEMAS.items()]
AN_TOOLS = [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()]
MSGS = [{"role": "user", "content": "Order two apples"}]


@pytest.fixture(scope="module")
def clients(live):
    return (live.openai(),
            live.anthropic(),
            live.ollama())


def _valid_call(name, args):
    assert name in SCHEMAS
    jsonschema.validate(args, SCHEMAS[name])


@pytest.mark.parametrize("budget", BUDGETS)
def test_openai_tool_call(clients, live, budget):
    r = clients[0].chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=budget,
                                           tools=OA_TOOLS,
                                           tool_choice={"type": "function",
                                                        "function": {"name": "place_order"}},
                                           seed=budget)
    ch = r.choices[0]
    assert ch.message.tool_calls, ch.message.content
    for c in ch.message.tool_calls:
        _valid_call(c.function.name, json.loads(c.function.arguments))
    assert r.usage.completion_tokens <= budget
    if budget <= SURELY_CUT:
        assert ch.finish_reason == "length"
    else:
        assert ch.finish_reason in ("length", "tool_calls")


@pytest.mark.parametrize("budget", BUDGETS)
def test_openai_tool_call_streamed(clients, live, budget):
    calls, finish = [], []
    for c in clients[0].chat.completions.create(model=live.model_name, messages=MSGS,
                                                max_tokens=budget, tools=OA_TOOLS,
                                                tool_choice="required", seed=budget, stream=True):
        for tc in c.choices[0].delta.tool_calls or []:
            calls.append(tc)
        if c.choices[0].finish_reason:
            finish.append(c.choices[0].finish_reason)
    assert calls
    for tc in calls:
        _valid_call(tc.function.name, json.loads(tc.function.arguments))
    assert len(finish) == 1 and (finish[0] == "length" or budget > SURELY_CUT)


@pytest.mark.parametrize("budget", BUDGETS)
def test_openai_schema(clients, live, budget):
    r = clients[0].chat.completions.create(
        model=live.model_name, messages=MSGS, max_tokens=budget, seed=budget,
        response_format={"type": "json_schema", "json_schema": {"name": "order", "schema": ORDER}})
    jsonschema.validate(json.loads(r.choices[0].message.content), ORDER)
    assert r.choices[0].finish_reason == "length" or budget > SURELY_CUT


@pytest.mark.parametrize("budget", BUDGETS)
def test_anthropic_tool_use(clients, live, budget):
    m = clients[1].messages.create(model=live.model_name, max_tokens=budget, messages=MSGS,
                                   tools=AN_TOOLS, tool_choice={"type": "any"},
                                   extra_body={"seed": budget})
    uses = [b for b in m.content if b.type == "tool_use"]
    assert uses
    for u in uses:
        _valid_call(u.name, u.input)
    assert m.stop_reason == "max_tokens" or (budget > SURELY_CUT and m.stop_reason == "tool_use")


@pytest.mark.parametrize("budget", BUDGETS)
def test_anthropic_schema_streamed(clients, live, budget):
    with clients[1].messages.stream(model=live.model_name, max_tokens=budget, messages=MSGS,
                                    extra_body={"seed": budget, "llamay_schema": ORDER}) as s:
        m = s.get_final_message()
    jsonschema.validate(json.loads(m.content[0].text), ORDER)
    assert m.stop_reason == "max_tokens" or budget > SURELY_CUT


@pytest.mark.parametrize("budget", BUDGETS)
def test_ollama_schema(clients, live, budget):
    r = clients[2].chat(model=live.model_name, messages=MSGS, format=ORDER,
                        options={"num_predict": budget, "seed": budget}, stream=False)
    jsonschema.validate(json.loads(r.message.content), ORDER)
    assert r.done_reason == "length" or budget > SURELY_CUT


@pytest.mark.parametrize("budget", BUDGETS)
def test_ollama_lazy_tool_call_or_text(clients, live, budget):
    """Ollama tools are `auto`: whatever the cut, a call that appears is complete and valid."""
    parts = list(clients[2].chat(model=live.model_name, messages=MSGS, tools=OA_TOOLS,
                                 options={"num_predict": budget, "seed": budget}, stream=True))
    for p in parts:
        for c in p.message.tool_calls or []:
            _valid_call(c.function.name, dict(c.function.arguments))
    text = "".join(p.message.content for p in parts)
    assert "<tool_call>" not in text
    assert parts[-1].done_reason in ("length", "stop")
