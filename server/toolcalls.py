"""Tool calls: the grammars that make them unbreakable, and the parsers that read them back.

The model writes Hermes-style calls, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
Under tool_choice required / named the whole output is ("<tool_call>" call "</tool_call>")+ from
the first token; under auto the text is free until the model writes the trigger `<tool_call>`,
and from there the lazy grammar constrains the rest. In both, `call` is the union over the
offered tools of {"name": <that tool's name>, "arguments": <that tool's parameter schema>}, so
a function nobody offered cannot be produced and arguments always fit their schema.
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import cengine
from cengine import ir

from .errors import InvalidRequest

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# documented: the same limits as compile_json_schema's defaults, per tool-call document
WHITESPACE_BUDGET = 64
MAX_DEPTH = 64
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Any       # JSON Schema of the arguments

    def openai_shape(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass
class ToolCall:
    name: str
    arguments: Any                       # parsed JSON (an object under every offered schema)
    id: str = field(default_factory=lambda: "call_" + uuid.uuid4().hex[:24])

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


# --- request side: normalising the three APIs' tool lists ----------------------------------

def _spec(name, description, parameters, where: str) -> ToolSpec:
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"{where}: a tool needs a non-empty string 'name'", param="tools")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise InvalidRequest(f"{where}: tool '{name}' has a non-string description", param="tools")
    if parameters is None:
        parameters = EMPTY_PARAMETERS
    if not isinstance(parameters, (dict, bool)):
        raise InvalidRequest(f"{where}: the parameters of tool '{name}' must be a JSON Schema object",
                             param="tools")
    return ToolSpec(name, description, parameters)


def parse_tools(tools: Any, api: str) -> List[ToolSpec]:
    """OpenAI chat / Ollama: {"type":"function","function":{name,description,parameters}};
    OpenAI responses: {"type":"function",name,description,parameters};
    Anthropic: {name, description, input_schema}."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be a list", param="tools")
    out: List[ToolSpec] = []
    for i, t in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(t, dict):
            raise InvalidRequest(f"{where} must be an object", param="tools")
        if api == "anthropic":
            out.append(_spec(t.get("name"), t.get("description"), t.get("input_schema"), where))
            continue
        if t.get("type", "function") != "function":
            raise InvalidRequest(f"{where}: only tools of type 'function' are supported", param="tools")
        fn = t.get("function") if "function" in t else t
        if not isinstance(fn, dict):
            raise InvalidRequest(f"{where}.function must be an object", param="tools")
        out.append(_spec(fn.get("name"), fn.get("description"), fn.get("parameters"), where))
    names = [s.name for s in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InvalidRequest(f"tool names must be unique; repeated: {sorted(dup)}", param="tools")
    return out


# --- grammars -----------------------------------------------------------------------------

def _call_expr(g: ir.GrammarIR, tools: Sequence[ToolSpec]) -> ir.Expr:
    from cengine.schema import add_schema
    calls = []
    for i, tool in enumerate(tools):
        args = add_schema(g, tool.parameters, prefix=f"tool{i}-")
        head = '{"name": ' + json.dumps(tool.name, ensure_ascii=False) + ', "arguments": '
        calls.append(ir.seq(ir.lit(head), args, ir.lit("}")))
    return g.add(g.fresh_name("tool-call"), ir.alt(*calls))


def _build(tools: Sequence[ToolSpec], parallel: bool, lazy: bool) -> cengine.Grammar:
    g = ir.GrammarIR(root="tool-calls", max_depth=MAX_DEPTH, whitespace_budget=WHITESPACE_BUDGET)
    call = _call_expr(g, tools)
    nl = ir.opt(ir.lit("\n"))
    body = ir.seq(nl, call, nl, ir.lit(CLOSE))           # what follows an opening tag
    block = ir.seq(ir.lit(OPEN), body)
    more = ir.repeat(ir.seq(nl, block), 0, None if parallel else 0)
    first = body if lazy else block
    g.add("tool-calls", ir.seq(first, more))
    return cengine.Grammar.from_ir(g, "tool_calls", [t.name for t in tools])


def _key(tools: Sequence[ToolSpec], parallel: bool, lazy: bool) -> tuple:
    return ("tool_calls", json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True),
            parallel, lazy)


def call_grammar(tools: Sequence[ToolSpec], *, parallel: bool = True) -> cengine.Grammar:
    """The whole output: one or more (one when not parallel) complete calls, from the first byte."""
    if not tools:
        raise InvalidRequest("tool_choice requires a tool call but no tools were given",
                             param="tool_choice")
    return cengine.CACHE.get_or_compile(_key(tools, parallel, False),
                                        lambda: _build(tools, parallel, False))


def lazy_call_grammar(tools: Sequence[ToolSpec], *, parallel: bool = True
                      ) -> Tuple[str, cengine.Grammar]:
    """(trigger, grammar of what follows the trigger) for tool_choice auto."""
    return OPEN, cengine.CACHE.get_or_compile(_key(tools, parallel, True),
                                              lambda: _build(tools, parallel, True))


# --- response side: reading calls back ----------------------------------------------------

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


_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), re.S)


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

    def feed(self, text: str) -> List[Tuple[str, Any]]:
        self.buf += text
        out: List[Tuple[str, Any]] = []
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

    def finish(self) -> List[Tuple[str, Any]]:
        """Whatever is left: an unterminated block (only on cancel) comes back as text."""
        rest = (OPEN if self.in_call else "") + self.buf
        self.buf, self.in_call = "", False
        return [("text", rest)] if rest else []


def _partial_suffix(s: str, tag: str) -> int:
    """Length of the longest suffix of s that is a proper prefix of tag."""
    for n in range(min(len(s), len(tag) - 1), 0, -1):
        if s.endswith(tag[:n]):
            return n
    return 0


def tool_choice_mode(choice: Any, tools: Sequence[ToolSpec], api: str) -> Tuple[str, Optional[str]]:
    """-> (mode, tool name) with mode one of none | auto | required | named."""
    if choice is None:
        return ("auto" if tools else "none"), None
    if isinstance(choice, str):
        mapped = {"none": "none", "auto": "auto", "required": "required", "any": "required"}
        if choice not in mapped:
            raise InvalidRequest(f"unknown tool_choice '{choice}'", param="tool_choice")
        mode, name = mapped[choice], None
    elif isinstance(choice, dict):
        kind = choice.get("type")
        if api == "anthropic":
            if kind in ("auto", "any", "none"):
                mode, name = {"auto": "auto", "any": "required", "none": "none"}[kind], None
            elif kind == "tool":
                mode, name = "named", choice.get("name")
            else:
                raise InvalidRequest(f"unknown tool_choice type '{kind}'", param="tool_choice")
        else:
            if kind in ("none", "auto", "required") and "function" not in choice and "name" not in choice:
                mode, name = kind, None
            elif kind == "function":
                fn = choice.get("function", choice)
                mode, name = "named", fn.get("name") if isinstance(fn, dict) else None
            else:
                raise InvalidRequest(f"unknown tool_choice type '{kind}'", param="tool_choice")
    else:
        raise InvalidRequest("tool_choice must be a string or an object", param="tool_choice")
    if mode == "named":
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise InvalidRequest(f"tool_choice names the function '{name}', which is not among the "
                                 f"offered tools", param="tool_choice")
    if mode in ("required", "named") and not tools:
        raise InvalidRequest(f"tool_choice '{mode}' needs at least one tool", param="tool_choice")
    if mode == "auto" and not tools:
        mode = "none"
    return mode, name
