"""Gemma 4's tool calls: `<|tool_call>call:NAME{key:VALUE,...}<tool_call|>`, not JSON.

What its template (`google-gemma-4-31B-it`, `-interleaved`) writes for an earlier call, and so
what the grammar asks for:

- `<|tool_call>` and `<tool_call|>` (special tokens of Gemma 4's vocabulary) around each call,
  calls back to back; `call:` and the tool's name, then the arguments as an object;
- an object is `{key:VALUE,...}` with bare keys in the template's order (jinja's `dictsort`:
  by key, case-insensitive), no spaces; an array is `[VALUE,...]`;
- a string is its text between two `<|"|>` tokens (no escaping: the text never holds the
  quote token's own text); numbers, `true`, `false` and `null` are written as in JSON.

The argument grammar is built here from each tool's parameter schema in that syntax, for
the keywords the syntax can hold (type, enum, const, anyOf, properties, required, items,
minItems, maxItems, minLength, maxLength, and the numeric bounds through cengine's JSON
number grammar); anything else is refused with a ToolFormatError naming the keyword, never
weakened. A string with a length bound leaves out `|` (so that a regex can count its
characters and it still never holds `<|"|>`) and control characters; one without holds
anything but `<|"|>`.

The tool's name is not inside a JSON object: CALL_POINTERS is None.
"""
from __future__ import annotations

import json
import re
from typing import Any, List, Optional, Sequence, Tuple

import cengine

from .base import Dialect, offered_call
from .common import ToolCall, ToolFormatError, ToolSpec

OPEN = "<|tool_call>"
CLOSE = "<tool_call|>"
QUOTE = '<|"|>'
CALL = "call:"

# any text without the quote token's text: a run of non-'<', or '<' runs ending in a
# character that breaks '<|"|>', with an unfinished '<|"|' allowed at the end
_NOT_QUOTE = ('(?:[^<]|<(?:<|\\|<|\\|"<|\\|"\\|<)*(?:[^<|]|\\|[^<"]|\\|"[^<|]|\\|"\\|[^<>]))*'
              '(?:<(?:<|\\|<|\\|"<|\\|"\\|<)*(?:\\||\\|"|\\|"\\|)?)?')
# what a key may not hold: the reader ends a key at ':' (and an object at '}')
_KEY_FORBIDDEN = set(':{}[],"<>|\n')
_ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "deprecated",
                "readOnly", "writeOnly", "$schema", "$id", "$defs", "definitions", "nullable"}
_NUMERIC = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
_BY_TYPE = {"string": {"minLength", "maxLength"}, "integer": _NUMERIC, "number": _NUMERIC,
            "boolean": set(), "null": set(),
            "object": {"properties", "required", "additionalProperties"},
            "array": {"items", "minItems", "maxItems", "uniqueItems"}}


def _refuse(tool: str, pointer: str, keyword: str, why: str) -> ToolFormatError:
    return ToolFormatError(f"tool '{tool}': '{keyword}' at '{pointer or '/'}' cannot be enforced "
                           f"in Gemma 4's call syntax ({why})", param="tools")


def dictsort(keys) -> List[str]:
    """jinja's dictsort order: by key, case-insensitive, ties in the given order."""
    return sorted(keys, key=str.lower)


class _Builder:
    """The grammar of one tool's arguments in Gemma 4's syntax."""

    def __init__(self, dialect: "Gemma4", tool: str):
        self.d = dialect
        self.tool = tool

    def quote(self) -> cengine.Part:
        return self.d.tok(QUOTE)

    def value(self, schema: Any, ptr: str) -> cengine.Part:
        if schema is True or schema == {} or (isinstance(schema, dict)
                                               and not set(schema) - _ANNOTATIONS):
            raise _refuse(self.tool, ptr, "type", "a value of any type: name its type")
        if not isinstance(schema, dict):
            raise _refuse(self.tool, ptr, "false", "a schema that accepts nothing")
        keys = set(schema) - _ANNOTATIONS
        if "$ref" in keys:
            raise _refuse(self.tool, ptr, "$ref", "references are not followed")
        if "anyOf" in keys:
            if keys - {"anyOf"}:
                raise _refuse(self.tool, ptr, sorted(keys - {"anyOf"})[0],
                              "only annotations may stand beside anyOf")
            subs = schema["anyOf"]
            if not isinstance(subs, list) or not subs:
                raise _refuse(self.tool, ptr, "anyOf", "not a non-empty list")
            return cengine.OneOf(*[self.value(s, f"{ptr}/anyOf/{i}") for i, s in enumerate(subs)])
        types = schema.get("type")
        if types is None and ("enum" in keys or "const" in keys):
            types = ["string", "integer", "number", "boolean", "null", "object", "array"]
        if types is None:
            raise _refuse(self.tool, ptr, sorted(keys)[0], "no type is given")
        tlist = [types] if isinstance(types, str) else list(types)
        if not tlist or any(t not in _BY_TYPE for t in tlist):
            raise _refuse(self.tool, ptr, "type", f"unknown type {types!r}")
        allowed = {"type", "enum", "const"}.union(*(_BY_TYPE[t] for t in tlist))
        extra = sorted(keys - allowed)
        if extra:
            raise _refuse(self.tool, ptr, extra[0], "the syntax has no way to hold it")
        if schema.get("uniqueItems"):
            raise _refuse(self.tool, ptr, "uniqueItems", "items are not compared")
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            if not isinstance(values, list):
                raise _refuse(self.tool, ptr, "enum", "not a list")
            typed = [v for v in values if any(_has_type(v, t) for t in tlist)]
            if "enum" in schema and "const" in schema:
                typed = [v for v in typed if v == schema["const"]]
            if not typed:
                raise _refuse(self.tool, ptr, "enum", "no value of the given type")
            others = keys - {"type", "enum", "const"}
            if others:
                raise _refuse(self.tool, ptr, sorted(others)[0], "beside enum / const")
            return cengine.OneOf(*[self.literal(v, ptr) for v in typed])
        # "integer" among the types makes "number" cover it already; keep each once
        return cengine.OneOf(*[self.typed(t, schema, ptr) for t in dict.fromkeys(tlist)])

    def typed(self, t: str, schema: dict, ptr: str) -> cengine.Part:
        if t == "string":
            lo, hi = schema.get("minLength", 0), schema.get("maxLength")
            if "minLength" in schema or "maxLength" in schema:
                # no '|': the quote token's text cannot form, and a regex can count; no
                # control character: the closer pads with spaces, as for JSON strings
                body = "[^|\\x00-\\x1f]{%d,%s}" % (lo, "" if hi is None else hi)
            else:
                body = _NOT_QUOTE
            return cengine.Concat(self.quote(), cengine.Regex(body), self.quote())
        if t in ("integer", "number"):
            sub = {k: schema[k] for k in _NUMERIC if k in schema}
            return cengine.JsonSchema({"type": t, **sub})
        if t == "boolean":
            return cengine.OneOf("true", "false")
        if t == "null":
            return cengine.Text("null")
        if t == "array":
            if "items" not in schema:
                raise _refuse(self.tool, ptr, "items", "an array of any values: name its items")
            item = self.value(schema["items"], f"{ptr}/items")
            lo, hi = schema.get("minItems", 0), schema.get("maxItems")
            return cengine.Concat("[", cengine.Repeat(item, lo, hi, separator=","), "]")
        return self.object(schema, ptr)

    def object(self, schema: dict, ptr: str) -> cengine.Part:
        props = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict):
            raise _refuse(self.tool, ptr, "properties", "not an object")
        if not isinstance(extra, bool):
            raise _refuse(self.tool, ptr, "additionalProperties",
                          "undeclared keys are never written; a schema for them is not enforced")
        missing = [r for r in required if r not in props]
        if missing:
            raise _refuse(self.tool, ptr, "required", f"{missing[0]!r} has no schema in properties")
        members: List[Tuple[cengine.Part, bool]] = []
        for key in dictsort(props):
            if not key or _KEY_FORBIDDEN.intersection(key):
                raise _refuse(self.tool, f"{ptr}/properties/{key}", "properties",
                              "a key holding one of : { } [ ] , \" < > | or a newline cannot be "
                              "written bare")
            part = cengine.Concat(key + ":", self.value(props[key], f"{ptr}/properties/{key}"))
            members.append((part, key in required))
        return cengine.Concat("{", _members(members), "}")

    def literal(self, v: Any, ptr: str) -> cengine.Part:
        if isinstance(v, str):
            if QUOTE in v:
                raise _refuse(self.tool, ptr, "enum", f"the value {v!r} holds the quote token")
            return cengine.Concat(self.quote(), cengine.Text(v), self.quote())
        if isinstance(v, (bool, int, float)) or v is None:
            return cengine.Text(json.dumps(v))
        if isinstance(v, list):
            parts: List[Any] = ["["]
            for i, x in enumerate(v):
                parts += ([","] if i else []) + [self.literal(x, ptr)]
            return cengine.Concat(*parts, "]")
        parts = ["{"]
        for i, k in enumerate(dictsort(v)):
            if not k or _KEY_FORBIDDEN.intersection(k):
                raise _refuse(self.tool, ptr, "enum", f"the key {k!r} cannot be written bare")
            parts += ([","] if i else []) + [k + ":", self.literal(v[k], ptr)]
        return cengine.Concat(*parts, "}")


def _has_type(v: Any, t: str) -> bool:
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool) or (
            isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if t == "object":
        return isinstance(v, dict)
    return isinstance(v, list)


def _members(members: List[Tuple[cengine.Part, bool]]) -> cengine.Part:
    """The members in order, each required one present, each optional one present or not, a
    comma between two present ones: the first present member is chosen, every later one is
    ("," member) or (for an optional one) nothing."""
    if not members:
        return cengine.Text("")
    options: List[cengine.Part] = []
    for first, (part, _) in enumerate(members):
        rest = [cengine.Concat(",", p) if req else cengine.Repeat(cengine.Concat(",", p), 0, 1)
                for p, req in members[first + 1:]]
        options.append(cengine.Concat(part, *rest))
        if members[first][1]:
            break       # a required member cannot be skipped: none after it comes first
    else:
        options.append(cengine.Text(""))    # every member optional and absent
    return cengine.OneOf(*options)


# --- reading the syntax back ---------------------------------------------------------------

class _More(Exception):
    """The text ends inside the call."""


class _Bad(Exception):
    """The text is no call of this syntax."""


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# what a number may still grow from at the end of the text so far (`-`, `1.`, `2e`, `2e-`):
# streamed text is cut between any two tokens
_NUMBER_START = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?")


class _Reader:
    def __init__(self, text: str):
        self.t = text
        self.i = 0

    def expect(self, s: str) -> None:
        rest = self.t[self.i:self.i + len(s)]
        if rest != s:
            if s.startswith(rest) and self.i + len(rest) == len(self.t):
                raise _More()
            raise _Bad()
        self.i += len(s)

    def peek(self) -> str:
        if self.i >= len(self.t):
            raise _More()
        return self.t[self.i]

    def value(self) -> Any:
        c = self.peek()
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == "<":
            self.expect(QUOTE)
            end = self.t.find(QUOTE, self.i)
            if end < 0:
                raise _More()
            s, self.i = self.t[self.i:end], end + len(QUOTE)
            return s
        for word, v in (("true", True), ("false", False), ("null", None)):
            if c == word[0]:
                self.expect(word)
                return v
        if _NUMBER_START.fullmatch(self.t, self.i):
            raise _More()       # a number may go on (or begin: a lone `-`)
        m = _NUMBER.match(self.t, self.i)
        if not m:
            raise _Bad()
        self.i = m.end()
        return json.loads(m.group())

    def key(self) -> str:
        if self.peek() == "<":
            self.expect(QUOTE)
            end = self.t.find(QUOTE, self.i)
            if end < 0:
                raise _More()
            k, self.i = self.t[self.i:end], end + len(QUOTE)
            self.expect(":")
            return k
        end = self.i
        while end < len(self.t) and self.t[end] not in ":}":
            end += 1
        if end == len(self.t):
            raise _More()
        k = self.t[self.i:end]
        if not k or self.t[end] != ":" or _KEY_FORBIDDEN.intersection(k):
            raise _Bad()
        self.i = end + 1
        return k

    def obj(self) -> dict:
        self.expect("{")
        out: dict = {}
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            k = self.key()
            out[k] = self.value()
            c = self.peek()
            self.i += 1
            if c == "}":
                return out
            if c != ",":
                raise _Bad()

    def arr(self) -> list:
        self.expect("[")
        out: list = []
        if self.peek() == "]":
            self.i += 1
            return out
        while True:
            out.append(self.value())
            c = self.peek()
            self.i += 1
            if c == "]":
                return out
            if c != ",":
                raise _Bad()


def read_call(text: str) -> Tuple[str, Any, int]:
    """`call:NAME{...}<tool_call|>` at the start of text -> (NAME, arguments, index after the
    closing token); _More while it is unfinished, _Bad when it is not such a call."""
    r = _Reader(text)
    r.expect(CALL)
    brace = text.find("{", r.i)
    if brace < 0:
        if any(c in text[r.i:] for c in "<}\n"):
            raise _Bad()
        raise _More()
    name = text[r.i:brace]
    if not name or any(c in name for c in "<>}:\n"):
        raise _Bad()
    r.i = brace
    args = r.obj()
    r.expect(CLOSE)
    return name, args, r.i


def write_value(v: Any) -> str:
    """A value as the template's format_argument writes it in a call (bare keys)."""
    if isinstance(v, str):
        return QUOTE + v + QUOTE
    if isinstance(v, dict):
        return "{" + ",".join(k + ":" + write_value(v[k]) for k in dictsort(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(write_value(x) for x in v) + "]"
    return json.dumps(v)


class Gemma4(Dialect):
    name = "gemma4"
    NAME_MARKS = (OPEN + CALL, "{")
    JSON_ARGUMENTS = False          # Gemma's own value syntax: the tool name alone
    TRIGGER = OPEN
    DETECT_ALL, DETECT_SCORE = (OPEN + "call:",), 30
    family = "Gemma 4"
    CALL_POINTERS = None

    def arguments_part(self, tool: ToolSpec) -> cengine.Part:
        params = tool.parameters
        if params is True or params == {}:
            params = {"type": "object", "properties": {}}
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            raise ToolFormatError(f"tool '{tool.name}': its parameters must be an object schema",
                                  param="tools")
        return _Builder(self, tool.name).object({"type": "object", **params}, "")

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        for t in tools:
            if not t.name or any(c in t.name for c in "<>{}:\n"):
                raise ToolFormatError(f"tool '{t.name}': a name holding < > {{ }} : or a newline "
                                      f"cannot be written in Gemma 4's call syntax",
                                      param="tools")
        calls = [cengine.Concat(CALL + t.name, self.arguments_part(t)) for t in tools]
        return cengine.TriggeredRegion(self.tok(OPEN), cengine.OneOf(*calls), self.tok(CLOSE),
                                       repeat=parallel)

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool):
        try:
            name, args, end = read_call(text)
        except _More:
            return [], 0, False
        except _Bad:
            return [None], len(text), True
        call: Optional[ToolCall] = offered_call(name, args, tools)
        return [call], end, True

    def call_text(self, name: Any, arguments: Any) -> str:
        args = arguments if isinstance(arguments, dict) else {}
        return OPEN + CALL + str(name) + write_value(args) + CLOSE


DIALECT = Gemma4()
