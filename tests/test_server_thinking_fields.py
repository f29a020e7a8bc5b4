"""Each API's words for a reasoning model's thought (server/api/thinking.py), as one
Thinking: on or off, a budget in thought tokens, the named effort; bad values are 400s naming
the field."""
from __future__ import annotations

import pytest

from server.api import thinking
from server.api.errors import InvalidRequest
from server.api.thinking import Thinking

CASES = [
    # (parser, body, options, expected)
    (thinking.openai_chat, {}, None, Thinking()),
    (thinking.openai_chat, {"reasoning_effort": "none"}, None, Thinking(False, None, "none")),
    (thinking.openai_chat, {"reasoning_effort": "minimal"}, None, Thinking(True, 128, "minimal")),
    (thinking.openai_chat, {"reasoning_effort": "low"}, None, Thinking(True, 512, "low")),
    (thinking.openai_chat, {"reasoning_effort": "medium"}, None, Thinking(True, 2048, "medium")),
    (thinking.openai_chat, {"reasoning_effort": "high"}, None, Thinking(True, 8192, "high")),
    (thinking.openai_chat, {"chat_template_kwargs": {"enable_thinking": False}}, None,
     Thinking(False)),
    (thinking.openai_chat, {"llamay_reasoning_budget": 7}, None, Thinking(True, 7)),
    (thinking.openai_chat, {"llamay_reasoning_budget": 0}, None, Thinking(False)),
    # the exact budget wins over the effort's, the effort is kept for templates that take it
    (thinking.openai_chat, {"reasoning_effort": "high", "llamay_reasoning_budget": 9}, None,
     Thinking(True, 9, "high")),
    (thinking.openai_responses, {"reasoning": {"effort": "low"}}, None, Thinking(True, 512,
                                                                                "low")),
    (thinking.anthropic, {"thinking": {"type": "enabled", "budget_tokens": 1024}}, None,
     Thinking(True, 1024)),
    (thinking.anthropic, {"thinking": {"type": "disabled"}}, None, Thinking(False)),
    (thinking.ollama, {"think": True}, {}, Thinking(True)),
    (thinking.ollama, {"think": False}, {}, Thinking(False)),
    (thinking.ollama, {"think": "medium"}, {}, Thinking(True, 2048, "medium")),
    (thinking.ollama, {}, {"llamay_reasoning_budget": 3}, Thinking(True, 3)),
]


@pytest.mark.parametrize("parse,body,options,expected", CASES)
def test_request_fields(parse, body, options, expected):
    got = parse(body) if options is None else parse(body, options)
    assert got == expected


BAD = [
    (thinking.openai_chat, {"reasoning_effort": "max"}, None, "reasoning_effort"),
    (thinking.openai_chat, {"llamay_reasoning_budget": -1}, None, "llamay_reasoning_budget"),
    (thinking.openai_chat, {"llamay_reasoning_budget": True}, None, "llamay_reasoning_budget"),
    (thinking.openai_responses, {"reasoning": "high"}, None, "reasoning"),
    (thinking.openai_responses, {"reasoning": {"effort": "x"}}, None, "reasoning.effort"),
    (thinking.anthropic, {"thinking": {"type": "enabled"}}, None, "thinking.budget_tokens"),
    (thinking.anthropic, {"thinking": {"type": "maybe"}}, None, "thinking"),
    (thinking.ollama, {"think": "minimal"}, {}, "think"),
]


@pytest.mark.parametrize("parse,body,options,param", BAD)
def test_bad_values_name_the_field(parse, body, options, param):
    with pytest.raises(InvalidRequest) as e:
        parse(body) if options is None else parse(body, options)
    assert e.value.param == param
