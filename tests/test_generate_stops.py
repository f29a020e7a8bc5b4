"""Stop sequences over a token stream: hold back what may start a stop, cut at the first one."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from server.runtime.model import Model
from server.runtime.stops import StopScanner
from server.runtime.types import TokenEvent


def ev(text: bytes) -> TokenEvent:
    return TokenEvent(1, text, None, None, False)


def feed(pieces, stops):
    """What a consumer sees: the released text, and the stop hit (or None)."""
    s = StopScanner(stops)
    seen = []
    for p in pieces:
        hit = s.add(ev(p))
        if hit is not None:
            seen += s.cut(hit[0])
            return b"".join(e.text for e in seen), hit[1]
        released = s.ready()
        # nothing released may be the start of a stop that is still being written
        seen += released
    seen += s.release_all()
    return b"".join(e.text for e in seen), None


def test_stop_split_over_three_tokens():
    assert feed([b"Hello wo", b"rl", b"d and more"], ["world"]) == (b"Hello ", b"world")


def test_earliest_stop_wins():
    assert feed([b"abc", b"def"], ["ef", "cd"]) == (b"ab", b"cd")


def test_partial_stop_is_held_back_then_released():
    s = StopScanner(["STOP"])
    s.add(ev(b"text ST"))
    assert s.ready() == []                       # "ST" might start "STOP"
    s.add(ev(b"ory"))
    assert b"".join(e.text for e in s.ready()) == b"text STory"


def test_no_stops_releases_immediately():
    s = StopScanner([])
    s.add(ev(b"abc"))
    assert [e.text for e in s.ready()] == [b"abc"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=6), min_size=1, max_size=12),
       st.lists(st.text(alphabet="ab", min_size=1, max_size=3), min_size=1, max_size=3))
def test_released_text_is_the_text_before_the_first_stop(pieces, stops):
    full = b"".join(pieces)
    out, hit = feed(pieces, stops)
    positions = [(full.find(s.encode()), s.encode()) for s in stops if full.find(s.encode()) >= 0]
    if positions:
        first = min(p for p, _ in positions)
        assert hit is not None and out == full[:first]
        assert full[first:].startswith(hit)
    else:
        assert hit is None and out == full


@given(st.binary(max_size=10), st.binary(max_size=10), st.binary(min_size=1, max_size=4))
def test_trigger_search_spans_token_boundaries(before, text, trigger):
    found = Model._find_trigger(bytearray(before), text, trigger)
    full = before + text
    p = full.find(trigger)
    if p < 0:
        assert found is None
        return
    if p + len(trigger) <= len(before):
        return          # complete before `text` started: the loop fired on an earlier token
    assert found == (p, len(full) - p - len(trigger))
