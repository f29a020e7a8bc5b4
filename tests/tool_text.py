"""Whole generated texts split into text and tool calls, for tests: the server reads calls
incrementally (server.tools.base.RegionReader); a test often has the whole text at once."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from server.tools import ToolCall, ToolSpec


def parse_output(dialect, text: str, tools: Sequence[ToolSpec]) -> Tuple[str, List[ToolCall]]:
    """(text outside the calls, calls in order), read as the server reads a turn; a block that
    does not decode to an offered tool stays text."""
    text, calls = read_chunks(dialect, [text], tools)
    return (text.strip() if calls else text), calls


def read_chunks(dialect, chunks, tools: Sequence[ToolSpec]) -> Tuple[str, List[ToolCall]]:
    """(all text, calls) of an output streamed in the given pieces, read as the server reads
    a turn: the text is not stripped, so a test sees what surrounds the calls."""
    reader = dialect.call_reader(tools)
    events = []
    for c in chunks:
        events += reader.feed(c)
    events += reader.finish()
    return "".join(v for k, v in events if k == "text"), [v for k, v in events if k == "call"]
