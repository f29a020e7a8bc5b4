"""The JSON pointer tracker and the alternatives at a value start (llamay_choice_logprobs).

The tracker is checked against json.loads: every scalar value it reports must sit at its
pointer in the parsed document and span exactly the bytes that spell it, whether the bytes
come one at a time or all at once. The alternatives are checked on compiled schemas.
"""
from __future__ import annotations

import json

import pytest

import cengine
from cengine import value_alternatives as alternatives_at
from server.runtime.pointer import PointerTracker, ValueEnd, ValueStart


def resolve(doc, pointer: str):
    if pointer == "":
        return doc
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def scalars(data: bytes, layout: str = "single", chunk: int = 1):
    t = PointerTracker(layout)
    events = []
    for i in range(0, len(data), chunk):
        events += t.feed(data[i:i + chunk])
    events += t.close()
    starts = {e.offset: e for e in events if isinstance(e, ValueStart)}
    out = []
    for e in events:
        if isinstance(e, ValueEnd):
            s = starts[e.start]
            out.append((s.document, s.pointer, data[e.start:e.offset]))
    return out


DOCUMENTS = [
    b'"refund"',
    b'  true ',
    b'12.5',
    b'{"intent": "refund", "urgent": false}',
    b'{"a": {"b": {"c": null}}, "d": [1, [2, "x"], {"e": -3e2}]}',
    b'{"a/b": 1, "m~n": "q", "esc\\"aped": "v\\"w"}',
    b'{"tags": ["a", "bb", "c"], "empty": [], "obj": {}}',
    b'{\n\t"k" :\r\n "v" , "n":[ true ,false ] }',
    b'[["x", ["y"]], "z"]',
    b'{"u": "\\u00e9\\\\", "k\\u00e9y": 0}',
]


@pytest.mark.parametrize("chunk", [1, 3, 1000])
@pytest.mark.parametrize("data", DOCUMENTS)
def test_pointer_tracker_matches_json_loads(data, chunk):
    doc = json.loads(data)
    found = scalars(data, chunk=chunk)
    expected = []

    def walk(v, ptr):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, ptr + "/" + k.replace("~", "~0").replace("/", "~1"))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{ptr}/{i}")
        else:
            expected.append((ptr, v))
    walk(doc, "")
    assert [(p, json.loads(text)) for _, p, text in found] == expected
    for _, p, text in found:
        assert resolve(doc, p) == json.loads(text)


def test_pointer_tracker_objects_in_text_are_documents():
    data = (b'<tool_call>\n{"name": "get_time", "arguments": {"tz": "utc"}}\n</tool_call>\n'
            b'<tool_call>{"name": "get_weather", "arguments": {"unit": true}}</tool_call>')
    assert scalars(data, "objects") == [
        (0, "/name", b'"get_time"'), (0, "/arguments/tz", b'"utc"'),
        (1, "/name", b'"get_weather"'), (1, "/arguments/unit", b"true")]


def test_pointer_tracker_literal_at_the_end_ends_on_close():
    t = PointerTracker()
    assert [type(e) for e in t.feed(b"false")] == [ValueStart]
    assert [(e.start, e.offset) for e in t.close()] == [(0, 5)]


def _at(schema, prefix: bytes):
    m = cengine.compile_json_schema(schema).matcher()
    assert m.accept_bytes(prefix)
    alts = alternatives_at(m)
    return None if alts is None else [a.value for a in alts]


ROUTING = {"type": "object", "properties": {"intent": {"enum": ["refund", "cancel", "track"]},
                                            "urgent": {"type": "boolean"},
                                            "note": {"type": "string"}, "n": {"type": "integer"},
                                            "k": {"enum": [1, 2.5, "x", None]}},
           "required": ["intent", "urgent", "note", "n", "k"]}


@pytest.mark.parametrize("schema, prefix, expected", [
    (ROUTING, b'{"intent": ', ["cancel", "refund", "track"]),
    (ROUTING, b'{"intent": "refund", "urgent": ', [False, True]),
    (ROUTING, b'{"intent": "refund", "urgent": true, "note": ', None),
    (ROUTING, b'{"intent": "refund", "urgent": true, "note": "", "n": ', None),
    (ROUTING, b'{"intent": "refund", "urgent": true, "note": "", "n": 1, "k": ',
     ["x", 1, 2.5, None]),
    ({"enum": ["a", "b"]}, b"", ["a", "b"]),
    # `]` may come too, but it starts no value: the alternatives are the values that may start
    ({"type": "array", "items": {"enum": ["a", "b"]}}, b"[", ["a", "b"]),
    ({"type": "array", "items": {"enum": ["a", "b"]}}, b'["a", ', ["a", "b"]),
    ({"type": "object"}, b"", None),
    ({"anyOf": [{"const": "x"}, {"const": "y"}]}, b"", ["x", "y"]),
    ({"type": ["boolean", "null"]}, b"", [False, None, True]),
])
def test_alternatives_at_value_starts(schema, prefix, expected):
    got = _at(schema, prefix)
    if expected is None or got is None:
        assert got == expected
    else:
        assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, expected))


def test_alternatives_at_leaves_the_matcher_unchanged():
    m = cengine.compile_json_schema(ROUTING).matcher()
    assert m.accept_bytes(b'{"intent": ')
    before = m.allowed_bytes()
    alternatives_at(m)
    assert m.allowed_bytes() == before and m.accept_bytes(b'"track"')
