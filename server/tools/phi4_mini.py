"""Phi-4-mini's tool calls: `<|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>`.

Its chat template (Phi-4-mini-instruct's, the same as Phi-4-multimodal-instruct's) takes the
tool list as JSON text from the system message's `tools` field, between `<|tool|>` and
`<|/tool|>`, and writes every turn's content only: it writes no earlier call. The call form is
the one the model is documented to produce (Microsoft's tool-enabled format; the Berkeley
function-calling leaderboard's handler reads `<|tool_call|>` JSON list `<|/tool_call|>`): a
JSON list of {"name", "arguments"} objects between the `<|tool_call|>` and `<|/tool_call|>`
special tokens. (`functools[...]` is a different, prompted format some serving examples ask
for; the model's own tokens are these.)
"""
from __future__ import annotations

from typing import Any, Sequence

import cengine

from .base import Dialect
from .common import ToolSpec
from .granite import call_object, json_list, read_json_list

OPEN = "<|tool_call|>"
CLOSE = "<|/tool_call|>"


class Phi4Mini(Dialect):
    name = "phi4_mini"
    family = "Phi-4-mini (and Phi-4-multimodal)"
    TRIGGER = OPEN
    DETECT_ALL, DETECT_SCORE = ("<|tool|>", "<|/tool|>"), 30

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        """OPEN, a JSON list of calls (one, when not parallel), CLOSE."""
        return cengine.TriggeredRegion(self.tok(OPEN), json_list(tools, parallel),
                                       self.tok(CLOSE))

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        return read_json_list(text, tools, CLOSE, final)

    def call_text(self, name: Any, arguments: Any) -> str:
        return OPEN + "[" + call_object(name, arguments) + "]" + CLOSE

    def tool_instructions(self) -> str:
        return (f"To call tools, write {OPEN}, a JSON list of the calls, and {CLOSE}: "
                f'{OPEN}[{{"name": "<tool name>", "arguments": {{...}}}}]{CLOSE}')


DIALECT = Phi4Mini()
