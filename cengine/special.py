"""Special tokens as grammar terminals: a framing token (Qwen's `<tool_call>`, Llama 3's
`<|python_tag|>`, Mistral's `[TOOL_CALLS]`, harmony's `<|channel|>`) allowed as exactly that
token, never as the same text spelled with ordinary tokens.

The automaton reads bytes, so a special token is given bytes no ordinary token can write:
its text between the marks 0xFE and 0xFF. Those two bytes never occur in UTF-8, so no
grammar front end (JSON, GBNF, regex: all match Unicode text) ever allows them, and a
vocabulary prepared with `Vocabulary.with_special_tokens()` gives the marked spelling to its
special tokens alone (an ordinary token holding a lone 0xFE or 0xFF byte gets b"": it could
never be part of UTF-8 text anyway). The composition part `cengine.Special(text)` is that
marked spelling; the text between the marks keeps matchers, closers and logs readable, and
`plain_text` removes the marks from whatever the matcher hands back (a closer, forced bytes)
so the output shows the token's text.

The GBNF front end still refuses token terminals (`<[id]>`): this is a composition-level
part, chosen by whoever knows the model's vocabulary (a tool dialect, a reasoning format).
"""
from __future__ import annotations

OPEN = b"\xfe"
CLOSE = b"\xff"
MARKS = frozenset(OPEN + CLOSE)


def special_bytes(text: str) -> bytes:
    """The bytes a special token with this text stands for in grammars and marked
    vocabularies."""
    if not isinstance(text, str) or not text:
        raise ValueError("a special token's text must be a non-empty string")
    return OPEN + text.encode("utf-8") + CLOSE


def plain_text(data: bytes) -> bytes:
    """`data` with the special-token marks removed: each special token as its text."""
    if OPEN[0] not in data and CLOSE[0] not in data:
        return data
    return data.replace(OPEN, b"").replace(CLOSE, b"")


def has_marks(data: bytes) -> bool:
    return OPEN[0] in data or CLOSE[0] in data
