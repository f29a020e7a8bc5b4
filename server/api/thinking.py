"""What a request asks of a reasoning model's thought, in each API's own words, as one
`Thinking` (on or off, a token budget, a named effort). docs/server.md, "Reasoning models".

- OpenAI chat: `reasoning_effort` none | minimal | low | medium | high (budgets in
  server/runtime/reasoning.py EFFORT_BUDGETS; none turns thinking off), vLLM's
  `chat_template_kwargs: {"enable_thinking": false}`; Responses: `reasoning: {"effort": ...}`.
- Anthropic: `thinking: {"type": "enabled", "budget_tokens": N}` | `{"type": "disabled"}`.
- Ollama: `think`: true | false | "low" | "medium" | "high".
- Everywhere: `llamay_reasoning_budget: N`, the exact budget in thought tokens (0: off).

Unset, a model that thinks thinks, bounded only by max_tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..runtime.reasoning import EFFORT_BUDGETS
from .errors import InvalidRequest

BUDGET_FIELD = "llamay_reasoning_budget"


@dataclass(frozen=True)
class Thinking:
    on: bool = True
    budget: Optional[int] = None
    effort: Optional[str] = None

    def turn_fields(self, reasoning) -> dict:
        """The Turn's reasoning fields for a model with this reasoning format (or None)."""
        return {"reasoning": reasoning, "thinking": self.on, "thought_budget": self.budget,
                "effort": self.effort}


def _effort(value: Any, param: str, allowed=tuple(EFFORT_BUDGETS)) -> Thinking:
    if value not in allowed:
        raise InvalidRequest(f"'{param}' must be one of {', '.join(allowed)}", param=param)
    budget = EFFORT_BUDGETS[value]
    return Thinking(on=budget != 0, budget=budget if budget else None, effort=value)


def _exact(body: dict, got: Thinking) -> Thinking:
    v = body.get(BUDGET_FIELD)
    if v is None:
        return got
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidRequest(f"'{BUDGET_FIELD}' must be a non-negative integer",
                             param=BUDGET_FIELD)
    return Thinking(on=v > 0, budget=v or None, effort=got.effort)


def openai_chat(body: dict) -> Thinking:
    got = Thinking()
    if body.get("reasoning_effort") is not None:
        got = _effort(body["reasoning_effort"], "reasoning_effort")
    kwargs = body.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False:
        got = Thinking(on=False)
    return _exact(body, got)


def openai_responses(body: dict) -> Thinking:
    got = Thinking()
    r = body.get("reasoning")
    if r is not None:
        if not isinstance(r, dict):
            raise InvalidRequest("'reasoning' must be an object", param="reasoning")
        if r.get("effort") is not None:
            got = _effort(r["effort"], "reasoning.effort")
    return _exact(body, got)


def anthropic(body: dict) -> Thinking:
    got = Thinking()
    t = body.get("thinking")
    if t is not None:
        if not isinstance(t, dict) or t.get("type") not in ("enabled", "disabled"):
            raise InvalidRequest("'thinking' must be {\"type\": \"enabled\", \"budget_tokens\": N}"
                                 " or {\"type\": \"disabled\"}", param="thinking")
        if t["type"] == "disabled":
            got = Thinking(on=False)
        else:
            n = t.get("budget_tokens")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise InvalidRequest("'thinking.budget_tokens' must be a positive integer",
                                     param="thinking.budget_tokens")
            got = Thinking(on=True, budget=n)
    return _exact(body, got)


def ollama(body: dict, options: dict) -> Thinking:
    got = Thinking()
    t = body.get("think")
    if t is not None:
        if isinstance(t, bool):
            got = Thinking(on=t)
        else:
            got = _effort(t, "think", allowed=("low", "medium", "high"))
    if options.get(BUDGET_FIELD) is not None and body.get(BUDGET_FIELD) is None:
        return _exact(options, got)
    return _exact(body, got)
