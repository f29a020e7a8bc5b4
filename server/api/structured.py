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

Documents are compiled in the generation form (no whitespace around the root value): once
the root value closes only the end of the output may follow, so the turn ends there.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

import cengine

from .errors import InvalidRequest

log = logging.getLogger("llamay")

EXTENSIONS = ("llamay_schema", "llamay_format", "llamay_grammar", "llamay_regex", "llamay_lexicon")

# OpenAI's json_object promises a JSON object, not any JSON value
OBJECT_SCHEMA = {"type": "object"}


@dataclass
class Constraint:
    grammar: Optional[cengine.Grammar] = None
    param: Optional[str] = None                 # the request field it came from
    kind: str = "text"      # text | json | object | schema | grammar | regex | choice | lexicon
    alternatives: Optional[List[str]] = None    # a choice list's or lexicon's words
    # the same constraint as a composition part, so it can be one alternative beside tool
    # calls (tool_choice auto); None where no part expresses it (a lexicon)
    part: Optional[cengine.Part] = None
    # JSON without any whitespace outside strings (vLLM's disable_any_whitespace)
    compact: bool = False


# a candidate: (request field, kind, value)
Candidate = Tuple[str, str, Any]


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


def extension_candidates(body: dict, prefix: str = "") -> List[Candidate]:
    """The llamay_* fields of a body (or of Ollama's options), as candidates."""
    out: List[Candidate] = []
    for name in EXTENSIONS:
        if name in body and body[name] is not None:
            kind = name[len("llamay_"):]
            out.append((prefix + name, "json" if kind == "format" else kind, body[name]))
    return out


_RF_KEYS = {"json_object": {"type", "schema"},
            "json_schema": {"type", "json_schema", "schema", "name", "description", "strict"},
            "text": {"type"}}


def openai_response_format(rf: Any, param: str) -> List[Candidate]:
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
            return [(param, "schema", rf["schema"])]
        return [(param, "object", None)]
    js = rf.get("json_schema", rf)      # chat nests it; Responses and llama-server do not
    if not isinstance(js, dict) or "schema" not in js:
        raise InvalidRequest(f"'{param}' of type json_schema needs a 'schema'", param=param)
    return [(param, "schema", js["schema"])]


def ollama_format(fmt: Any) -> List[Candidate]:
    if fmt is None or fmt == "":
        return []
    if fmt == "json":
        # Ollama's JSON mode grammar has an object at its root, as OpenAI's json_object
        return [("format", "object", None)]
    if isinstance(fmt, dict):
        return [("format", "schema", fmt)]
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
# understood by every OpenAI-shaped route, beside the route's own fields
OPENAI_CONSTRAINT_FIELDS = (set(VLLM_GUIDED) | set(LLAMA_SERVER)
                            | {"structured_outputs", "guided_decoding_backend"} | set(EXTENSIONS)
                            | {"llamay_choice_logprobs"})


def vllm_candidates(body: dict) -> List[Candidate]:
    out: List[Candidate] = []
    for name, kind in VLLM_GUIDED.items():
        if body.get(name) is not None:
            out.append((name, kind, body[name]))
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
                out.append((param, STRUCTURED_OUTPUTS[key], value))
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


def llama_server_candidates(body: dict) -> List[Candidate]:
    return [(name, kind, body[name]) for name, kind in LLAMA_SERVER.items()
            if body.get(name) is not None]


def openai_candidates(body: dict, rf_param: Optional[str] = "response_format") -> List[Candidate]:
    """Everything an OpenAI-shaped body may constrain its output with."""
    out = openai_response_format(body.get(rf_param), rf_param) if rf_param else []
    return out + vllm_candidates(body) + llama_server_candidates(body) + \
        extension_candidates(body)


def request_constraints(body: dict, api: str) -> List[Candidate]:
    """Every constraint a body of this API shape carries, in every spelling its routes compile
    (openai: chat's response_format, Responses' text.format, vLLM's and llama-server's fields,
    the llamay_* extensions; anthropic: output_config.format, output_format and the
    extensions; ollama: format and the extensions in options). The request limits read this
    one list (limits.constraint_fields), so no spelling escapes them."""
    if api == "anthropic":
        return anthropic_candidates(body)
    if api == "ollama":
        options = body.get("options")
        if not isinstance(options, dict):
            options = {}
        return ollama_format(body.get("format")) + extension_candidates(options, "options.")
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    return openai_response_format(fmt, "text.format") + openai_candidates(body)


def anthropic_candidates(body: dict) -> List[Candidate]:
    """`output_config.format` (and the beta `output_format`): {"type": "json_schema", schema}."""
    out: List[Candidate] = []
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


def _anthropic_format(fmt: Any, param: str) -> List[Candidate]:
    if fmt is None:
        return []
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or "schema" not in fmt:
        raise InvalidRequest(f"'{param}' must be {{\"type\": \"json_schema\", \"schema\": ...}}",
                             param=param)
    return [(param, "schema", fmt["schema"])]


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


def _compile(c: Constraint, value: Any) -> None:
    param, kind = c.param, c.kind
    # compact JSON: a whitespace budget of 0 (strings keep their contents)
    ws: Dict[str, Any] = {"whitespace_budget": 0} if c.compact else {}
    if kind == "json":
        if value != "json":
            raise InvalidRequest(f"'{param}' must be \"json\"", param=param)
        c.grammar = cengine.compile_any_json(surrounding_whitespace=False, **ws)
        c.part = cengine.JsonSchema(True)
    elif kind in ("schema", "object"):
        value = OBJECT_SCHEMA if kind == "object" else _schema_value(param, value)
        c.grammar = cengine.compile_json_schema(value, surrounding_whitespace=False, **ws)
        c.part = cengine.JsonSchema(value)
    elif kind == "grammar":
        if not isinstance(value, str):
            raise InvalidRequest(f"'{param}' must be GBNF text", param=param)
        if is_lark(value):
            raise InvalidRequest(f"'{param}' is a Lark-style EBNF grammar (rules written "
                                 f"'name: ...'); only llama.cpp GBNF ('name ::= ...') is "
                                 f"supported", param=param)
        c.grammar = cengine.compile_gbnf(value)
        c.part = cengine.Gbnf(value)
    elif kind == "regex":
        if not isinstance(value, str):
            raise InvalidRequest(f"'{param}' must be a regular expression string", param=param)
        c.grammar = cengine.compile_regex(value)
        c.part = cengine.Regex(value)
    elif kind == "choice":
        if not isinstance(value, list) or not value \
                or not all(isinstance(w, str) and w for w in value):
            raise InvalidRequest(f"'{param}' must be a non-empty list of non-empty strings",
                                 param=param)
        c.alternatives = list(dict.fromkeys(value))
        c.part = cengine.OneOf(*(cengine.Text(w) for w in c.alternatives))
        c.grammar = cengine.compile_structural(c.part)
    elif kind == "lexicon":
        if not isinstance(value, list) or not value \
                or not all(isinstance(w, str) and w for w in value):
            raise InvalidRequest(f"'{param}' must be a non-empty list of non-empty strings",
                                 param=param)
        c.grammar = cengine.compile_lexicon(value)
        c.alternatives = list(dict.fromkeys(value))
    else:   # pragma: no cover - candidates come from this module
        raise InvalidRequest(f"unknown constraint '{param}'", param=param)


def build(candidates: List[Candidate], *, choice_logprobs: bool = False,
          compact: Optional[str] = None) -> Constraint:
    """Compile the one constraint a request asks for. CompileError propagates (-> 400).
    compact: the field that asked for JSON without whitespace (compact_param); it needs a
    JSON constraint, and is refused by name beside any other."""
    if len(candidates) > 1:
        names = " and ".join(c[0] for c in candidates)
        raise InvalidRequest(f"give at most one output constraint; this request has {names}",
                             param=candidates[1][0])
    if compact is not None and (not candidates or candidates[0][1] not in JSON_KINDS):
        beside = f"'{candidates[0][0]}' is not JSON" if candidates else "there is none"
        raise InvalidRequest(f"'{compact}' removes the whitespace of JSON output and needs a "
                             f"JSON constraint (a schema, json_object, JSON mode); {beside}",
                             param=compact)
    if not candidates:
        c = Constraint()
    else:
        param, kind, value = candidates[0]
        c = Constraint(param=param, kind=kind, compact=compact is not None)
        _compile(c, value)
    if choice_logprobs and c.kind in ("grammar", "regex"):
        # decisions are located by JSON pointer (or are a choice list's or lexicon's words): a
        # GBNF or regex output has neither
        raise InvalidRequest(f"llamay_choice_logprobs needs a choice among alternatives: JSON "
                             f"output, tools, a choice list or llamay_lexicon, not '{c.param}'",
                             param="llamay_choice_logprobs")
    report_ignored(c.grammar, c.param)
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
