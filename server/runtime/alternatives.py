"""The finite set of JSON values a matcher allows where a value starts: `alternatives_at`.

This is the runtime's side of one interface, `alternatives_at(matcher) -> Optional[list of
Alternative]`: the legal complete scalar values at a value's first byte, each with its
shortest spelling, sorted by spelling; None when the set is not finite and small (a
container may start, a free string or number, more than `max_alternatives` values). The
engine's own implementation (cengine's value alternatives, written beside this one) replaces
the body of `alternatives_at` once it is a public name of cengine; until then this small
breadth-first walk over `allowed_bytes()` serves, with the same answer shape.

Walk: one level per byte, from copies of the matcher (it is not changed). A string is
complete at its first unescaped `"`; a literal where a delimiter (`,` `}` `]`, whitespace)
may follow or the document may end, and the walk continues past it (`1` may become `12`).
The engine spells enum numbers also as `1.0`, `1.00`, ...: a literal path longer than
`max_number_bytes` is dropped when its value was already found, else the answer is None.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, List, Optional

MAX_ALTERNATIVES = 64
MAX_VALUE_BYTES = 256
MAX_NUMBER_BYTES = 32

_WS = frozenset(b" \t\n\r")
_DELIMITERS = frozenset(b",}]") | _WS
_LITERAL_STARTS = frozenset(b"-0123456789tfn")
_QUOTE, _BACKSLASH = 0x22, 0x5C


@dataclass(frozen=True)
class Alternative:
    text: bytes     # the shortest spelling the grammar allows here
    value: Any      # json.loads(text)


def value_key(value: Any) -> tuple:
    """JSON equality: true is not 1, and 1 is 1.0."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, (int, float)):
        try:
            return ("number", Decimal(repr(value)).normalize())
        except InvalidOperation:
            return ("number", value)
    return ("string", value)


def _decode(text: bytes):
    try:
        return True, json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False, None


def _step(matcher, b: int):
    m = matcher.copy()
    if not m.accept_bytes(bytes((b,))):
        raise RuntimeError(f"matcher refused byte {b:#04x} it listed as allowed")
    return m


def alternatives_at(matcher, *, max_alternatives: int = MAX_ALTERNATIVES,
                    max_value_bytes: int = MAX_VALUE_BYTES,
                    max_number_bytes: int = MAX_NUMBER_BYTES) -> Optional[List[Alternative]]:
    first = matcher.allowed_bytes()
    if any(b in (0x7B, 0x5B) for b in first):
        return None
    starts = [b for b in first if b == _QUOTE or b in _LITERAL_STARTS]
    if not starts or any(b not in _DELIMITERS and b != _QUOTE and b not in _LITERAL_STARTS
                         for b in first):
        return None
    cap = 4 * max_alternatives
    found: Dict[tuple, Alternative] = {}

    def record(path: bytes) -> bool:
        ok, value = _decode(path)
        if not ok or isinstance(value, (dict, list)):
            return False
        found.setdefault(value_key(value), Alternative(path, value))
        return True

    # (matcher after path, path, escape pending, string closed)
    frontier = [(_step(matcher, b), bytes((b,)), False, False) for b in starts]
    while frontier:
        if len(frontier) > cap:
            return None
        nxt = []
        for m, path, escaped, closed in frontier:
            is_string = path[0] == _QUOTE
            if closed:
                if not record(path):
                    return None
                continue
            allowed = m.allowed_bytes()
            if is_string:
                follow = allowed
            else:
                if m.is_accepting() or any(b in _DELIMITERS for b in allowed):
                    ok, value = _decode(path)
                    known = ok and value_key(value) in found
                    if not record(path):
                        return None
                    if len(path) >= max_number_bytes:
                        if known:
                            continue
                        return None
                elif len(path) >= max_number_bytes:
                    return None
                follow = [b for b in allowed if b not in _DELIMITERS]
            if len(found) > max_alternatives:
                return None
            if follow and (len(path) >= max_value_bytes or len(nxt) + len(follow) > cap):
                return None
            for b in follow:
                nxt.append((_step(m, b), path + bytes((b,)),
                            is_string and not escaped and b == _BACKSLASH,
                            is_string and not escaped and b == _QUOTE))
        frontier = nxt
    if len(found) > max_alternatives:
        return None
    return sorted(found.values(), key=lambda a: a.text)
