"""Mistral's tool calls, after the control token `[TOOL_CALLS]`, in its two generations.

`mistral` (tokenizers before v11: Mistral 7B v0.3, Mistral Nemo): one JSON array of calls,
`[TOOL_CALLS][{"name": "NAME", "arguments": {...}, "id": "abcDEF123"}, ...]`, then `</s>`.
Nemo's template writes earlier calls exactly so (each call's `function` object as JSON, its id
after the arguments) and refuses ids that are not nine characters ("Tool call IDs should be
alphanumeric strings with length 9!"), in the call and in the `[TOOL_RESULTS]` that answers it;
the server's ids are nine alphanumerics (`new_call_id`). The model may write an id itself: the
grammar allows one of that form after the arguments, the reader does not need it.

`mistral_v11` (tokenizer v11 and later: Mistral Small 3.2, Devstral 2507, Ministral 3,
Magistral): each call is its own `[TOOL_CALLS]NAME[ARGS]{...}`, back to back, then `</s>`;
Mistral Small 3.2's template writes the call's id between the name and the arguments,
`[TOOL_CALLS]NAME[CALL_ID]abcDEF123[ARGS]{...}` (nine characters, checked as above). Where the
vocabulary has `[CALL_ID]` the grammar allows that id, else not. The tool name stands outside
any JSON object, so there is no `CALL_POINTERS`.

Templates of both write `[TOOL_CALLS]` as a control token; v11 templates are told from the older
ones by `[ARGS]`.
"""
from __future__ import annotations

import json
import secrets
import string
from typing import Any, Sequence

import cengine

from .base import Dialect, leading_json, offered_call
from .common import ToolSpec

TOOL_CALLS = "[TOOL_CALLS]"
ARGS = "[ARGS]"
CALL_ID = "[CALL_ID]"
ID_PATTERN = "[A-Za-z0-9]{9}"
_ALNUM = string.ascii_letters + string.digits
_WS = " \t\r\n"


def nine_alphanumerics() -> str:
    """A call id as Mistral's templates require it."""
    return "".join(secrets.choice(_ALNUM) for _ in range(9))


def _is_id(value: Any) -> bool:
    return (isinstance(value, str) and len(value) == 9
            and all(c in _ALNUM for c in value))


class Mistral(Dialect):
    """`[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`: a JSON array of calls (one
    call when parallel calls are off)."""

    name = "mistral"
    family = "Mistral 7B v0.3, Mistral Nemo (tokenizers before v11)"
    CALL_POINTERS = ("/name", "/arguments")

    TRIGGER = TOOL_CALLS
    DETECT_ALL, DETECT_NONE, DETECT_SCORE = (TOOL_CALLS,), (ARGS,), 30

    def new_call_id(self, name: str, index: int) -> str:
        return nine_alphanumerics()

    def call_text(self, name: Any, arguments: Any) -> str:
        return TOOL_CALLS + json.dumps([{"name": name, "arguments": arguments}],
                                       ensure_ascii=False)

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        """TOOL_CALLS, an optional space (an SPM vocabulary's word start), "[", calls separated
        by "," and an optional space, "]". A call is the template's object: name, arguments
        under the tool's schema, optionally the model's own nine-character id."""
        space = cengine.Repeat(" ", 0, 1)
        call_id = cengine.Repeat(cengine.Concat(', "id": "', cengine.Regex(ID_PATTERN), '"'),
                                 0, 1)
        call = cengine.OneOf(*[
            cengine.Concat('{"name": ' + json.dumps(t.name, ensure_ascii=False)
                           + ', "arguments": ', cengine.JsonSchema(t.parameters), call_id, "}")
            for t in tools])
        more = cengine.Repeat(cengine.Concat(",", space, call), 0, None if parallel else 0)
        return cengine.TriggeredRegion(self.tok(TOOL_CALLS),
                                       cengine.Concat(space, "[", call, more), "]")

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        """The array one element at a time, so that each call is released once whole: the
        text starts with "[" (the array's start), "," (a further call) or "]" (its end)."""
        i = 0
        while i < len(text) and text[i] in _WS:
            i += 1
        if i == len(text):
            return [], 0, False
        if text[i] == "]":
            return [], i + 1, True
        if text[i] not in "[,":
            return [None], i, True
        got = leading_json(text, i + 1)
        if got is None:
            if text[i] == "[" and text[i + 1:].lstrip(_WS)[:1] == "]":
                return [None], len(text), True      # an empty array: no call
            return [], 0, False
        obj, end = got
        return [self._call(obj, tools)], end, False

    @staticmethod
    def _call(obj: Any, tools: Sequence[ToolSpec]):
        if not isinstance(obj, dict) or not set(obj) <= {"name", "arguments", "id"}:
            return None
        if "id" in obj and not _is_id(obj["id"]):
            return None
        return offered_call(obj.get("name"), obj.get("arguments"), tools)


class MistralV11(Dialect):
    """`[TOOL_CALLS]NAME[ARGS]{...}` per call (with `[CALL_ID]ID` before `[ARGS]` where the
    vocabulary has that token)."""

    name = "mistral_v11"
    NAME_MARKS = ("[TOOL_CALLS]", ("[ARGS]", "[CALL_ID]"))
    family = "Mistral Small 3.2, Devstral 2507, Ministral 3, Magistral (tokenizer v11 and later)"
    CALL_POINTERS = None

    TRIGGER = TOOL_CALLS
    DETECT_ALL, DETECT_SCORE = (TOOL_CALLS, ARGS), 40

    def new_call_id(self, name: str, index: int) -> str:
        return nine_alphanumerics()

    def call_text(self, name: Any, arguments: Any) -> str:
        return TOOL_CALLS + str(name) + ARGS + json.dumps(arguments, ensure_ascii=False)

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        head = []
        if CALL_ID in self.specials:
            head = [cengine.Repeat(cengine.Concat(self.tok(CALL_ID), cengine.Regex(ID_PATTERN)),
                                   0, 1)]
        calls = [cengine.Concat(t.name, *head, self.tok(ARGS), cengine.JsonSchema(t.parameters))
                 for t in tools]
        return cengine.TriggeredRegion(self.tok(TOOL_CALLS), cengine.OneOf(*calls), "",
                                       repeat=parallel)

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        at = text.find(ARGS)
        if at < 0:
            return [], 0, False
        head = text[:at]
        name, sep, call_id = head.partition(CALL_ID)
        if sep and not _is_id(call_id):
            return [None], at + len(ARGS), True
        got = leading_json(text, at + len(ARGS))
        if got is None:
            return [], 0, False
        args, end = got
        return [offered_call(name, args, tools)], end, True


MISTRAL = Mistral()
MISTRAL_V11 = MistralV11()
DIALECTS = (MISTRAL, MISTRAL_V11)
