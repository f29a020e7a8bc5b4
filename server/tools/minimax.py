"""MiniMax M2 (and M2.1 / M2.5, which keep its tool-call syntax): `<invoke>` blocks inside one
`<minimax:tool_call>` block.

Its template writes the calls of one assistant turn as

    <minimax:tool_call>
    <invoke name="NAME">
    <parameter name="KEY">VALUE</parameter>
    ...
    </invoke>
    <invoke name="NAME2">
    ...
    </invoke>
    </minimax:tool_call>

(a newline before the block when the turn has no text), a value written `v | tojson if v is
not string else v`: strings raw, everything else as JSON. `<minimax:tool_call>` and
`</minimax:tool_call>` are tokens of MiniMax's vocabulary; `<invoke` and `<parameter` are
text. Parallel calls are more `<invoke>` blocks in the one block, so with
parallel_tool_calls false the block holds exactly one.

Not this dialect: MiniMax-M1 writes JSON calls, `<tool_calls>\\n{"name": ..., "arguments":
...}\\n</tool_calls>`; MiniMax-M3 writes `]<]minimax[>[<tool_call>` and expands objects and
arrays into nested XML elements (`]<]minimax[>[<key>value]<]minimax[>[</key>`), a dialect of
its own.

Values, parameters and what is refused: server/tools/_xmlargs.py (a value ends at
`</parameter>`, which a raw string value therefore cannot hold; a name cannot hold `"`).

tool_choice: required / named: the whole output is the block, from the first token; auto:
free text until `<minimax:tool_call>`, then the block. Reasoning (`<think>`) is not this
module's.
"""
from __future__ import annotations

from typing import Any, List, Sequence

import cengine

from . import _xmlargs as X
from .base import Dialect
from .common import ToolCall, ToolSpec

OPEN = "<minimax:tool_call>"
CLOSE = "</minimax:tool_call>"
INVOKE_OPEN, INVOKE_CLOSE = '<invoke name="', "</invoke>\n"
PARAM_OPEN, VALUE_END = '<parameter name="', "</parameter>"

_COMPILER = X.ParamCompiler("minimax", VALUE_END, name_forbidden='"\n')


class MiniMax(Dialect):
    name = "minimax"
    family = "MiniMax M2, M2.1, M2.5"
    CALL_POINTERS = None
    NAME_MARKS = ('<invoke name="', '"')
    JSON_ARGUMENTS = False
    TRIGGER = OPEN
    DETECT_ALL, DETECT_SCORE = (OPEN, "<invoke name="), 30

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        invokes = X.tool_calls(
            _COMPILER, tools,
            lambda name, params: cengine.Concat(f'{INVOKE_OPEN}{name}">\n', *params,
                                                INVOKE_CLOSE),
            lambda name, value: cengine.Concat(f'{PARAM_OPEN}{name}">', value, VALUE_END + "\n"))
        calls = cengine.Repeat(cengine.OneOf(*invokes), 1, None if parallel else 1)
        return cengine.TriggeredRegion(self.tok(OPEN), cengine.Concat("\n", calls),
                                       self.tok(CLOSE))

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        """Each whole `<invoke>` is released as it ends (the block may hold more); a later
        region read starts at the next `<invoke` or at the closing tag."""
        calls: List[ToolCall] = []
        pos = 1 if text.startswith("\n") else 0
        done = pos
        try:
            while True:
                if text.startswith(CLOSE, pos):
                    return calls, pos + len(CLOSE), True
                if text.startswith(INVOKE_OPEN, pos):
                    call, pos = self._invoke(text, pos + len(INVOKE_OPEN), tools)
                    calls.append(call)
                    done = pos
                    continue
                if CLOSE.startswith(text[pos:]) or INVOKE_OPEN.startswith(text[pos:]):
                    raise X.NeedMore
                raise X.Broken
        except X.NeedMore:
            return calls, (done if calls else 0), False
        except X.Broken:
            # the calls before it stand; the broken one comes back on the next read
            return (calls, done, False) if calls else ([None], 0, True)

    def _invoke(self, text: str, pos: int, tools: Sequence[ToolSpec]):
        return X.read_call(text, pos, tools, _COMPILER, name_end='"', name_after='">\n',
                           param_open=PARAM_OPEN, key_end='"', key_after='">',
                           value_end=VALUE_END, call_end=INVOKE_CLOSE)

    def call_text(self, name: Any, arguments: Any) -> str:
        params = "".join(f'{PARAM_OPEN}{k}">{X.value_text(v, False)}{VALUE_END}\n'
                         for k, v in (arguments or {}).items())
        return f'{OPEN}\n{INVOKE_OPEN}{name}">\n{params}{INVOKE_CLOSE}{CLOSE}'


DIALECT = MiniMax()
