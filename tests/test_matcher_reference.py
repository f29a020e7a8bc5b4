"""The Cython matcher and closer agree with the pure-Python reference on random inputs."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cengine import Grammar
from grammars_ir import ALL, json_like
from oracles import reference_matcher
from walks import walk_allowed

GRAMMARS = {name: Grammar.from_ir(make()) for name, make in ALL.items()}


def _walk(grammar, choices, junk):
    """Drive both matchers with the same bytes: mostly legal ones, some arbitrary."""
    m, r = grammar.matcher(), reference_matcher(grammar)
    for i, pick in enumerate(choices):
        allowed = r.allowed_bytes()
        assert m.allowed_bytes() == allowed
        assert m.is_accepting() == r.is_accepting()
        assert m.completion() == r.completion()
        if i < len(junk) and junk[i] is not None:
            b = bytes([junk[i]])
        elif allowed:
            b = bytes([allowed[pick % len(allowed)]])
        else:
            break
        try:
            got = m.accept_bytes(b)
        except RuntimeError as e:
            # the documented MAX_STACKS limit: only when the reference really has that many
            assert "simultaneous stacks" in str(e)
            assert r.accept_bytes(b) and len(r.state) > MAX_STACKS
            return None, r
        assert got == r.accept_bytes(b)
        if len(r.state) > 4096:
            return None, r        # the Python reference gets too slow; the limit has its own test
    return m, r


MAX_STACKS = 1 << 16


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(choices=st.lists(st.integers(0, 1000), max_size=40),
       junk=st.lists(st.one_of(st.none(), st.none(), st.none(), st.integers(0, 255)), max_size=40))
def test_matcher_agrees_with_reference(name, choices, junk):
    g = GRAMMARS[name]
    m, r = _walk(g, choices, junk)
    if m is None:
        return
    c = m.completion()
    assert c == r.completion()
    assert m.accept_bytes(c) and m.is_accepting()


@settings(max_examples=80, deadline=None)
@given(choices=st.lists(st.integers(0, 1000), max_size=60))
def test_matcher_completion_parses_as_json(choices):
    g = GRAMMARS["json_like"]
    m, _ = _walk(g, choices, [])
    assert m is not None
    doc = m.copy()
    c = doc.completion()
    assert doc.accept_bytes(c) and doc.is_accepting()
    # the walk's bytes + completion is JSON (the grammar is a JSON subset)
    text = bytes(_bytes_of(g, choices)) + c
    json.loads(text)


def _bytes_of(g, choices):
    return walk_allowed(reference_matcher(g), choices)


CASES = [
    # (document, accepted as a whole, legal prefix)
    (b'{"a": [true, null, "x\xc3\xa9"]}', True, True),
    (b"[[[]]]", True, True),
    (b"[[[[]]]]", False, False),          # max_depth 3
    (b"      true", False, False),        # whitespace budget 5
    (b"  true ", True, True),
    (b'{"a":1', False, True),
    (b'{"a":01}', False, False),
    (b'"\xff"', False, False),            # not UTF-8
    (b'"\xed\xa0\x80"', False, False),    # a UTF-8-encoded surrogate
    (b"-", False, True),
]


@pytest.mark.parametrize("doc,complete,prefix", CASES)
def test_matcher_json_like_cases(doc, complete, prefix):
    g = GRAMMARS["json_like"]
    m = g.matcher()
    assert m.accept_bytes(doc) == prefix
    assert m.is_accepting() == complete
    r = reference_matcher(g)
    assert r.accept_bytes(doc) == prefix


def test_matcher_accept_bytes_is_all_or_nothing():
    m = GRAMMARS["json_like"].matcher()
    assert m.accept_bytes(b'{"a": ')
    before = m.completion()
    assert not m.accept_bytes(b"tru}")
    assert m.completion() == before
    assert m.accept_bytes(b"true}") and m.is_accepting()


def test_matcher_copy_is_independent_and_rollback_restores():
    m = GRAMMARS["json_like"].matcher()
    assert m.accept_bytes(b"[")
    assert m.accept_bytes(b"true")
    c = m.copy()
    assert c.accept_bytes(b"]") and c.is_accepting()
    assert not m.is_accepting() and m.completion() == b"]"
    m.rollback(1)
    assert m.completion() == b"]"
    assert m.accept_bytes(b'"x"]') and m.is_accepting()
    m.rollback(2)                         # back to the empty document: shortest value is a digit
    assert m.completion() == b"1"
    assert m.accept_bytes(b"[") and m.completion() == b"]"
    with pytest.raises(ValueError):
        m.rollback(5)


def test_matcher_forced_bytes():
    m = GRAMMARS["json_like"].matcher()
    assert m.accept_bytes(b"[t")
    assert m.forced_bytes() == b"rue"
    assert m.completion() == b"rue]"


def test_matcher_stack_limit_is_an_error_not_a_wrong_answer():
    g = GRAMMARS["ambiguous"]
    m = g.matcher()
    with pytest.raises(RuntimeError, match="simultaneous stacks"):
        for b in b"((aabac((xx)ac(ac((((":     # each ( multiplies the stacks by ~4
            assert m.accept_bytes(bytes([b]))


def test_matcher_depth_fuzz_never_exceeds_max_depth():
    for depth in (1, 2, 3, 5):
        g = Grammar.from_ir(json_like(max_depth=depth, whitespace_budget=None))
        m = g.matcher()
        opened = 0
        while m.accept_bytes(b"["):
            opened += 1
            assert opened <= depth
        assert opened == depth
        assert not m.accept_bytes(b"{")
        c = m.completion()
        assert c == b"]" * depth
        assert m.accept_bytes(c) and m.is_accepting()
