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
from typing import Any, List, Optional, Sequence, Tuple

import cengine

from .common import StreamEvent, ToolCall, ToolFormatError, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"
# inside one call's JSON object: the pointer of the tool's name and of its arguments
# (llamay_choice_logprobs reports the name as the decision "tool")
CALL_POINTERS = ("/name", "/arguments")
# what the call region starts with: the answer beside it (tool_choice auto with a response
# format) is a JSON document, which never does
CALL_OPEN = OPEN
# documented: the same limits as compile_json_schema's defaults, per tool-call document
WHITESPACE_BUDGET = 64
MAX_DEPTH = 64


# --- prompt side ----------------------------------------------------------------------------

def tools_system_block(tools: List[dict]) -> str:
    lines = []
    for t in tools:
        fn = t.get("function", t) if isinstance(t, dict) else t
        lines.append(json.dumps(fn, ensure_ascii=False))
    return (
        "You can call tools. Their signatures, one JSON object per line, are between "
        "<tools> and </tools>:\n<tools>\n" + "\n".join(lines) + "\n</tools>\n\n"
        "To call a tool, answer with a JSON object holding its name and its arguments between "
        f"{OPEN} and {CLOSE}, one call per block:\n"
        f'{OPEN}\n{{"name": "<tool name>", "arguments": {{...}}}}\n{CLOSE}'
    )


def call_text(name: Any, arguments: Any) -> str:
    """One call as the model is asked to write it."""
    return (OPEN + "\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
            + "\n" + CLOSE)


def plain_messages(messages: List[dict], tools: Optional[List[dict]]) -> List[dict]:
    """Tool calls, tool results and the tool list as plain text turns (messages come with text
    content and arguments as objects: server.runtime.chat_template.plain_messages)."""
    out: List[dict] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            blocks = []
            for call in m["tool_calls"]:
                fn = call.get("function", {})
                blocks.append(call_text(fn.get("name"), fn.get("arguments", {})))
            content = (content + "\n" if content else "") + "\n".join(blocks)
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            out.append({"role": "user",
                        "content": f"{RESPONSE_OPEN}\n{content}\n{RESPONSE_CLOSE}"})
        else:
            out.append({"role": role, "content": content})
    if tools:
        block = tools_system_block(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


# --- grammars -------------------------------------------------------------------------------

def calls_region(tools: Sequence[ToolSpec], *, parallel: bool = True) -> cengine.TriggeredRegion:
    """OPEN, an optional newline, one offered tool's call, an optional newline, CLOSE; with
    parallel calls more such blocks may follow, each after an optional newline."""
    nl = cengine.Repeat("\n", 0, 1)
    calls = [cengine.Tagged('{"name": ' + json.dumps(t.name, ensure_ascii=False)
                            + ', "arguments": ', cengine.JsonSchema(t.parameters), "}")
             for t in tools]
    return cengine.TriggeredRegion(OPEN, cengine.Concat(nl, cengine.OneOf(*calls), nl), CLOSE,
                                   repeat=parallel, separator=nl)


def call_grammar(tools: Sequence[ToolSpec], *, parallel: bool = True) -> cengine.Grammar:
    """The whole output: one or more (one when not parallel) complete calls, from the first byte."""
    if not tools:
        raise ToolFormatError("tool_choice requires a tool call but no tools were given",
                              param="tool_choice")
    return cengine.compile_structural(calls_region(tools, parallel=parallel),
                                      whitespace_budget=WHITESPACE_BUDGET, max_depth=MAX_DEPTH)


def answer_or_call_grammar(answer: cengine.Part, tools: Sequence[ToolSpec], *,
                           parallel: bool = True, compact: bool = False) -> cengine.Grammar:
    """tool_choice auto under an output constraint: from the first byte, either one document
    of `answer` (and nothing after it) or the call blocks of call_grammar. compact: no JSON
    whitespace anywhere in the output (the constraint asked for it: vLLM's
    disable_any_whitespace), call arguments included; the call's own framing stays."""
    if not tools:
        raise ToolFormatError("tool_choice auto with a constraint needs at least one tool",
                              param="tools")
    return cengine.compile_structural(cengine.OneOf(answer, calls_region(tools, parallel=parallel)),
                                      whitespace_budget=0 if compact else WHITESPACE_BUDGET,
                                      max_depth=MAX_DEPTH)


def lazy_call_grammar(tools: Sequence[ToolSpec], *, parallel: bool = True
                      ) -> cengine.TriggeredGrammar:
    """(trigger, grammar of what follows the trigger) for tool_choice auto."""
    return cengine.compile_triggered(calls_region(tools, parallel=parallel),
                                     whitespace_budget=WHITESPACE_BUDGET, max_depth=MAX_DEPTH)


# --- response side: reading calls back ------------------------------------------------------

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


def parse_output(text: str, tools: Sequence[ToolSpec]) -> Tuple[str, List[ToolCall]]:
    """(text outside the calls, calls in order). A block that does not decode to an offered
    tool stays text: a broken call is never reported as a call."""
    stream = CallStream(tools)
    events = stream.feed(text) + stream.finish()
    parts = [v for k, v in events if k == "text"]
    calls = [v for k, v in events if k == "call"]
    return "".join(parts).strip() if calls else "".join(parts), calls


class CallStream:
    """Incremental splitter for streaming: text passes through as soon as it cannot be the
    start of `<tool_call>`; a call is held back and released whole once its closing tag arrives."""

    def __init__(self, tools: Sequence[ToolSpec]):
        self.allowed = {t.name for t in tools}
        self.buf = ""
        self.in_call = False

    def feed(self, text: str) -> List[StreamEvent]:
        self.buf += text
        out: List[StreamEvent] = []
        while True:
            if self.in_call:
                end = self.buf.find(CLOSE)
                if end < 0:
                    return out
                raw = self.buf[:end]
                call = _decode_call(raw.strip(), self.allowed)
                out.append(("call", call) if call else ("text", OPEN + raw + CLOSE))
                self.buf = self.buf[end + len(CLOSE):]
                self.in_call = False
                continue
            start = self.buf.find(OPEN)
            if start >= 0:
                if start:
                    out.append(("text", self.buf[:start]))
                self.buf = self.buf[start + len(OPEN):]
                self.in_call = True
                continue
            keep = _partial_suffix(self.buf, OPEN)
            if len(self.buf) > keep:
                out.append(("text", self.buf[:len(self.buf) - keep]))
                self.buf = self.buf[len(self.buf) - keep:]
            return out

    def finish(self) -> List[StreamEvent]:
        """Whatever is left: an unterminated block (only on cancel) comes back as text."""
        rest = (OPEN if self.in_call else "") + self.buf
        self.buf, self.in_call = "", False
        return [("text", rest)] if rest else []

    def discard(self) -> bool:
        """Drop what is held back (an unfinished call, or a possible start of one); True if
        anything was held. Calls already released are not touched."""
        held = self.in_call or bool(self.buf)
        self.buf, self.in_call = "", False
        return held


def call_reader(tools: Sequence[ToolSpec]) -> CallStream:
    return CallStream(tools)


def _partial_suffix(s: str, tag: str) -> int:
    """Length of the longest suffix of s that is a proper prefix of tag."""
    for n in range(min(len(s), len(tag) - 1), 0, -1):
        if s.endswith(tag[:n]):
            return n
    return 0
