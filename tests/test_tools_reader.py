"""Every dialect's reader on streamed text: a call as the dialect writes it (call_text), cut
into tokens anywhere, reads back to the same call. Streamed text is cut between any two tokens,
so a cut lands inside a number (`-`, `1.`, `2e-`) as often as anywhere else; a reader that took
such a prefix for a broken call turned a whole call into text (Gemma 4, a negative number cut
after its sign: a tool_use came back as a text block)."""
from __future__ import annotations

import pytest

from server.tools import ToolSpec
from server.tools.registry import all_dialects
from tool_text import read_chunks

SCHEMA = {"type": "object",
          "properties": {"x": {"type": "number"}, "n": {"type": "integer"},
                         "s": {"type": "string"},
                         "v": {"type": "array", "items": {"type": "number"}},
                         "o": {"type": "object", "properties": {"y": {"type": "number"}}}},
          "required": ["x"]}
SPECS = [ToolSpec("f", "the f tool", SCHEMA)]

# arguments whose written form has every prefix a number can stop at
ARGUMENTS = [
    {"x": 0, "n": -3},
    {"x": -0.0015},
    {"x": 1.25, "n": 10},
    {"x": 2e10},
    {"x": 1e-07},
    {"x": -7, "s": "a-1 2.5e"},
    {"x": -2.5, "v": [-1, 0.5, -3e-05]},
    {"x": 3, "o": {"y": -0.25}},
]
DIALECTS = all_dialects()


@pytest.mark.parametrize("name", sorted(DIALECTS))
@pytest.mark.parametrize("arguments", ARGUMENTS, ids=lambda a: "-".join(map(str, a.values())))
def test_call_read_back_from_any_cut(name, arguments):
    d = DIALECTS[name]
    text = d.call_text("f", arguments)
    # a character at a time, and in two pieces at every place
    for chunks in [list(text)] + [[text[:i], text[i:]] for i in range(1, len(text))]:
        rest, calls = read_chunks(d, chunks, SPECS)
        assert [(c.name, c.arguments) for c in calls] == [("f", arguments)], (name, chunks)
        assert not rest.strip(), (name, chunks, rest)
