"""The Hermes tool-call dialect: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

Prompt side: for templates that do not handle tools, a system block lists the tools and asks
for that form, earlier assistant calls are written in it and tool results become
`<tool_response>` user turns. Grammar side: under tool_choice required / named the whole
output is ("<tool_call>" call "</tool_call>")+ from the first token; under auto the text is
free until the model writes the trigger `<tool_call>`, and from there the lazy grammar
constrains the rest; under auto with an output constraint (response_format and tools) the
whole output is either one document of the constraint or the call blocks. In all, `call` is
the union over the offered tools of {"name": <that tool's name>, "arguments": <that tool's
parameter schema>}, so a function nobody offered cannot be produced and arguments always fit
their schema. The grammar is composed with
cengine's public composition API (a TriggeredRegion). Parser side: `CallStream` reads calls
back, incrementally.
"""
from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence

import cengine

from .base import Dialect
from .common import ToolCall, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# inside one call's JSON object: the pointer of the tool's name and of its arguments
# (llamay_choice_logprobs reports the name as the decision "tool")
CALL_POINTERS = ("/name", "/arguments")
# what the call region starts with: the answer beside it (tool_choice auto with a response
# format) is a JSON document, which never does
CALL_OPEN = OPEN


# --- prompt side ----------------------------------------------------------------------------
# (module-level names kept: the generic block lives in base.Dialect, written in each
# dialect's own call form; Hermes' words are its `tool_instructions`)

def tools_system_block(tools: List[dict]) -> str:
    return HERMES.tools_system_block(tools)


def call_text(name: Any, arguments: Any) -> str:
    """One call as the model is asked to write it."""
    return HERMES.call_text(name, arguments)


def plain_messages(messages: List[dict], tools: Optional[List[dict]]) -> List[dict]:
    """Tool calls, tool results and the tool list as plain text turns (messages come with text
    content and arguments as objects: server.runtime.chat_template.plain_messages)."""
    return HERMES.plain_messages(messages, tools)


# --- the dialect ----------------------------------------------------------------------------

def _decode_call(raw: str, allowed: Optional[set]) -> Optional[ToolCall]:
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or "arguments" not in obj:
        return None
    if allowed is not None and obj["name"] not in allowed:
        return None
    return ToolCall(obj["name"], obj["arguments"])


class Hermes(Dialect):
    """`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per call: Hermes 2
    Pro / 3, Qwen2.5, Qwen3 (their templates write exactly this, a newline inside each tag);
    also the generic format for templates that know no tools."""

    name = "hermes"
    family = "Hermes 2 Pro / 3, Qwen2.5, Qwen3, QwQ; the fallback"
    CALL_POINTERS = CALL_POINTERS
    TRIGGER = OPEN
    DETECT_ALL, DETECT_NONE, DETECT_SCORE = (OPEN,), ("<function=",), 10

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        """OPEN, an optional newline, one offered tool's call, an optional newline, CLOSE;
        with parallel calls more such blocks may follow, each after an optional newline."""
        nl = cengine.Repeat("\n", 0, 1)
        calls = [cengine.Tagged('{"name": ' + json.dumps(t.name, ensure_ascii=False)
                                + ', "arguments": ', cengine.JsonSchema(t.parameters), "}")
                 for t in tools]
        return cengine.TriggeredRegion(self.tok(OPEN), cengine.Concat(nl, cengine.OneOf(*calls),
                                                                      nl),
                                       self.tok(CLOSE), repeat=parallel, separator=nl)

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        end = text.find(CLOSE)
        if end < 0:
            return [], 0, False
        call = _decode_call(text[:end].strip(), {t.name for t in tools})
        return [call], end + len(CLOSE), True

    def call_text(self, name: Any, arguments: Any) -> str:
        return (OPEN + "\n" + json.dumps({"name": name, "arguments": arguments},
                                         ensure_ascii=False) + "\n" + CLOSE)

    def tool_instructions(self) -> str:
        return ("To call a tool, answer with a JSON object holding its name and its arguments "
                f"between {OPEN} and {CLOSE}, one call per block:\n"
                f'{OPEN}\n{{"name": "<tool name>", "arguments": {{...}}}}\n{CLOSE}')


HERMES = Hermes()
DIALECT = HERMES
