"""Whole generated texts split into text and tool calls, for tests: the server reads calls
incrementally (server.tools.base.RegionReader); a test often has the whole text at once."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from server.tools import ToolCall, ToolSpec


def parse_output(dialect, text: str, tools: Sequence[ToolSpec]) -> Tuple[str, List[ToolCall]]:
    """(text outside the calls, calls in order), read as the server reads a turn; a block that
    does not decode to an offered tool stays text."""
    reader = dialect.call_reader(tools)
    events = reader.feed(text) + reader.finish()
    parts = [v for k, v in events if k == "text"]
    calls = [v for k, v in events if k == "call"]
    return "".join(parts).strip() if calls else "".join(parts), calls
