"""IBM Granite's tool calls (one dialect, `granite`, two forms across versions).

- Granite 3.x (template `ibm-granite-granite-3.3-2B-Instruct`): the system prompt asks to
  "respond only with <|tool_call|> followed by a JSON list of tools used":
  `<|tool_call|>[{"name": "NAME", "arguments": {...}}, ...]`, then the end of the turn
  (`<|end_of_text|>`). `<|tool_call|>` is one special token of Granite's vocabulary. The 3.x
  template writes an earlier assistant turn's content only (never its tool_calls).
- Granite 4.0 / 4.1: the template asks for, and writes earlier calls as, Hermes' blocks:
  `<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>`, one block per call,
  blocks separated by a newline. That variant reuses Hermes' region and reader under the name
  `granite` (`for_template` picks it: a Granite template without `<|tool_call|>`).

In both the call is a JSON object {"name", "arguments"}: CALL_POINTERS ("/name",
"/arguments") (inside the 3.x list each call is its own object, as the pointer tracker reads
objects met in text).
"""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import cengine

from .base import Dialect, leading_json, offered_call
from .common import ToolSpec
from .hermes import Hermes

ROLE_START = "<|start_of_role|>"
TOOL_CALL = "<|tool_call|>"


def call_object(name: Any, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def call_parts(tools: Sequence[ToolSpec]) -> cengine.Part:
    """One call object of an offered tool, keys in the documented order, json.dumps' spacing."""
    return cengine.OneOf(*[cengine.Tagged('{"name": ' + json.dumps(t.name, ensure_ascii=False)
                                          + ', "arguments": ', cengine.JsonSchema(t.parameters),
                                          "}")
                           for t in tools])


def json_list(tools: Sequence[ToolSpec], parallel: bool) -> cengine.Part:
    """`[` one call object (more, after `, `, when parallel) `]`."""
    call = call_parts(tools)
    body = cengine.Repeat(call, 1, None, separator=", ") if parallel else call
    return cengine.Concat("[", body, "]")


def read_json_list(text: str, tools: Sequence[ToolSpec], after: str, final: bool):
    """The JSON list of calls at the start of `text`, then `after` (the region's end): the
    parse_region answer. The list is read whole (it is one JSON document); a list that is not
    a list of offered tools' calls is text."""
    got = leading_json(text)
    if got is None:
        # unfinished, or not JSON: wait while it can still become a list, else text
        stripped = text.lstrip()
        if stripped and not stripped.startswith("["):
            return [None], len(text), True
        return [], 0, False
    value, end = got
    if after:
        rest = text[end:]
        if len(rest) < len(after) and after.startswith(rest) and not final:
            return [], 0, False
        if not rest.startswith(after):
            return [None], end, True
        end += len(after)
    if not isinstance(value, list) or not value:
        return [None], end, True
    calls = [offered_call(c.get("name"), c.get("arguments"), tools) if isinstance(c, dict)
             and set(c) == {"name", "arguments"} else None for c in value]
    return ([None] if None in calls else calls), end, True


class Granite(Dialect):
    """Granite 3.x: `<|tool_call|>` then a JSON list of {"name", "arguments"} objects."""

    name = "granite"
    family = "IBM Granite 3.x (<|tool_call|>[...]), 4.0 / 4.1 (<tool_call> blocks)"

    @classmethod
    def detect(cls, template: str, specials) -> int:
        if ROLE_START in template and (TOOL_CALL in template or "<tool_call>" in template):
            return 30
        return 0

    def for_template(self, template: Optional[str]) -> Dialect:
        if template and TOOL_CALL not in template and "<tool_call>" in template:
            return GRANITE4
        return self

    TRIGGER = TOOL_CALL

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        return cengine.TriggeredRegion(self.tok(TOOL_CALL), json_list(tools, parallel), "")

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        return read_json_list(text, tools, "", final)

    def call_text(self, name: Any, arguments: Any) -> str:
        return TOOL_CALL + "[" + call_object(name, arguments) + "]"

    def tool_instructions(self) -> str:
        return (f"To call tools, respond only with {TOOL_CALL} followed by a JSON list of the "
                f'calls: {TOOL_CALL}[{{"name": "<tool name>", "arguments": {{...}}}}]')


class Granite4(Hermes):
    """Granite 4.0 / 4.1: Hermes' `<tool_call>` blocks, reported as `granite`."""

    name = "granite"
    family = Granite.family

    @classmethod
    def detect(cls, template: str, specials) -> int:
        return 0        # detection is Granite's; this is its variant for 4.x templates


GRANITE4 = Granite4()
DIALECT = Granite()
