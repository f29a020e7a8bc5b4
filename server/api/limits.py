"""Hostile input, bounded work: every request is measured against `Settings.limits` before
anything expensive happens (parsing, compiling, queueing), and a request over a limit gets a
4xx in its API's own shape naming the limit and its value.

Order matters: the body's size is checked while it is read (a 413 stops the read), its
nesting depth is scanned over the raw bytes without recursion (json.loads would recurse and
raise RecursionError past about 1,000 levels), and only then is it parsed; the parsed body's
message and tool counts, token budgets and constraints (schemas, enums, grammar and regex
text) are checked before the handler sees it.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Optional, Tuple

import numpy as np
from starlette.requests import Request

from . import structured
from .errors import InvalidRequest
from .settings import Limits


class LimitExceeded(InvalidRequest):
    """A request over one of the server's limits: 400 (413 for the body size), naming it."""

    def __init__(self, limit: str, value: Any, what: str, *, param: Optional[str] = None,
                 status: int = 400):
        super().__init__(f"{what}; the server's limit {limit} is {value}", param=param,
                         code="limit_exceeded", status=status)
        self.limit = limit


# --- the raw body ----------------------------------------------------------------------------

async def read_body(request: Request, limits: Limits) -> bytes:
    """The body, refused with 413 as soon as it is known to be larger than max_body_bytes
    (from Content-Length, or while a chunked body streams in)."""
    cap = limits.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise LimitExceeded("max_body_bytes", cap, f"request body of {int(declared)} bytes is "
                            f"too large", status=413)
    parts, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise LimitExceeded("max_body_bytes", cap, "request body is too large", status=413)
        parts.append(chunk)
    return b"".join(parts)


_QUOTE, _OPENS, _CLOSES = ord('"'), (ord("["), ord("{")), (ord("]"), ord("}"))


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, without parsing it (and without
    recursion): escapes are dropped (in valid JSON a backslash stands only inside strings, so
    once escaped backslashes and quotes are gone every quote opens or closes a string), a
    bracket after an even number of quotes is structure, and the running sum of +1 (open) and
    -1 (close) peaks at the depth. Vectorised with numpy: a 4 MiB body scans in milliseconds.
    Invalid text gives some number; json.loads reports the syntax error afterwards."""
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    a = np.frombuffer(text, dtype=np.uint8)
    outside = (np.cumsum(a == _QUOTE, dtype=np.int32) & 1) == 0
    opens = ((a == _OPENS[0]) | (a == _OPENS[1])) & outside
    closes = ((a == _CLOSES[0]) | (a == _CLOSES[1])) & outside
    at = np.flatnonzero(opens | closes)
    if not at.size:
        return 0
    steps = np.where(opens[at], 1, -1).astype(np.int32)
    return max(0, int(np.cumsum(steps).max()))


def loads_bounded(raw: bytes, limits: Limits, what: str = "request body",
                  param: Optional[str] = None) -> Any:
    depth = json_depth(raw)
    if depth > limits.max_json_depth:
        raise LimitExceeded("max_json_depth", limits.max_json_depth,
                            f"{what} nests {depth} levels deep", param=param)
    return json.loads(raw.decode("utf-8"))  # JSONDecodeError / UnicodeDecodeError map to 400


# --- the parsed body -------------------------------------------------------------------------

def constraint_fields(body: dict, api: str) -> Iterator[Tuple[str, str, Any]]:
    """(request field, kind, value) of every constraint a body carries: the compiler's own
    list (structured.request_constraints: every spelling it honours) and the tools' parameter
    schemas."""
    yield from structured.request_constraints(body, api)
    tools = body.get("tools")
    if isinstance(tools, list):
        for i, t in enumerate(tools):
            if not isinstance(t, dict):
                continue
            fn = t.get("function")
            if not isinstance(fn, dict):
                fn = t
            for key in ("parameters", "input_schema"):
                if fn.get(key) is not None:
                    yield f"tools[{i}].{key}", "schema", fn[key]


def check_schema(schema: Any, param: str, limits: Limits) -> None:
    """Size, depth, enum sizes and pattern lengths of one schema, walked without recursion."""
    if isinstance(schema, str):
        if len(schema) > limits.max_body_bytes:
            raise LimitExceeded("max_body_bytes", limits.max_body_bytes,
                                f"'{param}' is too large", param=param)
        try:
            schema = loads_bounded(schema.encode("utf-8"), limits, f"'{param}'", param)
        except ValueError:
            return      # not JSON: structured.build refuses it with its own message
    stack = [(schema, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > limits.max_schema_nodes:
            raise LimitExceeded("max_schema_nodes", limits.max_schema_nodes,
                                f"the schema in '{param}' has more JSON values", param=param)
        if depth > limits.max_schema_depth:
            raise LimitExceeded("max_schema_depth", limits.max_schema_depth,
                                f"the schema in '{param}' nests deeper", param=param)
        if isinstance(value, dict):
            enum = value.get("enum")
            if isinstance(enum, list) and len(enum) > limits.max_enum_values:
                raise LimitExceeded("max_enum_values", limits.max_enum_values,
                                    f"an enum in '{param}' has {len(enum)} values", param=param)
            pattern = value.get("pattern")
            if isinstance(pattern, str) and len(pattern) > limits.max_regex_chars:
                raise LimitExceeded("max_regex_chars", limits.max_regex_chars,
                                    f"a pattern in '{param}' has {len(pattern)} characters",
                                    param=param)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _check_constraint(param: str, kind: str, value: Any, limits: Limits) -> None:
    if kind == "schema":
        check_schema(value, param, limits)
    elif kind == "grammar" and isinstance(value, str) and len(value) > limits.max_grammar_chars:
        raise LimitExceeded("max_grammar_chars", limits.max_grammar_chars,
                            f"'{param}' has {len(value)} characters", param=param)
    elif kind == "regex" and isinstance(value, str) and len(value) > limits.max_regex_chars:
        raise LimitExceeded("max_regex_chars", limits.max_regex_chars,
                            f"'{param}' has {len(value)} characters", param=param)
    elif kind in ("lexicon", "choice") and isinstance(value, list) \
            and len(value) > limits.max_enum_values:
        raise LimitExceeded("max_enum_values", limits.max_enum_values,
                            f"'{param}' has {len(value)} words", param=param)


_BUDGETS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def _check_budget(param: str, value: Any, limits: Limits) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value > limits.max_tokens_limit:
        raise LimitExceeded("max_tokens_limit", limits.max_tokens_limit,
                            f"'{param}' asks for {value} tokens", param=param)


def check_body(body: dict, api: str, limits: Limits) -> None:
    """Every limit a parsed body can exceed, checked before the handler does any work."""
    for key in ("messages", "input"):
        v = body.get(key)
        if isinstance(v, list) and len(v) > limits.max_messages:
            raise LimitExceeded("max_messages", limits.max_messages,
                                f"'{key}' has {len(v)} items", param=key)
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > limits.max_tools:
        raise LimitExceeded("max_tools", limits.max_tools, f"'tools' has {len(tools)} tools",
                            param="tools")
    for key in _BUDGETS:
        _check_budget(key, body.get(key), limits)
    if isinstance(body.get("options"), dict):
        _check_budget("options.num_predict", body["options"].get("num_predict"), limits)
    for param, kind, value in constraint_fields(body, api):
        _check_constraint(param, kind, value, limits)
