"""xgrammar's structural tags (the format SGLang and vLLM pass through `structural_tag`) as
cengine composition parts, compiled onto one automaton.

    grammar = compile_structural_tag(spec)          # spec: JSON text or the parsed dict

Both spellings are read:

- the legacy one, `{"structures": [{"begin", "schema", "end"}, ...], "triggers": [...]}`:
  free text in which each trigger opens one of the structures whose begin starts with it
  (`TriggeredTags` of `Tagged(begin, JsonSchema(schema), end)`);
- the current one, `{"type": "structural_tag", "format": {...}}`, whose formats map onto parts:
  const_string -> Text, json_schema -> JsonSchema (any_order -> property_order "any", which
  also holds required keys), regex -> Regex, grammar -> Gbnf, any_text -> AnyText, sequence ->
  Concat, or -> OneOf, tag -> Tagged (a list of ends: one Tagged per end; a token begin or end
  given by its text -> Special), triggered_tags -> TriggeredTags, tags_with_separator /
  optional / plus / star / repeat -> Repeat.

What cannot be enforced exactly is refused with a CompileError whose `.keyword` names the
format type or field (the XML argument styles, `excludes`, token ids, `max_tokens`, dispatch,
token-triggered tags). Nothing here imports xgrammar, torch or an engine.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

from ..compose import (AnyText, Concat, Gbnf, JsonSchema, OneOf, Part, Regex, Repeat, Special,
                       Tagged, Text, TriggeredTags, compile_structural)
from ..errors import CompileError
from ..grammar import Grammar

__all__ = ["structural_tag_part", "compile_structural_tag"]

_UNSUPPORTED = {
    "exclude_token": "a token-level exclusion",
    "any_tokens": "a token-level free run",
    "token_triggered_tags": "triggers given as tokens",
    "dispatch": "dispatch",
    "token_dispatch": "dispatch on tokens",
    "qwen_xml_parameter": "XML parameters",
}


def _refuse(keyword: str, why: str, path: str) -> CompileError:
    return CompileError(f"structural tag at {path or '/'}: {why} cannot be enforced here",
                        keyword=keyword, pointer=path)


def _no_extras(fmt: Dict[str, Any], path: str) -> None:
    if fmt.get("excludes"):
        raise _refuse("excludes", "'excludes'", path)
    for field in ("max_tokens", "max_chars", "exclude_tokens"):
        if fmt.get(field) not in (None, [], ()):
            raise _refuse(field, f"{field!r}", path)


def _field(fmt: Dict[str, Any], name: str, path: str) -> Any:
    if name not in fmt:
        raise CompileError(f"structural tag at {path or '/'}: {fmt.get('type')!r} needs "
                           f"{name!r}", keyword=name, pointer=path)
    return fmt[name]


def _token(x: Any, path: str) -> Union[str, Part]:
    """A tag's begin or end: text, or a token given by its text ({"type": "token"})."""
    if isinstance(x, str):
        return x
    if isinstance(x, dict) and x.get("type") == "token":
        tok = x.get("token")
        if isinstance(tok, str) and tok:
            return Special(tok)
        raise _refuse("token", "a token given by its id (give its text)", path)
    raise CompileError(f"structural tag at {path or '/'}: a begin or end is text or a token",
                       pointer=path)


def _tagged(begin: Union[str, Part], content: Part, end: Union[str, Part]) -> Part:
    if isinstance(begin, str) and isinstance(end, str):
        return Tagged(begin, content, end)
    if isinstance(content, AnyText):        # any text up to a token end is not yet a part
        raise CompileError("structural tag: any_text closed by a token", keyword="any_text")
    return Concat(begin, content, end)


def _tag(fmt: Dict[str, Any], path: str) -> List[Part]:
    """One tag as parts, one per end string."""
    begin = _token(_field(fmt, "begin", path), path + "/begin")
    content = _format(_field(fmt, "content", path), path + "/content")
    ends = _field(fmt, "end", path)
    ends = ends if isinstance(ends, list) else [ends]
    if not ends:
        raise CompileError(f"structural tag at {path or '/'}: a tag needs an end",
                           keyword="end", pointer=path)
    return [_tagged(begin, content, _token(e, f"{path}/end")) for e in ends]


def _tags(fmt: Dict[str, Any], path: str) -> List[Part]:
    out: List[Part] = []
    for i, t in enumerate(_field(fmt, "tags", path)):
        if not isinstance(t, dict) or t.get("type", "tag") != "tag":
            raise CompileError(f"structural tag at {path}/tags/{i}: a tag is a 'tag' format",
                               keyword="tags", pointer=f"{path}/tags/{i}")
        out.extend(_tag(t, f"{path}/tags/{i}"))
    return out


def _format(fmt: Any, path: str) -> Part:
    if not isinstance(fmt, dict):
        raise CompileError(f"structural tag at {path or '/'}: a format is an object",
                           pointer=path)
    kind = fmt.get("type")
    if kind in _UNSUPPORTED:
        raise _refuse(str(kind), _UNSUPPORTED[str(kind)], path)
    if kind == "const_string":
        return Text(_field(fmt, "value", path))
    if kind == "json_schema":
        _no_extras(fmt, path)
        if fmt.get("style", "json") != "json":
            raise _refuse("style", f"the argument style {fmt['style']!r}", path)
        return JsonSchema(_field(fmt, "json_schema", path),
                          property_order="any" if fmt.get("any_order") else "declared")
    if kind == "regex":
        _no_extras(fmt, path)
        return Regex(_field(fmt, "pattern", path))
    if kind == "grammar":
        return Gbnf(_field(fmt, "grammar", path))
    if kind == "any_text":
        _no_extras(fmt, path)
        return AnyText()
    if kind in ("sequence", "or"):
        items = [_format(e, f"{path}/elements/{i}")
                 for i, e in enumerate(_field(fmt, "elements", path))]
        if not items:
            raise CompileError(f"structural tag at {path or '/'}: {kind!r} needs elements",
                               keyword="elements", pointer=path)
        return Concat(*items) if kind == "sequence" else OneOf(*items)
    if kind == "tag":
        tags = _tag(fmt, path)
        return tags[0] if len(tags) == 1 else OneOf(*tags)
    if kind == "triggered_tags":
        _no_extras(fmt, path)
        tags = _tags(fmt, path)
        if not all(isinstance(t, Tagged) for t in tags):
            raise _refuse("token", "triggered tags with a token begin or end", path)
        return TriggeredTags(_field(fmt, "triggers", path), tags,
                             at_least_one=bool(fmt.get("at_least_one")),
                             stop_after_first=bool(fmt.get("stop_after_first")))
    if kind == "tags_with_separator":
        tags = _tags(fmt, path)
        return Repeat(OneOf(*tags), 1 if fmt.get("at_least_one") else 0,
                      1 if fmt.get("stop_after_first") else None,
                      _field(fmt, "separator", path))
    if kind in ("optional", "plus", "star", "repeat"):
        content = _format(_field(fmt, "content", path), path + "/content")
        fixed = {"optional": (0, 1), "plus": (1, None), "star": (0, None)}
        lo, hi = fixed[kind] if kind in fixed else (_field(fmt, "min", path),
                                                    _field(fmt, "max", path))
        return Repeat(content, lo, None if hi == -1 else hi)
    raise CompileError(f"structural tag at {path or '/'}: unknown format type {kind!r}",
                       keyword=str(kind), pointer=path)


def structural_tag_part(spec: Union[str, Dict[str, Any]]) -> Part:
    """The composition part of an xgrammar structural tag (JSON text or dict)."""
    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except ValueError as e:
            raise CompileError(f"structural tag is not valid JSON: {e}", pointer="") from None
    if not isinstance(spec, dict):
        raise CompileError("a structural tag is a JSON object", pointer="")
    if "structures" in spec:                        # the legacy spelling
        tags = [Tagged(_field(s, "begin", f"/structures/{i}"),
                       JsonSchema(_field(s, "schema", f"/structures/{i}")),
                       _field(s, "end", f"/structures/{i}"))
                for i, s in enumerate(spec["structures"])]
        return TriggeredTags(_field(spec, "triggers", ""), tags)
    if spec.get("type", "structural_tag") != "structural_tag":
        raise CompileError(f"not a structural tag: type {spec.get('type')!r}", keyword="type",
                           pointer="")
    return _format(_field(spec, "format", ""), "/format")


def compile_structural_tag(spec: Union[str, Dict[str, Any]], *,
                           whitespace_budget: Optional[int] = 64, max_depth: int = 64
                           ) -> Grammar:
    """The grammar of the whole output being the structural tag (cached by its parts). A
    matcher of it needs a vocabulary from Vocabulary.with_special_tokens() where the tag names
    a token."""
    return compile_structural(structural_tag_part(spec), whitespace_budget=whitespace_budget,
                              max_depth=max_depth)
