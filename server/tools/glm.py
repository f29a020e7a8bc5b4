"""GLM 4.5 / 4.6 / 4.7: the tool's name after `<tool_call>`, then key and value tags.

GLM-4.5 / 4.6's template writes an earlier call as

    <tool_call>NAME
    <arg_key>KEY</arg_key>
    <arg_value>VALUE</arg_value>
    ...
    </tool_call>

and GLM-4.7's the same without the newlines (`<tool_call>NAME<arg_key>KEY</arg_key>
<arg_value>VALUE</arg_value></tool_call>`, no line breaks at all); one block per call, a
newline between blocks in 4.5 / 4.6, none in 4.7. A value is written `v | tojson if v is not
string else v`: strings raw, everything else as JSON. `<tool_call>`, `</tool_call>`,
`<arg_key>`, `</arg_key>`, `<arg_value>` and `</arg_value>` are tokens of GLM's vocabulary
(user-defined); the turn ends with `<|observation|>` (tool results follow) or `<|user|>`.
One dialect serves both spellings: each of those newlines is optional, so the grammar
accepts what either template writes and the reader reads both.

Values, parameters and what is refused: server/tools/_xmlargs.py (a value ends at
`</arg_value>`, which a raw string value therefore cannot hold).

tool_choice: required / named: the whole output is such blocks (one with
parallel_tool_calls false), from the first token; auto: free text until `<tool_call>`, then
the blocks. Reasoning (`<think>`) is not this module's.
"""
from __future__ import annotations

from typing import Any, List, Sequence

import cengine

from . import _xmlargs as X
from .base import Dialect
from .common import ToolCall, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
KEY_OPEN, KEY_CLOSE = "<arg_key>", "</arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<arg_value>", "</arg_value>"

_COMPILER = X.ParamCompiler("glm", VALUE_CLOSE, name_forbidden="<\n")


def _skip_newline(text: str, pos: int) -> int:
    return pos + 1 if text.startswith("\n", pos) else pos


class Glm(Dialect):
    name = "glm"
    # 4.6 writes a newline after the name, 4.7 none; a call without arguments closes at once
    NAME_MARKS = ("<tool_call>", ("\n", "<arg_key>", "</tool_call>"))
    JSON_ARGUMENTS = False
    family = "GLM 4.5, 4.6, 4.7"
    CALL_POINTERS = None
    TRIGGER = OPEN
    DETECT_ALL, DETECT_SCORE = (OPEN, KEY_OPEN, VALUE_OPEN), 30

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        nl = cengine.Repeat("\n", 0, 1)
        calls = X.tool_calls(
            _COMPILER, tools, lambda name, params: cengine.Concat(name, *params, nl),
            lambda name, value: cengine.Concat(nl, self.tok(KEY_OPEN), name, self.tok(KEY_CLOSE),
                                               nl, self.tok(VALUE_OPEN), value,
                                               self.tok(VALUE_CLOSE)))
        return cengine.TriggeredRegion(self.tok(OPEN), cengine.OneOf(*calls), self.tok(CLOSE),
                                       repeat=parallel, separator=nl)

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        return X.one_call(self._call, text, tools)

    def _call(self, text: str, tools: Sequence[ToolSpec]):
        ends = [i for i in (text.find("\n"), text.find("<")) if i >= 0]
        if not ends:
            raise X.NeedMore
        name, pos = text[:min(ends)], min(ends)
        tool = next((t for t in tools if t.name == name), None)
        if tool is None:
            raise X.Broken
        sig = _COMPILER.signature(tool)
        pairs: List[Any] = []
        while True:
            pos = _skip_newline(text, pos)
            if text.startswith(KEY_OPEN, pos):
                key, pos = X.until(text, pos + len(KEY_OPEN), KEY_CLOSE)
                pos = _skip_newline(text, pos + len(KEY_CLOSE))
                pos = X.expect(text, pos, VALUE_OPEN)
                param = sig.param(key)
                if param is None:
                    raise X.Broken
                value, pos = X.read_value(text, pos, param, VALUE_CLOSE)
                pos += len(VALUE_CLOSE)
                pairs.append((key, value))
                continue
            if pos == len(text) or KEY_OPEN.startswith(text[pos:]):
                raise X.NeedMore
            pos = X.expect(text, pos, CLOSE)
            args = X.arguments(sig, pairs)
            if args is None:
                raise X.Broken
            return ToolCall(name, args), pos

    def call_text(self, name: Any, arguments: Any) -> str:
        params = "".join(f"{KEY_OPEN}{k}{KEY_CLOSE}\n{VALUE_OPEN}{X.value_text(v, False)}"
                         f"{VALUE_CLOSE}\n" for k, v in (arguments or {}).items())
        return f"{OPEN}{name}\n{params}{CLOSE}"


DIALECT = Glm()
