"""Qwen3-Coder and Qwen3.5: one parameter per tag, inside `<tool_call>`.

Their templates write an earlier call as

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    ...
    </function>
    </tool_call>

one block per call, blocks separated by a newline (`</tool_call>\\n<tool_call>`; StepFun 3.5
Flash, which writes the same calls, writes none: both are accepted), a value
written with `| string` unless it is a mapping or a list (`| tojson`): strings raw, numbers
as Python prints them, booleans `True` / `False`, null `None`, containers as JSON.
`<tool_call>` / `</tool_call>` are tokens of Qwen's vocabulary (user-defined); the rest is
text. NVIDIA Nemotron 3 Nano and StepFun 3.5 Flash write the same form.

Values, parameters and what is refused: server/tools/_xmlargs.py (a value ends at
`\\n</parameter>`, which a raw string value therefore cannot hold; booleans and null take
both the JSON and the Python spelling where the property is only `type` boolean / null).

tool_choice: required / named: the whole output is such blocks (one with
parallel_tool_calls false), from the first token; auto: free text until `<tool_call>`, then
the blocks. Reasoning (`<think>`, Qwen3.5) is not this module's.
"""
from __future__ import annotations

from typing import Any, Sequence

import cengine

from . import _xmlargs as X
from .base import Dialect
from .common import ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
VALUE_END = "\n</parameter>"

_COMPILER = X.ParamCompiler("qwen3_xml", VALUE_END, python_literals=True,
                            name_forbidden=">\n")


class Qwen3Xml(Dialect):
    name = "qwen3_xml"
    family = "Qwen3-Coder, Qwen3.5 (also Nemotron 3 Nano, StepFun 3.5 Flash)"
    CALL_POINTERS = None
    NAME_MARKS = ("<function=", ">")
    JSON_ARGUMENTS = False
    TRIGGER = OPEN
    DETECT_ALL, DETECT_SCORE = (OPEN, "<function=", "<parameter="), 30

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        calls = X.tool_calls(
            _COMPILER, tools,
            lambda name, params: cengine.Concat(f"\n<function={name}>\n", *params,
                                                "</function>\n"),
            lambda name, value: cengine.Concat(f"<parameter={name}>\n", value, VALUE_END + "\n"))
        # Qwen writes a newline between blocks, StepFun 3.5 Flash none
        return cengine.TriggeredRegion(self.tok(OPEN), cengine.OneOf(*calls), self.tok(CLOSE),
                                       repeat=parallel, separator=cengine.Repeat("\n", 0, 1))

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        return X.one_call(self._call, text, tools)

    def _call(self, text: str, tools: Sequence[ToolSpec]):
        pos = X.expect(text, 0, "\n<function=")
        return X.read_call(text, pos, tools, _COMPILER, name_end=">", name_after=">\n",
                           param_open="<parameter=", key_end=">", key_after=">\n",
                           value_end=VALUE_END, call_end="</function>\n" + CLOSE)

    def call_text(self, name: Any, arguments: Any) -> str:
        params = "".join(f"<parameter={k}>\n{X.value_text(v, True)}\n</parameter>\n"
                         for k, v in (arguments or {}).items())
        return f"{OPEN}\n<function={name}>\n{params}</function>\n{CLOSE}"


DIALECT = Qwen3Xml()
