"""Agent loops: ten-turn tool-using conversations, tool results fed back, under tight budgets,
never yield an unparseable or schema-invalid call (OpenAI and Anthropic shapes)."""
from __future__ import annotations

import json

import jsonschema
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


pytestmark = pytest.mark.truncation

SEARCH = {"type": "object", "properties": {"query": {"type": "string", "maxLength": 24},
                                           "limit": {"type": "integer"}},
          "required": ["query"]}
FILE = {"type": "object", "properties": {"path": {"type": "string", "maxLength": 16},
                                         "mode": {"enum": ["r", "w"]},
                                         "lines": {"type": "array", "items": {"type": "integer"},
                                                   "maxItems": 3}},
        "required": ["path", "mode"]}
SCHEMAS = {"search": SEARCH, "open_file": FILE}
OA_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in SCHEMAS.items()]
AN_TOOLS = [{"name": n, "input_schema": s} for n, s in SCHEMAS.items()]
BUDGETS = [1, 2, 3, 5, 8, 13, 21, 4, 34, 6]      # ten turns, mostly tighter than a whole call
CHOICES = ["required", "auto", "required", {"type": "function", "function": {"name": "open_file"}}]


@pytest.mark.parametrize("seed", [0, 1])
def test_openai_agent_loop(live, seed):
    c = live.openai()
    msgs = [{"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Find the config"}]
    n_calls = 0
    for turn, budget in enumerate(BUDGETS):
        choice = CHOICES[(turn + seed) % len(CHOICES)]
        r = c.chat.completions.create(model=live.model_name, messages=msgs, tools=OA_TOOLS,
                                      tool_choice=choice, max_tokens=budget, seed=seed * 100 + turn)
        m = r.choices[0].message
        calls = m.tool_calls or []
        if choice != "auto":
            assert calls, f"turn {turn}: a forced call is missing"
        for call in calls:
            args = json.loads(call.function.arguments)          # parses
            jsonschema.validate(args, SCHEMAS[call.function.name])
            if isinstance(choice, dict):
                assert call.function.name == "open_file"
        n_calls += len(calls)
        msgs.append({"role": "assistant", "content": m.content,
                     "tool_calls": [cl.model_dump() for cl in calls] or None})
        for call in calls:
            msgs.append({"role": "tool", "tool_call_id": call.id,
                         "content": json.dumps({"ok": True, "turn": turn})})
        if not calls:
            msgs.append({"role": "user", "content": "Go on."})
    assert n_calls >= 7


def test_anthropic_agent_loop(live):
    a = live.anthropic()
    msgs = [{"role": "user", "content": "Find the config"}]
    for turn, budget in enumerate(BUDGETS):
        m = a.messages.create(model=live.model_name, max_tokens=budget, messages=msgs,
                              tools=AN_TOOLS, tool_choice={"type": "any"},
                              extra_body={"seed": turn})
        uses = [b for b in m.content if b.type == "tool_use"]
        assert uses, f"turn {turn}"
        for u in uses:
            jsonschema.validate(u.input, SCHEMAS[u.name])
        msgs.append({"role": "assistant",
                     "content": [b.model_dump(exclude_none=True) for b in m.content]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": f"result {turn}"}
            for u in uses]})
