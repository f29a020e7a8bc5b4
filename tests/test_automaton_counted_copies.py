"""RuleNfa stamps the copies of a counted repeat from the first one it emits: the NFA must be
the one emitting every copy makes. Without sharing (the reference numbering) x{n} is built
exactly as the sequence x x ... x followed by an empty literal (a new state per copy, the item
from it into the next, an epsilon into the end), so the two NFAs are compared state for state
and edge for edge; the language of both modes is checked by the minimize and brute-force
tests."""
from __future__ import annotations

import pytest

from cengine import ir
from cengine._build_nfa import RuleNfa
from cengine.automaton import MAX_NFA_STATES, _Whitespace
from cengine.errors import LimitError

_WS = ir.Repeat(ir.ByteSet(((0x20, 0x20),)), 0, None)

# (name, item) repeated: literals, classes with UTF-8 tails, alternatives, nested counted and
# unbounded repeats, calls, inlined whitespace (its bytes carry the whitespace bit)
ITEMS = {
    "literal": ir.lit("ab"),
    "class": ir.CharSet(((0x41, 0x5A), (0xE9, 0xE9), (0x4E00, 0x4E0F))),
    "alternatives": ir.Alt((ir.lit("x"), ir.Seq((ir.lit("\\u"), ir.ByteSet(((0x30, 0x39),)))))),
    "nested-counted": ir.Seq((ir.lit("-"), ir.Repeat(ir.ByteSet(((0x61, 0x66),)), 1, 3))),
    "nested-star": ir.Seq((ir.Repeat(ir.lit("z"), 0, None), ir.lit("."))),
    "call": ir.Seq((ir.Ref("other"), ir.lit(","))),
    "whitespace": ir.Seq((_Whitespace(_WS), ir.lit(":"))),
}


def _nfa(expr, share=False, max_states=MAX_NFA_STATES):
    nfa = RuleNfa({"root": 0, "other": 1}, "root", False, max_states, _Whitespace, share)
    start_end = nfa.build(expr)
    return start_end, nfa.n, nfa.eps, nfa.bytes_, nfa.calls


@pytest.mark.parametrize("name", sorted(ITEMS))
@pytest.mark.parametrize("count", [2, 3, 17])
def test_counted_copies_are_the_emitted_sequence(name, count):
    item = ITEMS[name]
    spelled = ir.Seq((item,) * count + (ir.Bytes(b""),))
    assert _nfa(ir.Repeat(item, count, count)) == _nfa(spelled)


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_optional_copies_skip_to_the_end_from_every_count(name):
    """x{1,4}: one copy, then three each behind a skip to the end (the skips: epsilons into
    the end from the state after every count, the last one included)."""
    (s, t), n, eps, _, _ = _nfa(ir.Repeat(ITEMS[name], 1, 4))
    skips = [q for q in range(n) if t in eps[q]]
    assert len(skips) == 4 and s not in skips
    one = _nfa(ir.Repeat(ITEMS[name], 1, 1))[1]
    per_copy = one - 3           # start, end and the state after the single copy
    assert n == 2 + 4 * (per_copy + 1)


def test_counted_copies_keep_the_state_limit():
    """Stamped copies make their states one by one: the limit stops them as emission did."""
    item = ITEMS["alternatives"]
    n = _nfa(ir.Repeat(item, 40, 40))[1]
    with pytest.raises(LimitError, match=f"more than {n - 1} automaton states"):
        _nfa(ir.Repeat(item, 40, 40), max_states=n - 1)
    _nfa(ir.Repeat(item, 40, 40), share=True, max_states=n)
