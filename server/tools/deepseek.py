"""DeepSeek's tool calls: V3 / R1 and the R1 distills (`deepseek_v3`), V3.1 (`deepseek_v31`).

Both wrap the turn's calls in `<｜tool▁calls▁begin｜>` ... `<｜tool▁calls▁end｜>` (fullwidth bars,
U+2581 for the spaces: DeepSeek's tokenizer has each framing text as one added token) and
each call in `<｜tool▁call▁begin｜>` ... `<｜tool▁call▁end｜>`; the tool's name is outside the
JSON, so there is no JSON pointer for it (CALL_POINTERS is None).

- V3 / R1 (templates of DeepSeek-R1-Distill-Llama-8B, -Qwen-32B, llama.cpp's deepseek-r1):
  `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>`,
  calls joined by a newline.
- V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`, calls back to back.

ARGS is the arguments object as JSON (the templates write `arguments | tojson`). The whole
call block ends the turn (`<｜end▁of▁sentence｜>` follows it in the templates).
V3.2 and V4 write DSML (`<｜DSML｜function_calls>` / `<｜DSML｜tool_calls>` with one
`<｜DSML｜parameter name=... string="true|false">` per argument): not these dialects.
"""
from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence, Tuple

import cengine

from .base import Dialect, offered_call, partial_suffix
from .common import ToolCall, ToolSpec

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
FENCE_OPEN = "\n```json\n"
FENCE_CLOSE = "\n```"

# what a parse step found at a position: a whole call, the end of the block, more text needed,
# or text that is no call of this form
_CALL, _END, _MORE, _BROKEN = range(4)


class _DeepSeek(Dialect):
    CALL_POINTERS = None
    # what separates two calls of one block, as the template writes it
    between = ""
    TRIGGER = CALLS_BEGIN

    # --- one call, per version ----------------------------------------------------------------
    tail = ""           # the text between the arguments and CALL_END

    def _head(self, name: str) -> List[Any]:
        """The call's framing between CALL_BEGIN and the arguments, for this tool."""
        raise NotImplementedError

    def _read_head(self, text: str, i: int) -> Tuple[int, Optional[str], int]:
        """(step kind, tool name, index of the arguments) for the call head at text[i:]."""
        raise NotImplementedError

    def _one_call(self, name: Any, arguments: Any) -> str:
        raise NotImplementedError

    # --- grammar ------------------------------------------------------------------------------
    def _call_part(self, tool: ToolSpec) -> cengine.Part:
        parts = [self.tok(CALL_BEGIN), *self._head(tool.name), cengine.JsonSchema(tool.parameters)]
        if self.tail:
            parts.append(cengine.Text(self.tail))
        return cengine.Concat(*parts, self.tok(CALL_END))

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        """CALLS_BEGIN, one call of an offered tool (more, each after `between`, when
        parallel), CALLS_END."""
        call = cengine.OneOf(*[self._call_part(t) for t in tools])
        body = cengine.Repeat(call, 1, None, separator=self.between) if parallel else call
        return cengine.TriggeredRegion(self.tok(CALLS_BEGIN), body, self.tok(CALLS_END))

    def call_text(self, name: Any, arguments: Any) -> str:
        return CALLS_BEGIN + self._one_call(name, arguments) + CALLS_END

    # --- reader -------------------------------------------------------------------------------
    def _step(self, text: str, i: int) -> Tuple[int, int, Any]:
        """Read at text[i:] (the block's start, or after a call the reader released): (kind,
        index after what was read, (name, arguments) of a call)."""
        j = i
        if text.startswith(CALLS_END, j):
            return _END, j + len(CALLS_END), None
        if _needs_more(text[j:], (CALL_BEGIN, CALLS_END, self.between)):
            return _MORE, i, None
        if self.between and text.startswith(self.between, j):
            j += len(self.between)      # between two calls
            if _needs_more(text[j:], (CALL_BEGIN,)):
                return _MORE, i, None
        if not text.startswith(CALL_BEGIN, j):
            return _BROKEN, i, None
        kind, name, k = self._read_head(text, j + len(CALL_BEGIN))
        if kind != _CALL:
            return kind, i, None
        try:
            args, k = json.JSONDecoder().raw_decode(text, k)
        except ValueError:
            # unfinished JSON waits; JSON that cannot be finished before CALL_END is broken
            return (_BROKEN if CALL_END in text[k:] else _MORE), i, None
        closing = self.tail + CALL_END
        if _needs_more(text[k:], (closing,)):
            return _MORE, i, None
        if not text.startswith(closing, k):
            return _BROKEN, i, None
        return _CALL, k + len(closing), (name, args)

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        """The whole calls at the start of the block: each is released once its CALL_END is
        in, and the block closes at CALLS_END. Text that is no call of this form, or a call
        of a tool nobody offered, makes the block text."""
        calls: List[Optional[ToolCall]] = []
        pos = 0
        while True:
            kind, end, got = self._step(text, pos)
            if kind == _END:
                return calls, end, True
            if kind == _MORE:
                return calls, pos, False
            call = offered_call(got[0], got[1], tools) if kind == _CALL else None
            if call is None:
                if calls:       # release the whole calls first; the rest is read next time
                    return calls, pos, False
                return [None], (end if kind == _CALL else len(text)), True
            calls.append(call)
            pos = end


def _needs_more(rest: str, expected: Tuple[str, ...]) -> bool:
    """rest is a proper prefix of one of the expected texts (possibly empty): wait for more."""
    return any(len(rest) < len(e) and e.startswith(rest) for e in expected)


class DeepSeekV3(_DeepSeek):
    """V3 / R1 and the R1 distills: a ```json fence around the arguments, `function` as the
    call's type, a newline between calls."""

    name = "deepseek_v3"
    family = "DeepSeek V3, R1 and the R1 distills (Llama, Qwen)"
    NAME_MARKS = ("function" + SEP, FENCE_OPEN)
    between = "\n"
    tail = FENCE_CLOSE

    DETECT_ALL, DETECT_SCORE = (SEP, "```json"), 30

    def _head(self, name: str) -> List[Any]:
        return [cengine.Text("function"), self.tok(SEP), cengine.Text(name + FENCE_OPEN)]

    def _read_head(self, text: str, i: int):
        return _read_name(text, i, "function" + SEP, FENCE_OPEN)

    def _one_call(self, name: Any, arguments: Any) -> str:
        return (CALL_BEGIN + "function" + SEP + str(name) + FENCE_OPEN
                + json.dumps(arguments, ensure_ascii=False) + FENCE_CLOSE + CALL_END)


class DeepSeekV31(_DeepSeek):
    """V3.1: the name, the separator token and the arguments' JSON, calls back to back."""

    name = "deepseek_v31"
    family = "DeepSeek V3.1"
    NAME_MARKS = (CALL_BEGIN, SEP)

    DETECT_ALL, DETECT_NONE, DETECT_SCORE = (SEP,), ("```json",), 30

    def _head(self, name: str) -> List[Any]:
        return [cengine.Text(name), self.tok(SEP)]

    def _read_head(self, text: str, i: int):
        return _read_name(text, i, "", SEP)

    def _one_call(self, name: Any, arguments: Any) -> str:
        return CALL_BEGIN + str(name) + SEP + json.dumps(arguments, ensure_ascii=False) + CALL_END


def _read_name(text: str, i: int, before: str, after: str) -> Tuple[int, Optional[str], int]:
    """`before` NAME `after` at text[i:]: (kind, NAME, index after `after`). A name holds no
    newline and no framing token."""
    if _needs_more(text[i:], (before,)):
        return _MORE, None, i
    if not text.startswith(before, i):
        return _BROKEN, None, i
    j = i + len(before)
    k = text.find(after, j)
    if k < 0:
        rest = text[j:]
        rest = rest[:len(rest) - partial_suffix(rest, after)]
        if "\n" in rest or "<｜" in rest:
            return _BROKEN, None, i
        return _MORE, None, i
    name = text[j:k]
    if not name or "\n" in name or "<｜" in name:
        return _BROKEN, None, i
    return _CALL, name, k + len(after)


DIALECTS = (DeepSeekV3(), DeepSeekV31())
