"""The finite set of JSON values a matcher allows at a decision point (llamay_choice_logprobs).

Design: a breadth-first walk over bytes from a copy of the matcher, one level per byte, so
every value is first met through its shortest spelling. A path is one value's bytes so far:
 * a string starts at `"` and is complete at the first unescaped `"`;
 * a literal (number, true, false, null) is complete where the grammar allows a delimiter next
   (`,` `}` `]` or whitespace) or the document may end (`is_accepting()`); the walk goes on past
   a complete literal too, since `1` may continue as `12`.
Delimiters and whitespace are never followed, so the walk stays inside the value. The answer is
None as soon as the set cannot be finite and small: a container (`{`, `[`) may start here, a
level holds more than `4 * max_alternatives` open paths (a free string opens ~200 at once), more
than `max_alternatives` distinct values are found, or a path grows past the byte cap while
still open. The one open-ended path that is tolerated is a longer spelling of a value already
found (the engine writes enum numbers as `1`, `1.0`, `1.00`, ...; docs/json-schema.md): past
`max_number_bytes` such a path is dropped. Enum/const strings have one canonical spelling in
the engine, which keeps their set finite.

Values are compared by JSON equality (1 and 1.0 are one value, true and 1 are two); each keeps
its shortest spelling (ties: the smaller bytes). The next bytes are read with the matcher's
`allowed_bytes()` when it has one (one C loop over 256 candidates), else by trying each byte on
a copy through the contract's `copy()` and `accept_bytes()`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List, Optional, Tuple

DEFAULT_MAX_ALTERNATIVES = 64
DEFAULT_MAX_VALUE_BYTES = 256
DEFAULT_MAX_NUMBER_BYTES = 32        # a double's shortest repr is at most 24 characters

_WHITESPACE = frozenset(b" \t\n\r")
_DELIMITERS = frozenset(b",}]") | _WHITESPACE
_CONTAINER_STARTS = frozenset(b"{[")
_LITERAL_STARTS = frozenset(b"-0123456789tfn")
_QUOTE, _BACKSLASH = 0x22, 0x5C


@dataclass(frozen=True)
class Alternative:
    text: bytes     # the shortest spelling the grammar allows here
    value: Any      # json.loads(text): str, int, float, bool or None


def _key(value, text: bytes) -> tuple:
    # JSON equality: Python's True == 1 must not merge true with 1, and a number is its exact
    # decimal value (12345678901234567890 and 12345678901234567890.0 are one number, which
    # int and float are not)
    if isinstance(value, bool) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", Decimal(text.decode("ascii")))
    return ("string", value)


def _allowed(matcher) -> List[int]:
    fast = getattr(matcher, "allowed_bytes", None)
    if fast is not None:
        return list(fast())
    out = []
    probe = matcher.copy()
    for b in range(256):
        if probe.accept_bytes(bytes((b,))):
            out.append(b)
            probe = matcher.copy()          # accept_bytes moved it; a refusal leaves it as is
    return out


def _child(matcher, b: int):
    c = matcher.copy()
    if not c.accept_bytes(bytes((b,))):     # allowed_bytes said yes: a disagreement is a bug
        raise RuntimeError(f"matcher refused byte {b:#04x} it listed as allowed")
    return c


def _decode(text: bytes):
    try:
        return json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _INVALID


_INVALID = object()


def value_alternatives(matcher, *, max_alternatives: int = DEFAULT_MAX_ALTERNATIVES,
                       max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
                       max_number_bytes: int = DEFAULT_MAX_NUMBER_BYTES
                       ) -> Optional[List[Alternative]]:
    """The legal complete values that may start at the matcher's position, or None.

    The matcher must sit where a JSON value's first byte comes (after `:`, `[`, `,` or at the
    document start, past any whitespace the caller wants to skip); bytes that cannot start a
    value there (whitespace, `]`, `}`) are not explored, so the answer is "the values that
    may start here". The matcher itself is not changed. Alternatives are sorted by their
    spelling. None: infinite, or more than max_alternatives, or a container may start here.
    """
    if max_alternatives < 1:
        raise ValueError("max_alternatives must be >= 1")
    first = _allowed(matcher)
    if any(b in _CONTAINER_STARTS for b in first):
        return None
    starts = [b for b in first if b == _QUOTE or b in _LITERAL_STARTS]
    if any(b not in _DELIMITERS and b != _QUOTE and b not in _LITERAL_STARTS for b in first):
        return None                         # not a JSON value position (some other grammar)
    frontier_cap = 4 * max_alternatives
    # each byte followed from one path leads to a different spelling, and spellings of one value
    # branch at most twice (`-0` beside `0`, `.0` after an integer): more is more than the cap
    fanout_cap = max_alternatives + 2
    if len(starts) > fanout_cap:
        return None
    found: Dict[tuple, Alternative] = {}
    # (matcher after the path, path, is_string, escape pending, string closed)
    frontier: List[Tuple[Any, bytes, bool, bool, bool]] = [
        (_child(matcher, b), bytes((b,)), b == _QUOTE, False, False) for b in starts]
    while frontier:
        if len(frontier) > frontier_cap:
            return None
        nxt: List[Tuple[Any, bytes, bool, bool, bool]] = []
        for m, path, is_string, escaped, closed in frontier:
            if closed:
                if not _record(found, path):
                    return None
                if len(found) > max_alternatives:
                    return None
                continue
            allowed = _allowed(m)
            if is_string:
                follow = allowed
            else:
                if m.is_accepting() or any(b in _DELIMITERS for b in allowed):
                    known = _key_of(path) in found
                    if not _record(found, path):
                        return None
                    if len(found) > max_alternatives:
                        return None
                    if len(path) >= max_number_bytes:
                        if known:
                            continue        # one more spelling of a value already found
                        return None
                elif len(path) >= max_number_bytes:
                    return None
                follow = [b for b in allowed if b not in _DELIMITERS]
            if not follow:
                continue
            if len(path) >= max_value_bytes or len(follow) > fanout_cap \
                    or len(nxt) + len(follow) > frontier_cap:
                return None
            for b in follow:
                if is_string:
                    nxt.append((_child(m, b), path + bytes((b,)), True,
                                not escaped and b == _BACKSLASH,
                                not escaped and b == _QUOTE))
                else:
                    nxt.append((_child(m, b), path + bytes((b,)), False, False, False))
        frontier = nxt
    return sorted(found.values(), key=lambda a: a.text)


def _key_of(path: bytes):
    value = _decode(path)
    return None if value is _INVALID else _key(value, path)


def value_key(text: bytes) -> Optional[tuple]:
    """The identity of a JSON scalar's spelling under JSON equality (`1` and `1.0` are one
    value, `true` and `1` two), or None when text is no JSON scalar: tells which alternative
    a longer spelling is."""
    return _key_of(text)


def _record(found: Dict[tuple, Alternative], path: bytes) -> bool:
    """Add a complete value (keeping the first, i.e. shortest, spelling); False if it is not
    JSON."""
    value = _decode(path)
    if value is _INVALID or isinstance(value, (dict, list)):
        return False
    key = _key(value, path)
    if key not in found:
        found[key] = Alternative(path, value)
    return True
