"""Request fields -> one cengine.Grammar (or none). Every constraint is honoured or refused.

Each API names structured output its own way, and clients carry other servers' conventions:
OpenAI `response_format` (also `{"type": "json_object", "schema": ...}` as llama-cpp-python,
Together and Anyscale take it), Responses `text.format`, Anthropic `output_config.format` (and
the beta `output_format`), Ollama `format`, vLLM `guided_json` / `guided_regex` /
`guided_choice` / `guided_grammar` and `structured_outputs`, llama-server's top-level
`json_schema` and `grammar`; all APIs also take the llamay extensions (`llamay_schema`,
`llamay_format`, `llamay_grammar`, `llamay_regex`, `llamay_lexicon`). At most one may be given:
two constraints on one output would have to be intersected, and silently picking one would be
a lie. A field this module does not understand but whose name looks like a constraint is a
400 (`refuse_unknown`), never ignored. `llamay_choice_logprobs` needs JSON
output (a schema, JSON mode, tools: decision points are found in it as it is generated), a
choice list or a lexicon (whose words are the alternatives).

One map: `request_constraints(body, route)` is the only reader of constraint fields. It
returns every constraint the body carries, in every spelling the route accepts (`SPELLINGS`),
with the tools' parameter schemas; the request limits (limits.check_body), the conflict check
(`plan`) and the compile (runner.Turn.compile_grammars) all read that one list, and the fields
each route understands (`understood`, for refuse_unknown) are read off the same table.

A request is planned completely (`plan`: types, conflicts, what each kind needs) before anything
compiles; the constraint is then compiled once, in the shape it is used: alone, or inside the
tool-call union (runner.Turn.compile_grammars, on the compile pool).

Documents are compiled in the generation form (no whitespace around the root value): once
the root value closes only the end of the output may follow, so the turn ends there.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, NamedTuple, Optional

import cengine

from ..tools import ToolSpec, parse_tools
from .errors import InvalidRequest

log = logging.getLogger("llamay")

EXTENSIONS = ("llamay_schema", "llamay_format", "llamay_grammar", "llamay_regex", "llamay_lexicon")

# OpenAI's json_object promises a JSON object, not any JSON value
OBJECT_SCHEMA = {"type": "object"}


class ConstraintField(NamedTuple):
    """One constraint a request carries: where (the field path as the body spells it), what
    kind (json | object | schema | grammar | regex | choice | lexicon, or TOOL_PARAMETERS) and
    its value as sent."""
    path: str
    kind: str
    value: Any


# the kind of a tool's parameter schema: compiled into the tool-call grammar, never alone
TOOL_PARAMETERS = "tool_parameters"

@dataclass
class Constraint:
    """The output constraint of a request, planned (validated) but not compiled: `compile()`
    gives its grammar alone; runner.Turn decides whether it is used alone or as `part` inside
    the tool-call union, and compiles it once, in that shape."""
    param: Optional[str] = None                 # the request field it came from
    kind: str = "text"      # text | json | object | schema | grammar | regex | choice | lexicon
    value: Any = None                           # the value as compiled (a schema parsed)
    alternatives: Optional[List[str]] = None    # a choice list's or lexicon's words
    # the same constraint as a composition part, so it can be one alternative beside tool
    # calls (tool_choice auto); None where no part expresses it (a lexicon)
    part: Optional[cengine.Part] = None
    # JSON without any whitespace outside strings (vLLM's disable_any_whitespace)
    compact: bool = False

    @property
    def present(self) -> bool:
        return self.kind != "text"

    def compile(self) -> Optional[cengine.Grammar]:
        """The constraint's grammar on its own (None: no constraint). CompileError propagates
        (-> 400); runs on the compile pool, under the server's budget."""
        if not self.present:
            return None
        grammar = _compile_alone(self)
        report_ignored(grammar, self.param)
        return grammar


@dataclass(frozen=True)
class RequestConstraints:
    """Every constraint a request carries (request_constraints): the output constraint
    spellings found (a valid request has at most one), and the tools offered, parsed once, with
    their parameter schemas as fields."""
    output: List[ConstraintField] = field(default_factory=list)
    tools: List[ToolSpec] = field(default_factory=list)
    tool_fields: List[ConstraintField] = field(default_factory=list)
    # the field asking for JSON without whitespace (compact_param), if any
    compact: Optional[str] = None

    def fields(self) -> List[ConstraintField]:
        return self.output + self.tool_fields


# --- field names: understood, known and ignored, or refused ------------------------------

# a top-level (or options / text) field whose name matches this may constrain the output:
# unless the route understands it, it is refused by name rather than ignored
CONSTRAINT_LIKE = re.compile(r"guided|grammar|schema|regex|structured|format|constrain|lexicon"
                             r"|choice|json|logit_bias|ebnf|lark|pattern", re.IGNORECASE)


def refuse_unknown(body: dict, understood: Iterable[str], *, prefix: str = "") -> None:
    """400 for a field whose name looks like an output constraint (or a logit bias) and that
    this route does not understand. Fields with other names are ignored (docs/server.md lists
    the known ones)."""
    known = set(understood)
    for name, value in body.items():
        if name in known or not isinstance(name, str):
            continue
        if value is None or value is False or value == {} or value == [] or value == "":
            continue      # an empty value constrains nothing (clients send `logit_bias: {}`)
        if CONSTRAINT_LIKE.search(name):
            raise InvalidRequest(f"'{prefix}{name}' is not supported here and looks like an "
                                 f"output constraint; it is refused rather than ignored",
                                 param=prefix + name)


def extension_candidates(body: dict, prefix: str = "") -> List[ConstraintField]:
    """The llamay_* fields of a body (or of Ollama's options), as candidates."""
    out: List[ConstraintField] = []
    for name in EXTENSIONS:
        if name in body and body[name] is not None:
            kind = name[len("llamay_"):]
            out.append(ConstraintField(prefix + name, "json" if kind == "format" else kind,
                                      body[name]))
    return out


_RF_KEYS = {"json_object": {"type", "schema"},
            "json_schema": {"type", "json_schema", "schema", "name", "description", "strict"},
            "text": {"type"}}


def openai_response_format(rf: Any, param: str) -> List[ConstraintField]:
    """OpenAI chat `response_format` / Responses `text.format` (name, schema inline there);
    `json_object` with a `schema` is that schema (llama-cpp-python, Together, Anyscale)."""
    if rf is None:
        return []
    if not isinstance(rf, dict):
        raise InvalidRequest(f"'{param}' must be an object", param=param)
    kind = rf.get("type")
    if kind not in _RF_KEYS:
        raise InvalidRequest(f"'{param}.type' must be text, json_object or json_schema, not "
                             f"{kind!r}", param=param)
    extra = sorted(set(rf) - _RF_KEYS[kind])
    if extra:
        raise InvalidRequest(f"'{param}' of type {kind} does not take {', '.join(extra)}; it is "
                             f"refused rather than ignored", param=param)
    if kind == "text":
        return []
    if kind == "json_object":
        if rf.get("schema") is not None:
            return [ConstraintField(param, "schema", rf["schema"])]
        return [ConstraintField(param, "object", None)]
    js = rf.get("json_schema", rf)      # chat nests it; Responses and llama-server do not
    if not isinstance(js, dict) or "schema" not in js:
        raise InvalidRequest(f"'{param}' of type json_schema needs a 'schema'", param=param)
    return [ConstraintField(param, "schema", js["schema"])]


def ollama_format(fmt: Any) -> List[ConstraintField]:
    if fmt is None or fmt == "":
        return []
    if fmt == "json":
        # Ollama's JSON mode grammar has an object at its root, as OpenAI's json_object
        return [ConstraintField("format", "object", None)]
    if isinstance(fmt, dict):
        return [ConstraintField("format", "schema", fmt)]
    raise InvalidRequest("'format' must be \"json\" or a JSON Schema object", param="format")


# vLLM's guided decoding fields and llama-server's, as the OpenAI-shaped routes take them
VLLM_GUIDED = {"guided_json": "schema", "guided_regex": "regex", "guided_choice": "choice",
               "guided_grammar": "grammar"}
STRUCTURED_OUTPUTS = {"json": "schema", "regex": "regex", "choice": "choice",
                      "grammar": "grammar", "json_object": "object"}
# structured_outputs keys that select vLLM's backend or its fallback: the engine here is the
# only backend and never falls back, so they cannot change the output
STRUCTURED_OUTPUTS_IGNORED = {"disable_fallback", "disable_additional_properties", "backend"}
# vLLM's backend options, written after the backend's name in guided_decoding_backend
# ("xgrammar:disable-any-whitespace,no-fallback"): the first is honoured, the others cannot
# change the output here (one backend, no fallback, objects closed already)
BACKEND_OPTION_COMPACT = "disable-any-whitespace"
BACKEND_OPTIONS_IGNORED = {"no-fallback", "disable-additional-properties"}
# the constraint kinds whose output is JSON: the only ones disable_any_whitespace applies to
JSON_KINDS = ("schema", "object", "json")
LLAMA_SERVER = {"json_schema": "schema", "grammar": "grammar"}
# understood by every OpenAI-shaped route beside its constraint spellings (understood())
OPENAI_OTHER_FIELDS = ("guided_decoding_backend", "llamay_choice_logprobs")


def vllm_candidates(body: dict) -> List[ConstraintField]:
    out: List[ConstraintField] = []
    for name, kind in VLLM_GUIDED.items():
        if body.get(name) is not None:
            out.append(ConstraintField(name, kind, body[name]))
    so = body.get("structured_outputs")
    if so is not None:
        if not isinstance(so, dict):
            raise InvalidRequest("'structured_outputs' must be an object",
                                 param="structured_outputs")
        for key, value in so.items():
            param = f"structured_outputs.{key}"
            if key in STRUCTURED_OUTPUTS:
                if value is None or (key == "json_object" and value is False):
                    continue
                if key == "json_object" and value is not True:
                    raise InvalidRequest(f"'{param}' must be a boolean", param=param)
                out.append(ConstraintField(param, STRUCTURED_OUTPUTS[key], value))
            elif key in STRUCTURED_OUTPUTS_IGNORED or key == "disable_any_whitespace":
                continue        # the flag is read by compact_param
            else:
                raise InvalidRequest(f"'{param}' is not supported; it is refused rather than "
                                     f"ignored", param=param)
    return out


def compact_param(body: dict) -> Optional[str]:
    """The field asking for JSON without whitespace outside strings, if any: vLLM's
    `structured_outputs.disable_any_whitespace: true`, or its older spelling as a backend
    option, `guided_decoding_backend: "xgrammar:disable-any-whitespace"`. Other backend
    options are refused by name unless they cannot change the output."""
    found = None
    so = body.get("structured_outputs")
    if isinstance(so, dict) and so.get("disable_any_whitespace") is not None:
        flag = so["disable_any_whitespace"]
        if not isinstance(flag, bool):
            raise InvalidRequest("'structured_outputs.disable_any_whitespace' must be a boolean",
                                 param="structured_outputs.disable_any_whitespace")
        if flag:
            found = "structured_outputs.disable_any_whitespace"
    backend = body.get("guided_decoding_backend")
    if backend is not None:
        if not isinstance(backend, str):
            raise InvalidRequest("'guided_decoding_backend' must be a string",
                                 param="guided_decoding_backend")
        _, _, options = backend.partition(":")
        for option in filter(None, (o.strip() for o in options.split(","))):
            if option == BACKEND_OPTION_COMPACT:
                found = found or "guided_decoding_backend"
            elif option not in BACKEND_OPTIONS_IGNORED:
                raise InvalidRequest(f"'guided_decoding_backend' option '{option}' is not "
                                     f"supported; it is refused rather than ignored",
                                     param="guided_decoding_backend")
    return found


def llama_server_candidates(body: dict) -> List[ConstraintField]:
    return [ConstraintField(name, kind, body[name]) for name, kind in LLAMA_SERVER.items()
            if body.get(name) is not None]


def openai_candidates(body: dict, rf_param: Optional[str] = "response_format"
                      ) -> List[ConstraintField]:
    """Everything an OpenAI-shaped body may constrain its output with: `rf_param` (chat's and
    completions' response_format, Responses' text.format), vLLM's and llama-server's fields
    and the llamay_* extensions."""
    if rf_param == "text.format":
        text = body.get("text")
        out = openai_response_format(text.get("format") if isinstance(text, dict) else None,
                                     rf_param)
    else:
        out = openai_response_format(body.get(rf_param), rf_param) if rf_param else []
    return out + vllm_candidates(body) + llama_server_candidates(body) + \
        extension_candidates(body)


def anthropic_candidates(body: dict) -> List[ConstraintField]:
    """`output_config.format` (and the beta `output_format`): {"type": "json_schema", schema}."""
    out: List[ConstraintField] = []
    cfg = body.get("output_config")
    if cfg is not None:
        if not isinstance(cfg, dict):
            raise InvalidRequest("'output_config' must be an object", param="output_config")
        for key in cfg:
            if key not in ("format", "effort"):
                raise InvalidRequest(f"'output_config.{key}' is not supported; it is refused "
                                     f"rather than ignored", param=f"output_config.{key}")
        out += _anthropic_format(cfg.get("format"), "output_config.format")
    out += _anthropic_format(body.get("output_format"), "output_format")
    return out + extension_candidates(body)


def _anthropic_format(fmt: Any, param: str) -> List[ConstraintField]:
    if fmt is None:
        return []
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or "schema" not in fmt:
        raise InvalidRequest(f"'{param}' must be {{\"type\": \"json_schema\", \"schema\": ...}}",
                             param=param)
    return [ConstraintField(param, "schema", fmt["schema"])]


def ollama_candidates(body: dict) -> List[ConstraintField]:
    """Ollama's `format` and the llamay_* extensions inside `options`."""
    options = body.get("options")
    if not isinstance(options, dict):
        options = {}
    return ollama_format(body.get("format")) + extension_candidates(options, "options.")


# --- the map: each route's spellings, its tools, and the one extractor ----------------------

_OPENAI_SHARED = (*VLLM_GUIDED, "structured_outputs", *LLAMA_SERVER, *EXTENSIONS)


@dataclass(frozen=True)
class RouteConstraints:
    """Where a route's body carries constraints: the top-level fields that spell an output
    constraint (`options.` for Ollama's), the extractor that reads them, and the tool-list
    shape (parse_tools' api; None: the route takes no tools), and whether it takes vLLM's
    request for JSON without whitespace (compact_param)."""
    spellings: FrozenSet[str]
    output: Any                      # body -> List[ConstraintField]
    tools: Optional[str] = None
    compact: bool = False


SPELLINGS: Dict[str, RouteConstraints] = {
    "chat": RouteConstraints(frozenset(("response_format", *_OPENAI_SHARED)),
                             lambda b: openai_candidates(b, "response_format"), "openai",
                             compact=True),
    "completions": RouteConstraints(frozenset(("response_format", *_OPENAI_SHARED)),
                                    lambda b: openai_candidates(b, "response_format"),
                                    compact=True),
    "responses": RouteConstraints(frozenset(("text.format", *_OPENAI_SHARED)),
                                  lambda b: openai_candidates(b, "text.format"), "responses",
                                  compact=True),
    "messages": RouteConstraints(frozenset(("output_config.format", "output_format",
                                            *EXTENSIONS)),
                                 anthropic_candidates, "anthropic"),
    "ollama_chat": RouteConstraints(frozenset(("format", *(f"options.{e}" for e in EXTENSIONS))),
                                    ollama_candidates, "ollama"),
    "ollama_generate": RouteConstraints(
        frozenset(("format", *(f"options.{e}" for e in EXTENSIONS))), ollama_candidates),
}

# the generation routes by path
ROUTES = {"/v1/chat/completions": "chat", "/v1/completions": "completions",
          "/v1/responses": "responses", "/v1/messages": "messages",
          "/api/chat": "ollama_chat", "/api/generate": "ollama_generate"}


def understood(route: str, *others: str, prefix: str = "") -> FrozenSet[str]:
    """The constraint-like field names a route understands at one level of its body (top level,
    or `options.` for Ollama's): its spellings there, plus `others` (tool_choice and the like),
    for refuse_unknown."""
    names = {n[len(prefix):] for n in SPELLINGS[route].spellings
             if n.startswith(prefix) and "." not in n[len(prefix):]}
    top = {n.split(".")[0] for n in SPELLINGS[route].spellings if not prefix and "." in n}
    return frozenset(names | top | set(others))


def _tool_path(tool: Any, i: int, shape: str) -> str:
    if shape == "anthropic":
        return f"tools[{i}].input_schema"
    if shape != "responses" and isinstance(tool, dict) and "function" in tool:
        return f"tools[{i}].function.parameters"
    return f"tools[{i}].parameters"


def request_constraints(body: dict, route: str) -> RequestConstraints:
    """Every constraint a body of this route carries, in every spelling the route accepts
    (SPELLINGS), and its tools (parsed once) with their parameter schemas. The one reader of
    constraint fields: the limits check these, plan() the output's, the tool-call grammar is
    compiled from these tools. Malformed constraint fields are a 400 here."""
    spec = SPELLINGS[route]
    output = spec.output(body)
    tools: List[ToolSpec] = []
    tool_fields: List[ConstraintField] = []
    if spec.tools is not None:
        raw = body.get("tools")
        tools = parse_tools(raw, spec.tools)
        tool_fields = [ConstraintField(_tool_path(t, i, spec.tools), TOOL_PARAMETERS,
                                       tools[i].parameters)
                       for i, t in enumerate(raw or ())]
    return RequestConstraints(output, tools, tool_fields,
                              compact_param(body) if spec.compact else None)


# --- compiling ------------------------------------------------------------------------------

# Lark-style EBNF (vLLM's lark / guidance grammars): rules `name: ...` / `?name: ...` and
# `%import` / `%ignore` directives, where GBNF writes `name ::= ...`
_LARK_RULE = re.compile(r"^\s*[?!]?[A-Za-z_][\w.]*\s*:(?!:=)", re.MULTILINE)
_LARK_DIRECTIVE = re.compile(r"^\s*%(import|ignore|declare|override|extend)\b", re.MULTILINE)


def is_lark(text: str) -> bool:
    if _LARK_DIRECTIVE.search(text):
        return True
    return "::=" not in text and bool(_LARK_RULE.search(text))


def _schema_value(param: Optional[str], value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidRequest(f"'{param}' is not a JSON Schema (not valid JSON)",
                                 param=param) from None
    if not isinstance(value, (dict, bool)):
        raise InvalidRequest(f"'{param}' must be a JSON Schema object", param=param)
    return value


def _plan_value(c: Constraint, value: Any) -> None:
    """Check the value's type for its kind and fill what the request needs before compiling:
    the value as compiled, the composition part, a choice list's words."""
    param, kind = c.param, c.kind
    if kind == "json":
        if value != "json":
            raise InvalidRequest(f"'{param}' must be \"json\"", param=param)
        c.value, c.part = True, cengine.JsonSchema(True)
    elif kind in ("schema", "object"):
        c.value = OBJECT_SCHEMA if kind == "object" else _schema_value(param, value)
        c.part = cengine.JsonSchema(c.value)
    elif kind == "grammar":
        if not isinstance(value, str):
            raise InvalidRequest(f"'{param}' must be GBNF text", param=param)
        if is_lark(value):
            raise InvalidRequest(f"'{param}' is a Lark-style EBNF grammar (rules written "
                                 f"'name: ...'); only llama.cpp GBNF ('name ::= ...') is "
                                 f"supported", param=param)
        c.value, c.part = value, cengine.Gbnf(value)
    elif kind == "regex":
        if not isinstance(value, str):
            raise InvalidRequest(f"'{param}' must be a regular expression string", param=param)
        c.value, c.part = value, cengine.Regex(value)
    elif kind in ("choice", "lexicon"):
        if not isinstance(value, list) or not value \
                or not all(isinstance(w, str) and w for w in value):
            raise InvalidRequest(f"'{param}' must be a non-empty list of non-empty strings",
                                 param=param)
        c.value = value
        c.alternatives = list(dict.fromkeys(value))
        if kind == "choice":
            c.part = cengine.OneOf(*(cengine.Text(w) for w in c.alternatives))
    else:   # pragma: no cover - fields come from this module's extractors
        raise InvalidRequest(f"unknown constraint '{param}'", param=param)


def _compile_alone(c: Constraint) -> cengine.Grammar:
    # compact JSON: a whitespace budget of 0 (strings keep their contents)
    ws: Dict[str, Any] = {"whitespace_budget": 0} if c.compact else {}
    if c.kind == "json":
        return cengine.compile_any_json(surrounding_whitespace=False, **ws)
    if c.kind in ("schema", "object"):
        return cengine.compile_json_schema(c.value, surrounding_whitespace=False, **ws)
    if c.kind == "grammar":
        return cengine.compile_gbnf(c.value)
    if c.kind == "regex":
        return cengine.compile_regex(c.value)
    if c.kind == "choice":
        assert c.part is not None       # _plan_value gives every choice list its part
        return cengine.compile_structural(c.part)
    return cengine.compile_lexicon(c.value)


def plan(fields: List[ConstraintField], *, choice_logprobs: bool = False,
         compact: Optional[str] = None) -> Constraint:
    """The one output constraint a request asks for, checked but not compiled (the conflict
    check: at most one). compact: the field that asked for JSON without whitespace
    (compact_param); it needs a JSON constraint, and is refused by name beside any other."""
    if len(fields) > 1:
        names = " and ".join(f[0] for f in fields)
        raise InvalidRequest(f"give at most one output constraint; this request has {names}",
                             param=fields[1][0])
    if compact is not None and (not fields or fields[0][1] not in JSON_KINDS):
        beside = f"'{fields[0][0]}' is not JSON" if fields else "there is none"
        raise InvalidRequest(f"'{compact}' removes the whitespace of JSON output and needs a "
                             f"JSON constraint (a schema, json_object, JSON mode); {beside}",
                             param=compact)
    if not fields:
        c = Constraint()
    else:
        param, kind, value = fields[0]
        c = Constraint(param=param, kind=kind, compact=compact is not None)
        _plan_value(c, value)
    if choice_logprobs and c.kind in ("grammar", "regex"):
        # decisions are located by JSON pointer (or are a choice list's or lexicon's words): a
        # GBNF or regex output has neither
        raise InvalidRequest(f"llamay_choice_logprobs needs a choice among alternatives: JSON "
                             f"output, tools, a choice list or llamay_lexicon, not '{c.param}'",
                             param="llamay_choice_logprobs")
    return c


def report_ignored(grammar: Optional["cengine.Grammar"], source: Optional[str]) -> None:
    """Log the schema keywords the engine read as annotations (unknown to the schema's draft,
    or siblings of $ref that drafts 04-07 ignore): they change nothing, and a user should see
    that they did not (docs/server.md)."""
    ignored = getattr(grammar, "ignored_keywords", ()) if grammar is not None else ()
    if ignored:
        listed = ", ".join(f"{k.keyword} at {k.pointer or '/'} ({k.why})" for k in ignored[:20])
        more = f" and {len(ignored) - 20} more" if len(ignored) > 20 else ""
        log.warning("llamay: %s: schema keywords ignored as annotations: %s%s",
                    source or "schema", listed, more)
