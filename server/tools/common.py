"""What every tool-call dialect shares: the offered tools, the calls read back, the three APIs'
tool lists and tool_choice normalised, and the error those raise.

A dialect (one module beside this one, e.g. `hermes`) supplies the rest: how tools are written
into a prompt, the grammar that makes calls unbreakable and the parser that reads them back
(the `ToolDialect` protocol below). This package imports cengine only, never the API layer:
its errors are `ToolFormatError`, which the API maps to a 400.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, List, Optional, Protocol, Sequence, Tuple

import cengine

EMPTY_PARAMETERS = {"type": "object", "properties": {}}


class ToolFormatError(ValueError):
    """A tool list or tool_choice the server cannot honour; `param` names the request field."""

    def __init__(self, message: str, *, param: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.param = param


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


# one event of a call stream: ("text", str) or ("call", ToolCall)
StreamEvent = Tuple[str, Any]


class CallReader(Protocol):
    """Splits generated text into text and whole calls, incrementally."""

    def feed(self, text: str) -> List[StreamEvent]: ...

    def finish(self) -> List[StreamEvent]: ...

    def discard(self) -> bool:
        """Drop the held-back unfinished call (the budget ended it after a complete call)."""
        ...


class ToolDialect(Protocol):
    """One way of writing tool calls (a module of this package)."""

    # what /health and --tool-dialect call it
    name: str
    # (pointer of the tool name, pointer of the arguments) inside one call's JSON object; None
    # where the tool name is not inside a JSON object (then NAME_MARKS locate it)
    CALL_POINTERS: Optional[Tuple[str, str]]
    # where CALL_POINTERS is None: the text before each tool name and the text(s) after it
    NAME_MARKS: Optional[Tuple[str, object]]
    # False where a call's arguments are not one JSON object
    JSON_ARGUMENTS: bool

    @property
    def CALL_OPEN(self) -> str:
        """What the call region starts with (a response-format document never does)."""
        ...

    def framing(self, text: str) -> cengine.Part:
        """Text holding the model's special tokens (an answer's framing), as composition parts."""
        ...

    def plain_messages(self, messages: List[dict], tools: Optional[List[dict]]) -> List[dict]: ...

    def call_grammar(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.Grammar: ...

    def lazy_call_grammar(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                          ) -> cengine.TriggeredGrammar: ...

    def answer_or_call_grammar(self, answer: cengine.Part, tools: Sequence[ToolSpec], *,
                               parallel: bool = True, compact: bool = False
                               ) -> cengine.Grammar: ...

    def call_reader(self, tools: Sequence[ToolSpec]) -> CallReader: ...


# --- request side: normalising the three APIs' tool lists ----------------------------------

def _spec(name, description, parameters, where: str) -> ToolSpec:
    if not isinstance(name, str) or not name:
        raise ToolFormatError(f"{where}: a tool needs a non-empty string 'name'", param="tools")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ToolFormatError(f"{where}: tool '{name}' has a non-string description",
                              param="tools")
    if parameters is None:
        parameters = EMPTY_PARAMETERS
    if not isinstance(parameters, (dict, bool)):
        raise ToolFormatError(f"{where}: the parameters of tool '{name}' must be a JSON Schema "
                              f"object", param="tools")
    return ToolSpec(name, description, parameters)


def parse_tools(tools: Any, api: str) -> List[ToolSpec]:
    """OpenAI chat / Ollama: {"type":"function","function":{name,description,parameters}};
    OpenAI responses: {"type":"function",name,description,parameters};
    Anthropic: {name, description, input_schema}."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ToolFormatError("'tools' must be a list", param="tools")
    out: List[ToolSpec] = []
    for i, t in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(t, dict):
            raise ToolFormatError(f"{where} must be an object", param="tools")
        if api == "anthropic":
            out.append(_spec(t.get("name"), t.get("description"), t.get("input_schema"), where))
            continue
        if t.get("type", "function") != "function":
            raise ToolFormatError(f"{where}: only tools of type 'function' are supported",
                                  param="tools")
        fn = t.get("function") if "function" in t else t
        if not isinstance(fn, dict):
            raise ToolFormatError(f"{where}.function must be an object", param="tools")
        out.append(_spec(fn.get("name"), fn.get("description"), fn.get("parameters"), where))
    names = [s.name for s in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ToolFormatError(f"tool names must be unique; repeated: {sorted(dup)}", param="tools")
    return out


def allowed_tool_names(choice: Any, tools: Sequence[ToolSpec]) -> Optional[List[str]]:
    """The names an OpenAI `allowed_tools` tool_choice lets the model call (None: any
    offered tool); each must be an offered tool."""
    if not isinstance(choice, dict) or choice.get("type") != "allowed_tools":
        return None
    inner = choice.get("allowed_tools", choice)
    listed = inner.get("tools") if isinstance(inner, dict) else None
    if not isinstance(listed, list) or not listed:
        raise ToolFormatError("allowed_tools needs a non-empty list 'tools'",
                              param="tool_choice")
    offered = {t.name for t in tools}
    names = []
    for t in listed:
        fn = t.get("function", t) if isinstance(t, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if name not in offered:
            raise ToolFormatError(f"allowed_tools names the function {name!r}, which is not "
                                  f"among the offered tools", param="tool_choice")
        names.append(name)
    return names


def tool_choice_mode(choice: Any, tools: Sequence[ToolSpec], api: str) -> Tuple[str, Optional[str]]:
    """-> (mode, tool name) with mode one of none | auto | required | named."""
    if choice is None:
        return ("auto" if tools else "none"), None
    if isinstance(choice, str):
        mapped = {"none": "none", "auto": "auto", "required": "required", "any": "required"}
        if choice not in mapped:
            raise ToolFormatError(f"unknown tool_choice '{choice}'", param="tool_choice")
        mode, name = mapped[choice], None
    elif isinstance(choice, dict):
        kind = choice.get("type")
        if api == "anthropic":
            if kind in ("auto", "any", "none"):
                mode, name = {"auto": "auto", "any": "required", "none": "none"}[kind], None
            elif kind == "tool":
                mode, name = "named", choice.get("name")
            else:
                raise ToolFormatError(f"unknown tool_choice type '{kind}'", param="tool_choice")
        else:
            if kind in ("none", "auto", "required") and "function" not in choice \
                    and "name" not in choice:
                mode, name = kind, None
            elif kind == "allowed_tools":
                # OpenAI: {"type": "allowed_tools", "allowed_tools": {"mode", "tools"}} (chat)
                # or {"type": "allowed_tools", "mode", "tools"} (Responses)
                allowed_tool_names(choice, tools)
                inner = choice.get("allowed_tools", choice)
                mode, name = inner.get("mode", "auto"), None
                if mode not in ("auto", "required"):
                    raise ToolFormatError(f"allowed_tools mode must be 'auto' or 'required', "
                                          f"not {mode!r}", param="tool_choice")
            elif kind == "function":
                fn = choice.get("function", choice)
                mode, name = "named", fn.get("name") if isinstance(fn, dict) else None
            else:
                raise ToolFormatError(f"unknown tool_choice type '{kind}'", param="tool_choice")
    else:
        raise ToolFormatError("tool_choice must be a string or an object", param="tool_choice")
    if mode == "named":
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise ToolFormatError(f"tool_choice names the function '{name}', which is not among "
                                  f"the offered tools", param="tool_choice")
    if mode in ("required", "named") and not tools:
        raise ToolFormatError(f"tool_choice '{mode}' needs at least one tool", param="tool_choice")
    if mode == "auto" and not tools:
        mode = "none"
    return mode, name
