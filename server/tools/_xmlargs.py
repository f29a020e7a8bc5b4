"""Arguments written one parameter at a time between XML-like tags (Qwen3-Coder / Qwen3.5,
GLM 4.5-4.7, MiniMax M2): what each parameter's value may be, as a grammar part, and how its
text reads back as JSON. Shared by the dialect modules `qwen3_xml`, `glm` and `minimax`
(this module is not a dialect: the registry skips names starting with `_`).

How a value is written (the templates' own rule: a string as it is, anything else as JSON):

- **raw** (the property's schema admits strings only: `type: "string"`, or an `enum` /
  `const` of strings): the text itself, not quoted, up to the closing tag. The closing text
  (`\\n</parameter>`, `</arg_value>`, `</parameter>`) cannot be part of a value (the reader
  ends the value at its first occurrence), so the grammar leaves out exactly the strings that
  contain it: a documented narrowing. `minLength` / `maxLength` are enforced (code points;
  counted together with the closing text, so a bound is refused, naming it, once
  len(closing text) * bound passes RAW_LENGTH_STATES: maxLength above 315 for Qwen, 341 for
  GLM and MiniMax; a cheaper narrowing, such as no newline in long values, was not taken),
  `enum` / `const` are the literal texts (a literal holding the closing text is refused:
  keyword `enum` / `const`). `pattern`, an enforced `format` (the names cengine enforces) and
  applicators beside `type: "string"` (`allOf`, `anyOf`, `oneOf`, `not`, `if`, `$ref`) would
  need an intersection with that narrowing, which composition cannot express: refused,
  naming the keyword.
- **json** (every other schema: numbers, booleans, null, objects, arrays, and schemas that
  admit strings and other values alike, such as no `type`, `["string", "null"]` or an
  `anyOf`): one JSON document of the property's schema (`cengine.JsonSchema`, every keyword as
  compile_json_schema enforces it), read back with a JSON decoder. Where strings and other
  values are both allowed, a string is therefore written quoted: the template would write
  `2` both for the string "2" and for the number 2, and the grammar must say which one it
  means. Qwen's templates write scalars with Python's `str` (`True`, `False`, `None`): a
  property whose schema is only `type` boolean and/or null also takes those spellings.
- `$ref`s inside a property's schema resolve against the tool's `$defs` / `definitions`
  (copied beside it); any other reference (`#`, `#/properties/...`) is refused.

The parameters themselves must be a flat object of declared properties: `type` "object" (or
none), `properties`, `required` (each a declared name) and `additionalProperties: false` (or
absent: the grammar writes declared parameters only, as JsonSchema does by default).
`additionalProperties` other than false, `patternProperties`, `propertyNames`,
`unevaluatedProperties` other than false, `minProperties` / `maxProperties`, dependencies,
`if` and the applicators (`allOf`, `anyOf`, `oneOf`, `not`, `$ref`) at the top, or `enum` /
`const` there, are refused naming the keyword: they would need parameters the tags cannot
name, or a choice among whole argument objects that one-parameter-at-a-time framing cannot
make. Parameters come in the declared order, required ones always, optional ones or not (the
same order narrowing as JsonSchema's declared property order).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import cengine

from .common import ToolCall, ToolFormatError, ToolSpec

# keywords without effect on validity (docs/json-schema.md)
ANNOTATIONS = frozenset((
    "title", "description", "examples", "default", "$comment", "$schema", "deprecated",
    "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "$anchor",
    "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$defs", "definitions", "$id"))
# the format names cengine enforces (docs/json-schema.md, "format"); others are annotations
ENFORCED_FORMATS = frozenset((
    "date", "time", "date-time", "duration", "uuid", "ipv4", "ipv6", "uri", "uri-reference",
    "iri", "iri-reference", "uri-template", "hostname", "idn-hostname", "email", "idn-email",
    "json-pointer", "relative-json-pointer", "regex"))
# keywords beside type "string" that a raw value cannot enforce together with its closing tag
_RAW_REFUSED = ("pattern", "allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef",
                "$recursiveRef")
# keywords of the whole parameters object that the one-tag-per-parameter form cannot express
_TOP_REFUSED = ("patternProperties", "propertyNames", "minProperties", "maxProperties",
                "dependentRequired", "dependentSchemas", "dependencies", "allOf", "anyOf",
                "oneOf", "not", "if", "$ref", "$dynamicRef", "$recursiveRef", "enum", "const")
# a raw string's length is counted together with how much of the closing text it ends in:
# len(closer) * bound grammar states (about 0.4 ms each to compile on one core); bounds past
# this are refused (maxLength 315 for Qwen's closing text, 341 for GLM's and MiniMax's)
RAW_LENGTH_STATES = 4096
# Qwen's templates write non-container values with Python's str()
PYTHON_LITERALS = {"True": True, "False": False, "None": None}


def refuse(dialect: str, tool: str, where: str, keyword: str, why: str) -> ToolFormatError:
    return ToolFormatError(f"tool '{tool}': {where} uses '{keyword}', which the {dialect} "
                           f"tool-call format cannot enforce ({why})", param="tools")


@dataclass(frozen=True)
class Param:
    """One declared parameter: its name, whether it is required, how its value is written
    ("raw" text or "json") and the grammar part of its value."""

    name: str
    required: bool
    kind: str
    part: cengine.Part
    python_literals: bool = False   # "True" / "False" / "None" accepted (json kind)


@dataclass(frozen=True)
class Signature:
    tool: ToolSpec
    params: Tuple[Param, ...]

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None


# --- raw strings: any text without the closing tag, length-bounded ---------------------------

def _gbnf_char(c: str) -> str:
    o = ord(c)
    return f"\\u{o:04X}" if o <= 0xFFFF else f"\\U{o:08X}"


def _kmp_next(w: str, k: int, c: str) -> int:
    """Matched w[:k], then c: the length of the longest prefix of w that ends here."""
    s = w[:k] + c
    for n in range(min(len(s), len(w)), 0, -1):
        if s.endswith(w[:n]):
            return n
    return 0


def raw_text_gbnf(closer: str, min_len: int = 0, max_len: Optional[int] = None) -> str:
    """GBNF of the strings of min_len..max_len code points that do not contain `closer`: a
    right-linear grammar over (how much of `closer` the text ends with, code points so far);
    past min_len without a maximum only the first coordinate is kept."""
    n = len(closer)
    chars = sorted(set(closer))

    def moves(k: int) -> Tuple[List[Tuple[str, int]], str]:
        """(char -> next state for the closer's characters that lead somewhere but state 0,
        the class of the characters that lead to state 0); a character completing the closer
        is in neither."""
        explicit, excluded = [], []
        for c in chars:
            nk = _kmp_next(closer, k, c)
            if nk == 0:
                continue
            excluded.append(c)
            if nk < n:
                explicit.append((c, nk))
        cls = "[^" + "".join(_gbnf_char(c) for c in excluded) + "]" if excluded else "[^]"
        return explicit, cls

    rules: List[str] = []
    for k in range(n):
        explicit, cls = moves(k)
        alts = ['""'] + [f'"{_gbnf_char(c)}" t{nk}' for c, nk in explicit] + [f"{cls} t0"]
        rules.append(f"t{k} ::= " + " | ".join(alts))
    if max_len is None and min_len == 0:
        return "root ::= t0\n" + "\n".join(rules)
    last = max_len if max_len is not None else min_len
    for m in range(last + 1):
        for k in range(min(m, n - 1) + 1):
            if m == last and max_len is None:
                rules.append(f"s{k}-{m} ::= t{k}")
                continue
            alts = ['""'] if m >= min_len else []
            if m < last:
                explicit, cls = moves(k)
                alts += [f'"{_gbnf_char(c)}" s{nk}-{m + 1}' for c, nk in explicit]
                alts.append(f"{cls} s0-{m + 1}")
            rules.append(f"s{k}-{m} ::= " + " | ".join(alts))
    return "root ::= s0-0\n" + "\n".join(rules)


# --- schemas ---------------------------------------------------------------------------------

def _resolve_local(root: dict, ref: str) -> Optional[Any]:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node


def _through_refs(schema: Any, root: dict) -> Any:
    """A schema that is only a `$ref` (and annotations) is its target, for telling whether it
    admits strings only."""
    for _ in range(32):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)
                and set(schema) - ANNOTATIONS == {"$ref"}):
            return schema
        target = _resolve_local(root, schema["$ref"])
        if target is None:
            return schema
        schema = target
    return schema


def _strings_only(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    t = schema.get("type")
    if t == "string" or t == ["string"]:
        return True
    if t is None and "const" in schema:
        return isinstance(schema["const"], str)
    if t is None and isinstance(schema.get("enum"), list) and schema["enum"]:
        return all(isinstance(v, str) for v in schema["enum"])
    return False


def _python_scalar(schema: Any) -> bool:
    """Only `type` boolean and/or null constrains it (Qwen's True / False / None apply)."""
    if not isinstance(schema, dict) or set(schema) - ANNOTATIONS != {"type"}:
        return False
    t = schema["type"]
    types = t if isinstance(t, list) else [t]
    return bool(types) and all(x in ("boolean", "null") for x in types)


def _refs(node: Any):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(v, str):
                yield k, v
            elif k not in ("enum", "const", "default", "examples"):
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def _count(s: str) -> int:
    return len(s)       # Python counts code points, as JSON Schema's lengths do


class ParamCompiler:
    """Turns a tool's parameter schema into its Signature for one dialect's framing.
    closer: the text that ends a value; python_literals: the template writes True/False/None;
    name_forbidden: characters a parameter or tool name cannot hold in this framing."""

    def __init__(self, dialect: str, closer: str, *, python_literals: bool = False,
                 name_forbidden: str = ""):
        self.dialect = dialect
        self.closer = closer
        self.python_literals = python_literals
        self.name_forbidden = name_forbidden

    def _check_name(self, tool: str, name: str, what: str) -> None:
        bad = [c for c in self.name_forbidden if c in name]
        if bad:
            raise ToolFormatError(f"tool '{tool}': the {what} {name!r} holds {bad[0]!r}, which "
                                  f"the {self.dialect} tool-call format uses as framing",
                                  param="tools")

    def signature(self, tool: ToolSpec) -> Signature:
        self._check_name(tool.name, tool.name, "tool name")
        schema = tool.parameters
        if schema is True or schema == {}:
            return Signature(tool, ())
        if not isinstance(schema, dict):
            raise ToolFormatError(f"tool '{tool.name}': its parameters schema accepts no "
                                  f"arguments", param="tools")
        where = "its parameters schema"
        t = schema.get("type")
        if t is not None and t != "object" and t != ["object"]:
            raise refuse(self.dialect, tool.name, where, "type",
                         "the arguments are an object of named parameters")
        for kw in _TOP_REFUSED:
            if kw in schema:
                raise refuse(self.dialect, tool.name, where, kw,
                             "each parameter is written on its own, by a declared name")
        for kw in ("additionalProperties", "unevaluatedProperties"):
            if kw in schema and schema[kw] is not False:
                raise refuse(self.dialect, tool.name, where, kw,
                             "only declared parameters can be named")
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise ToolFormatError(f"tool '{tool.name}': 'properties' must be an object",
                                  param="tools")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ToolFormatError(f"tool '{tool.name}': 'required' must be a list of names",
                                  param="tools")
        for r in required:
            if r not in props:
                raise refuse(self.dialect, tool.name, where, "required",
                             f"'{r}' is required but not a declared property")
        params = []
        for name, sub in props.items():
            self._check_name(tool.name, name, "parameter name")
            if sub is False:
                if name in required:
                    raise ToolFormatError(f"tool '{tool.name}': parameter '{name}' is "
                                          f"required but its schema is false", param="tools")
                continue
            kind, part, py = self._value(tool.name, name, sub, schema)
            params.append(Param(name, name in required, kind, part, py))
        return Signature(tool, tuple(params))

    def _value(self, tool: str, name: str, sub: Any, root: dict
               ) -> Tuple[str, cengine.Part, bool]:
        where = f"parameter '{name}'"
        target = _through_refs(sub, root)
        if _strings_only(target):
            return "raw", self._raw(tool, where, target), False
        if isinstance(sub, dict):
            sub = dict(sub)
            for k in ("$defs", "definitions", "$schema"):
                if k in root and k not in sub:
                    sub[k] = root[k]
        for kw, ref in _refs(sub):
            if kw != "$ref" or not ref.startswith(("#/$defs/", "#/definitions/")):
                raise refuse(self.dialect, tool, where, kw,
                             "a parameter's schema may refer to the tool's $defs or "
                             "definitions only")
        part: cengine.Part = cengine.JsonSchema(sub)
        py = self.python_literals and _python_scalar(sub)
        if py:
            allowed = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
            lits = [t for t, v in PYTHON_LITERALS.items()
                    if ("null" if v is None else "boolean") in allowed]
            part = cengine.OneOf(part, *[cengine.Text(t) for t in lits])
        return "json", part, py

    def _raw(self, tool: str, where: str, schema: dict) -> cengine.Part:
        for kw in _RAW_REFUSED:
            if kw in schema:
                raise refuse(self.dialect, tool, where, kw,
                             "a string value is written as raw text up to its closing tag")
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in ENFORCED_FORMATS:
            raise refuse(self.dialect, tool, where, "format",
                         "a string value is written as raw text up to its closing tag")
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength")
        for kw, v in (("minLength", lo), ("maxLength", hi)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ToolFormatError(f"tool '{tool}': {where} has a bad '{kw}'",
                                      param="tools")
        literals = None
        if "const" in schema:
            literals = [schema["const"]]
            if "enum" in schema:
                literals = [v for v in literals if v in schema["enum"]]
        elif "enum" in schema:
            literals = schema["enum"]
        if literals is not None:
            kw = "const" if "const" in schema else "enum"
            texts = []
            for v in literals:
                if not isinstance(v, str) or v in texts:
                    continue
                if _count(v) < lo or (hi is not None and _count(v) > hi):
                    continue
                if self.closer in v:
                    raise refuse(self.dialect, tool, where, kw,
                                 f"the value {v!r} holds the closing text {self.closer!r}")
                texts.append(v)
            if not texts:
                raise ToolFormatError(f"tool '{tool}': {where} admits no value",
                                      param="tools")
            return cengine.OneOf(*[cengine.Text(v) for v in texts])
        if hi is not None and hi < lo:
            raise ToolFormatError(f"tool '{tool}': {where} admits no value", param="tools")
        states = len(self.closer) * (hi if hi is not None else lo)
        if states > RAW_LENGTH_STATES:
            kw = "maxLength" if hi is not None else "minLength"
            raise refuse(self.dialect, tool, where, kw,
                         f"a raw string counted to {hi if hi is not None else lo} code points "
                         f"without the closing text needs {states} grammar states, more than "
                         f"the {RAW_LENGTH_STATES} compiled for one value")
        return cengine.Gbnf(raw_text_gbnf(self.closer, lo, hi))


# --- reading values back ---------------------------------------------------------------------

class NeedMore(Exception):
    """The text ends before the call does."""


class Broken(Exception):
    """The text is not a call of this form."""


def expect(text: str, pos: int, literal: str) -> int:
    """The position after `literal` at text[pos]."""
    if text.startswith(literal, pos):
        return pos + len(literal)
    if literal.startswith(text[pos:]):
        raise NeedMore
    raise Broken


def until(text: str, pos: int, stop: str, forbidden: str = "") -> Tuple[str, int]:
    """(the text from pos to the first `stop`, the position of that `stop`); a forbidden
    character before it means the form is broken."""
    end = text.find(stop, pos)
    seg = text[pos:] if end < 0 else text[pos:end]
    if any(c in seg for c in forbidden):
        raise Broken
    if end < 0:
        raise NeedMore
    return seg, end


def read_value(text: str, pos: int, param: Param, closer: str) -> Tuple[Any, int]:
    """(the value at text[pos], the position of its closing text)."""
    if param.kind == "raw":
        end = text.find(closer, pos)
        if end < 0:
            raise NeedMore
        return text[pos:end], end
    end = text.find(closer, pos)
    while end >= 0:
        seg = text[pos:end]
        if param.python_literals and seg in PYTHON_LITERALS:
            return PYTHON_LITERALS[seg], end
        try:
            return json.loads(seg), end
        except ValueError:
            pass
        # a JSON string may hold the closing text: the value ends at a later one
        end = text.find(closer, end + 1)
    raise NeedMore


def arguments(sig: Signature, pairs: Sequence[Tuple[str, Any]]) -> Optional[Dict[str, Any]]:
    """The arguments object, or None when a name is undeclared or repeated or a required
    parameter is missing."""
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out or sig.param(k) is None:
            return None
        out[k] = v
    if any(p.required and p.name not in out for p in sig.params):
        return None
    return out


def optional(part: cengine.Part, required: bool) -> cengine.Part:
    return part if required else cengine.Repeat(part, 0, 1)


def tool_calls(compiler: "ParamCompiler", tools: Sequence[ToolSpec],
               call: Callable[[str, List[cengine.Part]], cengine.Part],
               param: Callable[[str, cengine.Part], cengine.Part]) -> List[cengine.Part]:
    """One part per tool, as a family frames it: `call(tool name, its parameters)`, each
    parameter `param(name, value part)`, optional unless the schema requires it."""
    out = []
    for t in tools:
        sig = compiler.signature(t)
        out.append(call(t.name, [optional(param(p.name, p.part), p.required)
                                 for p in sig.params]))
    return out


def value_text(value: Any, python_scalars: bool) -> str:
    """A value as the templates write it: a string as it is, containers as JSON, other
    scalars as JSON (GLM, MiniMax) or as Python's str() (Qwen)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)) or not python_scalars:
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def one_call(read, text: str, tools):
    """parse_region of a family whose region holds one call: `read(text, tools)` gives
    (call, end) or raises NeedMore / Broken."""
    try:
        call, end = read(text, tools)
    except NeedMore:
        return [], 0, False
    except Broken:
        return [None], 0, True
    return [call], end, True


def read_call(text: str, pos: int, tools, compiler: "ParamCompiler", *, name_end: str,
              name_after: str, param_open: str, key_end: str, key_after: str, value_end: str,
              call_end: str):
    """One call of a form with a name and then one tag per parameter (qwen3_xml, minimax):
    NAME up to `name_end`, `name_after`, then per parameter `param_open` KEY `key_after` VALUE
    `value_end` and a newline, then `call_end`. -> (ToolCall, index after it); NeedMore while
    the text may still become a call, Broken where it cannot."""
    name, pos = until(text, pos, name_end, "\n")
    pos = expect(text, pos, name_after)
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        raise Broken
    sig = compiler.signature(tool)
    pairs: List[Any] = []
    while True:
        if text.startswith(param_open, pos):
            key, pos = until(text, pos + len(param_open), key_end, "\n")
            pos = expect(text, pos, key_after)
            param = sig.param(key)
            if param is None:
                raise Broken
            value, pos = read_value(text, pos, param, value_end)
            pos = expect(text, pos, value_end + "\n")
            pairs.append((key, value))
            continue
        if param_open.startswith(text[pos:]):
            raise NeedMore
        pos = expect(text, pos, call_end)
        args = arguments(sig, pairs)
        if args is None:
            raise Broken
        return ToolCall(name, args), pos
