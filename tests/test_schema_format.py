"""`format`: date, time, date-time, uuid, ipv4, ipv6 enforced exactly (oracle: jsonschema's
format checker), email as a documented narrowing, unknown formats are annotations."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import cengine
from cengine import CompileError
from cengine.schema import schema_to_ir
from walks import walk_allowed

CHECKER = Draft202012Validator.FORMAT_CHECKER


def accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode() if isinstance(doc, str) else doc) and m.is_accepting()


def valid(fmt: str, s: str) -> bool:
    ok = Draft202012Validator({"format": fmt}, format_checker=CHECKER).is_valid(s)
    if fmt == "uuid":
        # jsonschema's checker parses with uuid.UUID, which drops every hyphen, and then only
        # looks at positions 8, 13, 18 and 23: it takes 'e3e70682-c209-4cac-629f--6fbed82c07cd'.
        # RFC 4122's form is exactly 8-4-4-4-12; so is ours
        ok = ok and len(s) == 36
    return ok


CASES = [
    ("date", ["2024-02-29", "2000-02-29", "0001-01-01", "9999-12-31", "2023-04-30"],
     ["2023-02-29", "1900-02-29", "0000-01-01", "2024-13-01", "2024-04-31", "2024-1-01",
      "20240101"]),
    ("time", ["12:00:00Z", "23:59:59.123+05:30", "00:00:00-00:00", "08:30:00z"],
     ["24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "12:00:00+5:00"]),
    ("date-time", ["2024-02-29T12:00:00Z", "1999-12-31t23:59:59.9+01:00"],
     ["2024-02-30T12:00:00Z", "2024-02-29 12:00:00Z", "2024-02-29T12:00:00"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"],
     ["123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
      "g23e4567-e89b-12d3-a456-426614174000",
      "e3e70682-c209-4cac-629f--6fbed82c07cd"]),
    ("ipv4", ["0.0.0.0", "255.255.255.255", "192.168.1.10"],
     ["256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3"]),
    ("ipv6", ["::", "::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "fe80::1", "1:2:3:4:5:6:7::",
              "1::"],
     ["1::2::3", "12345::", ":1", "1:2:3:4:5:6:7:8:9", "::ffff:01.2.3.4", "fe80::1%eth0"]),
    ("email", ["a@b.c", "first.last+tag@example.com"],
     ["@b.c", "a@", "a..b@c", "a b@c.com", "noat"]),
]


@pytest.mark.parametrize("fmt,good,bad", CASES, ids=[c[0] for c in CASES])
def test_formats(fmt, good, bad):
    g = cengine.compile_json_schema({"type": "string", "format": fmt})
    for s in good:
        assert accepts(g, json.dumps(s)), s
        assert accepts(g, json.dumps(s, ensure_ascii=True).replace("0", "\\u0030")), s
        assert valid(fmt, s), s
    for s in bad:
        assert not accepts(g, json.dumps(s)), s
        if fmt != "email":      # email is a narrowing of what the checker ("@" in s) accepts
            assert not valid(fmt, s), s


def test_unknown_formats_are_annotations():
    for fmt in ("hostname", "uri", "duration", "x-custom"):
        g = cengine.compile_json_schema({"type": "string", "format": fmt})
        assert accepts(g, '"not checked"') and accepts(g, '""')


def test_format_only_constrains_strings():
    g = cengine.compile_json_schema({"format": "date"})
    assert accepts(g, "12") and accepts(g, '"2024-01-01"') and not accepts(g, '"x"')


REFUSED = [
    ({"type": "string", "format": 3}, "format", "/format"),
    ({"type": "string", "format": "date", "pattern": "^2"}, "pattern", "/pattern"),
    ({"type": "string", "format": "date-time", "maxLength": 30}, "maxLength", "/maxLength"),
    ({"type": "string", "format": "date", "minLength": 11}, None, ""),
]


@pytest.mark.parametrize("schema,keyword,pointer", REFUSED, ids=[str(r[0]) for r in REFUSED])
def test_refusals(schema, keyword, pointer):
    with pytest.raises(CompileError) as ei:
        schema_to_ir(schema)
    assert (ei.value.keyword, ei.value.pointer) == (keyword, pointer)


def test_lengths_implied_by_the_format_compile():
    g = cengine.compile_json_schema({"type": "string", "format": "date", "minLength": 10,
                                     "maxLength": 10})
    assert accepts(g, '"2024-01-01"')


def test_enum_with_format_keeps_matching_values():
    g = cengine.compile_json_schema({"enum": ["2024-01-01", "tomorrow", 5], "format": "date"})
    assert accepts(g, '"2024-01-01"') and accepts(g, "5") and not accepts(g, '"tomorrow"')
    g = cengine.compile_json_schema({"enum": ["a", "b"], "format": "x-unknown"})
    assert accepts(g, '"a"') and accepts(g, '"b"')


# --- hypothesis: acceptance == the checker -------------------------------------------------------
def _mutations(s: str) -> st.SearchStrategy:
    alphabet = "0123456789abcdefABCDEF:.-+TtZz"
    edit = st.tuples(st.integers(0, max(len(s) - 1, 0)), st.sampled_from(alphabet),
                     st.sampled_from(["replace", "insert", "delete"]))

    def apply(e):
        i, c, op = e
        if op == "replace":
            return s[:i] + c + s[i + 1:]
        if op == "insert":
            return s[:i] + c + s[i:]
        return s[:i] + s[i + 1:]
    return edit.map(apply)


VALID_STRATEGIES = {
    "date": st.dates().map(lambda d: d.isoformat()),
    "date-time": st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    "time": st.times().map(lambda t: t.isoformat() + "Z"),
    "uuid": st.uuids().map(str),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.one_of(st.ip_addresses(v=6).map(str),
                      st.ip_addresses(v=6).map(lambda a: a.exploded)),
}


@pytest.mark.parametrize("fmt", sorted(VALID_STRATEGIES))
def test_acceptance_equals_the_checker(fmt):
    g = cengine.compile_json_schema({"type": "string", "format": fmt})

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(VALID_STRATEGIES[fmt].flatmap(lambda s: st.one_of(st.just(s), _mutations(s))))
    def run(s):
        assert accepts(g, json.dumps(s)) == valid(fmt, s), s
    run()


@pytest.mark.parametrize("fmt", [c[0] for c in CASES])
def test_random_walks_close_to_valid_strings(fmt):
    schema = {"type": "string", "format": fmt}
    g = cengine.compile_json_schema(schema)
    v = Draft202012Validator(schema, format_checker=CHECKER)
    rng = random.Random(fmt)
    for _ in range(60):
        m = g.matcher()
        prefix = walk_allowed(m, [rng.randrange(1 << 30) for _ in range(rng.randrange(1, 40))])
        doc = prefix + m.completion()
        assert v.is_valid(json.loads(doc)), doc
