"""Llama 3.1 / 3.2 / 3.3: `{"name": "NAME", "parameters": {...}}` as the whole assistant turn.

Their templates ask for exactly this ('Respond in the format {"name": function name,
"parameters": dictionary of argument name and its value}') and write earlier calls the same
way (`'{"name": "' + name + '", "parameters": ' + arguments|tojson + '}'`), one call per turn
(the template refuses more: "This model only supports single tool-calls at once!"), ended by
`<|eot_id|>`. `<|python_tag|>` opens the built-in tools' `name.call(k="v")` form, which the
OpenAI / Anthropic / Ollama tool lists cannot name; custom tools never use it.

Lazy trigger (tool_choice auto): the call's own opening `{"name": `, as llama.cpp's handler
treats it: text that begins a call is a call.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import cengine

from .base import Dialect, leading_json, offered_call
from .common import ToolSpec

OPEN = '{"name": '


class Llama3(Dialect):
    name = "llama3"
    family = "Llama 3.1, 3.2, 3.3"
    CALL_POINTERS = ("/name", "/parameters")
    parallel_calls = False

    @classmethod
    def detect(cls, template: str, specials) -> int:
        if '"parameters": dictionary of argument name' in template or (
                "<|python_tag|>" in template and "<|start_header_id|>" in template):
            return 20
        return 0

    TRIGGER = OPEN

    def call_text(self, name: Any, arguments: Any) -> str:
        return '{"name": ' + json.dumps(name) + ', "parameters": ' + json.dumps(arguments) + "}"

    def tool_instructions(self) -> str:
        return ('To call a function, respond with JSON for a function call, in the format '
                '{"name": function name, "parameters": dictionary of argument name and its '
                'value}.')

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        calls = [cengine.Concat(json.dumps(t.name, ensure_ascii=False) + ', "parameters": ',
                                cengine.JsonSchema(t.parameters))
                 for t in tools]
        return cengine.TriggeredRegion(OPEN, cengine.OneOf(*calls), "}")

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        got = leading_json(OPEN + text)
        if got is None:
            return [], 0, False
        obj, end = got
        if not isinstance(obj, dict):
            return [None], end - len(OPEN), True
        args = obj.get("parameters", obj.get("arguments"))
        return [offered_call(obj.get("name"), args, tools)], end - len(OPEN), True


DIALECT = Llama3()
