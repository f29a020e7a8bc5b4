"""compile_json_schema / compile_any_json with surrounding_whitespace=False: the generation
form, where nothing may follow the root value, while the default keeps validating text with
whitespace around it (the contract's form)."""
from __future__ import annotations

import pytest

import cengine

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

CASES = [
    # (text, accepted with surrounding whitespace, accepted without)
    (b'{"a": 1}', True, True),
    (b' {"a": 1}', True, False),
    (b'{"a": 1}\n', True, False),
    (b'{"a": 1}  \n ', True, False),
    (b'{ "a" : 1 }', True, True),        # whitespace inside the document stays allowed
]


def _accepts(g, text: bytes) -> bool:
    m = g.matcher()
    return m.accept_bytes(text) and m.is_accepting()


@pytest.mark.parametrize("text, with_ws, without_ws", CASES)
def test_schema(text, with_ws, without_ws):
    assert _accepts(cengine.compile_json_schema(SCHEMA), text) is with_ws
    assert _accepts(cengine.compile_json_schema(SCHEMA, surrounding_whitespace=False),
                    text) is without_ws


@pytest.mark.parametrize("text, with_ws, without_ws", [
    (b"[1, 2]", True, True), (b"\t[1, 2]", True, False), (b'"x" ', True, False),
    (b"true", True, True),
])
def test_any_json(text, with_ws, without_ws):
    assert _accepts(cengine.compile_any_json(), text) is with_ws
    assert _accepts(cengine.compile_any_json(surrounding_whitespace=False), text) is without_ws


def test_closed_root_allows_only_the_end():
    g = cengine.compile_json_schema(SCHEMA, surrounding_whitespace=False)
    m = g.matcher()
    assert m.accept_bytes(b'{"a": 1}')
    assert m.is_accepting() and not m.allowed_bytes()
    assert m.completion() == b""


def test_cache_keys_apart():
    a = cengine.compile_json_schema(SCHEMA)
    b = cengine.compile_json_schema(SCHEMA, surrounding_whitespace=False)
    assert a is not b
    assert cengine.compile_json_schema(SCHEMA, surrounding_whitespace=False) is b
