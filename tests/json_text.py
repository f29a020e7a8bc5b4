"""Reading JSON text as its structure: the characters outside strings (test helpers)."""
from __future__ import annotations

from typing import Iterator


def outside_strings(text: str) -> Iterator[str]:
    """The characters of JSON text that stand outside its strings (the quotes left out)."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield ch
