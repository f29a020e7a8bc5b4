"""Kimi K2 (Instruct, 0905, Thinking): calls in a section of special tokens.

`<|tool_calls_section_begin|>` then one or more
`<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>`
then `<|tool_calls_section_end|>` and `<|im_end|>`; no text between the tokens. The templates
write the call id as `functions.NAME:IDX` themselves: moonshotai's first K2 template numbers a
turn's calls from 0 and writes the result's `tool_call_id` as given ("## Return of ID"), the
Instruct and Thinking templates count calls across the conversation and write the ids they
counted. The server's id of a turn's i-th call is `functions.NAME:i` (`new_call_id`), so the
result comes back under the id the first template wrote for its call. The grammar allows any
index the model writes (digits, at most six).

The trigger is the section's opening token: every template writes it, and calls outside a
section are not this format. The tool name is outside the JSON: no `CALL_POINTERS`.
(Kimi K3's template is another format, attribute-tagged `<|open|>call tool="..."`: not this.)
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import cengine

from .base import Dialect, leading_json, offered_call
from .common import ToolSpec

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGS_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
INDEX_PATTERN = "0|[1-9][0-9]{0,5}"


class KimiK2(Dialect):
    name = "kimi_k2"
    NAME_MARKS = (CALL_BEGIN + "functions.", ":")
    TRIGGER = SECTION_BEGIN
    DETECT_ALL, DETECT_SCORE = (SECTION_BEGIN, CALL_BEGIN), 40
    family = "Kimi K2 Instruct, K2 0905, K2 Thinking"
    CALL_POINTERS = None

    def new_call_id(self, name: str, index: int) -> str:
        return f"functions.{name}:{index}"

    def call_text(self, name: Any, arguments: Any) -> str:
        return (SECTION_BEGIN + CALL_BEGIN + f"functions.{name}:0" + ARGS_BEGIN
                + json.dumps(arguments, ensure_ascii=False) + CALL_END + SECTION_END)

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        one = cengine.Concat(self.tok(CALL_BEGIN), cengine.OneOf(*[
            cengine.Concat("functions." + t.name + ":", cengine.Regex(INDEX_PATTERN),
                           self.tok(ARGS_BEGIN), cengine.JsonSchema(t.parameters))
            for t in tools]), self.tok(CALL_END))
        calls = cengine.Concat(one, cengine.Repeat(one, 0, None if parallel else 0))
        return cengine.TriggeredRegion(self.tok(SECTION_BEGIN), calls, self.tok(SECTION_END))

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        """The section's calls one at a time (each released once its CALL_END is there),
        then SECTION_END closes it."""
        if text.startswith(SECTION_END):
            return [], len(SECTION_END), True
        if not text.startswith(CALL_BEGIN):
            if len(text) < max(len(SECTION_END), len(CALL_BEGIN)) and not final and (
                    SECTION_END.startswith(text) or CALL_BEGIN.startswith(text)):
                return [], 0, False
            return [None], 0, True
        at = text.find(ARGS_BEGIN)
        if at < 0:
            return [], 0, False
        call_id = text[len(CALL_BEGIN):at]
        head, colon, index = call_id.rpartition(":")
        got = leading_json(text, at + len(ARGS_BEGIN))
        if got is None:
            return [], 0, False
        args, end = got
        if not text.startswith(CALL_END, end):
            if len(text) - end < len(CALL_END) and CALL_END.startswith(text[end:]) \
                    and not final:
                return [], 0, False
            return [None], end, True
        end += len(CALL_END)
        if not (colon and head.startswith("functions.") and index.isdigit()):
            return [None], end, True
        return [offered_call(head[len("functions."):], args, tools)], end, False


DIALECT = KimiK2()
