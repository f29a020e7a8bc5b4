"""Request fields -> one cengine.Grammar (or none).

Each API names structured output its own way (OpenAI `response_format`, Responses `text.format`,
Ollama `format`); all three also take the llamay extensions (`llamay_schema`, `llamay_format`,
`llamay_grammar`, `llamay_regex`, `llamay_lexicon`). At most one may be given: two constraints
on one output would have to be intersected, and silently picking one would be a lie.
`llamay_choice_logprobs` needs JSON output (a schema, JSON mode, tools: decision points are
found in it as it is generated) or a lexicon (whose words are the alternatives).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import cengine

from .errors import InvalidRequest

EXTENSIONS = ("llamay_schema", "llamay_format", "llamay_grammar", "llamay_regex", "llamay_lexicon")


@dataclass
class Constraint:
    grammar: Optional[cengine.Grammar] = None
    param: Optional[str] = None                 # the request field it came from
    kind: str = "text"                          # text | json | schema | grammar | regex | lexicon
    alternatives: Optional[List[str]] = None    # a lexicon's words (llamay_choice_logprobs)


# a candidate: (request field, kind, value)
Candidate = Tuple[str, str, Any]


def extension_candidates(body: dict, prefix: str = "") -> List[Candidate]:
    """The llamay_* fields of a body (or of Ollama's options), as candidates."""
    out: List[Candidate] = []
    for name in EXTENSIONS:
        if name in body and body[name] is not None:
            kind = name[len("llamay_"):]
            out.append((prefix + name, "json" if kind == "format" else kind, body[name]))
    return out


def openai_response_format(rf: Any, param: str) -> List[Candidate]:
    """OpenAI chat `response_format` / Responses `text.format` (name, schema inline there)."""
    if rf is None:
        return []
    if not isinstance(rf, dict):
        raise InvalidRequest(f"'{param}' must be an object", param=param)
    kind = rf.get("type")
    if kind == "text":
        return []
    if kind == "json_object":
        return [(param, "json", "json")]
    if kind == "json_schema":
        js = rf.get("json_schema", rf)      # chat nests it, the Responses API does not
        if not isinstance(js, dict) or "schema" not in js:
            raise InvalidRequest(f"'{param}' of type json_schema needs a 'schema'", param=param)
        return [(param, "schema", js["schema"])]
    raise InvalidRequest(f"'{param}.type' must be text, json_object or json_schema, not {kind!r}",
                         param=param)


def ollama_format(fmt: Any) -> List[Candidate]:
    if fmt is None or fmt == "":
        return []
    if fmt == "json":
        return [("format", "json", "json")]
    if isinstance(fmt, dict):
        return [("format", "schema", fmt)]
    raise InvalidRequest("'format' must be \"json\" or a JSON Schema object", param="format")


def build(candidates: List[Candidate], *, choice_logprobs: bool = False) -> Constraint:
    """Compile the one constraint a request asks for. CompileError propagates (-> 400)."""
    if len(candidates) > 1:
        names = ", ".join(c[0] for c in candidates)
        raise InvalidRequest(f"give at most one output constraint; this request has {names}",
                             param=candidates[1][0])
    if not candidates:
        c = Constraint()
    else:
        param, kind, value = candidates[0]
        c = Constraint(param=param, kind=kind)
        if kind == "json":
            if value != "json":
                raise InvalidRequest(f"'{param}' must be \"json\"", param=param)
            c.grammar = cengine.compile_any_json()
        elif kind == "schema":
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    raise InvalidRequest(f"'{param}' is not a JSON Schema (not valid JSON)",
                                         param=param) from None
            if not isinstance(value, (dict, bool)):
                raise InvalidRequest(f"'{param}' must be a JSON Schema object", param=param)
            c.grammar = cengine.compile_json_schema(value)
        elif kind == "grammar":
            if not isinstance(value, str):
                raise InvalidRequest(f"'{param}' must be GBNF text", param=param)
            c.grammar = cengine.compile_gbnf(value)
        elif kind == "regex":
            if not isinstance(value, str):
                raise InvalidRequest(f"'{param}' must be a regular expression string", param=param)
            c.grammar = cengine.compile_regex(value)
        elif kind == "lexicon":
            if not isinstance(value, list) or not value \
                    or not all(isinstance(w, str) and w for w in value):
                raise InvalidRequest(f"'{param}' must be a non-empty list of non-empty strings",
                                     param=param)
            c.grammar = cengine.compile_lexicon(value)
            c.alternatives = list(dict.fromkeys(value))
        else:   # pragma: no cover - candidates come from this module
            raise InvalidRequest(f"unknown constraint '{param}'", param=param)
    if choice_logprobs and c.kind in ("grammar", "regex"):
        # decisions are located by JSON pointer (or are a lexicon's words): a GBNF or regex
        # output has neither
        raise InvalidRequest(f"llamay_choice_logprobs needs a choice among alternatives: JSON "
                             f"output, tools or llamay_lexicon, not '{c.param}'",
                             param="llamay_choice_logprobs")
    return c
