"""`format`: every format jsonschema's checker knows (with its format extras) is enforced, as
the checker decides (exact) or as a documented narrowing of it (fewer strings); a known format
without a grammar would be refused by name; names no standard defines are annotations.

The oracle is Draft202012Validator.FORMAT_CHECKER with jsonschema[format-nongpl] installed.
IN_SCOPE says, per format, which strings a documented narrowing leaves out (docs/json-schema.md);
the property tests assert: ours => checker, and checker and in scope => ours."""
from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import cengine
from cengine import CompileError
from cengine.schema import schema_to_ir
from cengine.schema.formats import FORMATS, REGEX_GROUP_DEPTH
from walks import walk_allowed

CHECKER = Draft202012Validator.FORMAT_CHECKER


def accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(doc.encode() if isinstance(doc, str) else doc) and m.is_accepting()


def checker(fmt: str, s: str) -> bool:
    """The checker's verdict (a checker that crashes, e.g. int('²'), accepts nothing)."""
    try:
        return CHECKER.conforms(s, fmt)
    except Exception:
        return False


# --- the documented narrowings, as predicates: False = the narrowing leaves s out ---------------
def _host_shape(s: str) -> bool:
    labels = (s[:-1] if s.endswith(".") else s).split(".")
    longest = max(map(len, labels))
    return len(labels) <= 3 or (len(labels) <= 10 and longest <= 24)


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(rf"{_ATEXT}{{1,64}}(\.{_ATEXT}{{1,64}})*@{_LABEL}(\.{_LABEL})*")
_IDN_EMAIL = re.compile(rf"({_ATEXT}|[^\x00-\x7f]){{1,64}}(\.({_ATEXT}|[^\x00-\x7f]){{1,64}})*"
                        rf"@{_LABEL}(\.{_LABEL})*")
_VARSPEC = r"[A-Za-z0-9_](\.?([A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(:[1-9][0-9]{0,2}|\*)?"
_TEMPLATE = re.compile(r"([^\x00-\x20\"'%<>\\^`{|}\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
                       r"\U0001fffe\U0001ffff]|%[0-9A-Fa-f]{2}|"
                       rf"\{{[+#./;?&]?{_VARSPEC}(,{_VARSPEC})*\}})*")
_DURATION = re.compile(r"P((\d+Y)?(\d+M)?(\d+D)?(?<=[YMD])(T(?=\d)(\d+H)?(\d+M)?(\d+S)?(?<=[HMS]))?"
                       r"|T(?=\d)(\d+H)?(\d+M)?(\d+S)?(?<=[HMS])|\d+W)")


def _duration_scope(s: str) -> bool:
    # the fraction may sit on the last component: compare with it removed
    return bool(_DURATION.fullmatch(re.sub(r"\d+[.,]\d+(?=[YMDWHS]$)", "1", s)))


IN_SCOPE = {
    # uuid: jsonschema takes extra hyphens after the fourth group, and (through int(x, 16))
    # a sign, underscores or spaces among the digits; RFC 4122 is 8-4-4-4-12 hex digits
    "uuid": lambda s: re.fullmatch(r"[0-9A-Fa-f-]{36}", s) is not None,
    # rfc3986-validator anchors with '$', which also matches before a final newline
    "uri": lambda s: not s.endswith("\n"),
    "uri-reference": lambda s: not s.endswith("\n"),
    # fqdn matches \d and [A-Z] with IGNORECASE over Unicode, and '$' before a final newline
    "hostname": lambda s: s.isascii() and not s.endswith("\n") and _host_shape(s),
    # ASCII names only (no U-labels), no A-labels
    "idn-hostname": lambda s: s.isascii() and not any(
        lab.lower().startswith("xn--") for lab in s.split(".")) and _host_shape(s),
    "email": lambda s: bool(_EMAIL.fullmatch(s)),
    "idn-email": lambda s: bool(_IDN_EMAIL.fullmatch(s)),
    # ASCII digits only
    "relative-json-pointer": lambda s: re.match(r"\d*", s).group().isascii(),
    "uri-template": lambda s: bool(_TEMPLATE.fullmatch(s)),
    "duration": _duration_scope,
    # nested syntax: the in-scope strings are the generated ones (test_regex_subset_accepted)
    "regex": lambda s: False,
}


def in_scope(fmt: str, s: str) -> bool:
    return IN_SCOPE.get(fmt, lambda _: True)(s)


# (format, good, bad, narrowed): good = both accept, bad = both refuse, narrowed = the checker
# accepts and a documented narrowing refuses
CASES = [
    ("date", ["2024-02-29", "2000-02-29", "0001-01-01", "9999-12-31", "2023-04-30"],
     ["2023-02-29", "1900-02-29", "0000-01-01", "2024-13-01", "2024-04-31", "2024-1-01",
      "20240101"], []),
    ("time", ["12:00:00Z", "23:59:59.123+05:30", "00:00:00-00:00", "08:30:00z"],
     ["24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "12:00:00+5:00"], []),
    ("date-time", ["2024-02-29T12:00:00Z", "1999-12-31t23:59:59.9+01:00"],
     ["2024-02-30T12:00:00Z", "2024-02-29 12:00:00Z", "2024-02-29T12:00:00"], []),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"],
     ["123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
      "g23e4567-e89b-12d3-a456-426614174000"],
     ["e3e70682-c209-4cac-629f--6fbed82c07cd", "+3e70682-c209-4cac-629f-6fbed82c07cd",
      "3e7_0682-c209-4cac-629f-6fbed82c07cd", " 3e70682-c209-4cac-629f-6fbed82c07cd"]),
    ("ipv4", ["0.0.0.0", "255.255.255.255", "192.168.1.10"],
     ["256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3"], []),
    ("ipv6", ["::", "::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "fe80::1", "1:2:3:4:5:6:7::",
              "1::"],
     ["1::2::3", "12345::", ":1", "1:2:3:4:5:6:7:8:9", "::ffff:01.2.3.4", "fe80::1%eth0"], []),
    # RFC 3986 1.1.2's examples, and near misses
    ("uri", ["ftp://ftp.is.co.za/rfc/rfc1808.txt", "http://www.ietf.org/rfc/rfc2396.txt",
             "ldap://[2001:db8::7]/c=GB?objectClass?one", "mailto:John.Doe@example.com",
             "news:comp.infosystems.www.servers.unix", "tel:+1-816-555-1212",
             "telnet://192.0.2.16:80/", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
             "http://u:p@h:8080/a/b;c?d=e&f#g", "HTTP://[v7.x:y]/", "http://[::01.2.3.4]/", "a:"],
     ["//example.com/a", "http://exa mple.com", "http://example.com/%zz", "1http://a",
      "http://[::1/", "http://a/é", "", "http://a:b", "http://[V7.x]/", "http://2001:db8::7/",
      "http://a#b#c", "http://a/\\b"],
     ["http://a/\n"]),
    ("uri-reference", ["", "a", "../a/b", "/a?b#c", "//h/p", "#f", "?q", "a:b", "%41", "a@b"],
     [":a", "a b", "http://a:b", "%4", "a#b#c", "\\", "é"], ["a\n"]),
    # RFC 3987 examples (checked by rfc3987-syntax's grammar, whose IPv6 is eight groups or a
    # '::' for exactly one)
    ("iri", ["http://résumé.example.org/", "http://www.example.org/red%09ros%C3%A9#red",
             "http://[1::3:4:5:6:7:8]/", "a:?\ue000", "foo://dom/\u00e9"],
     ["http://[::1]/", "http://[fe80::1]/", "a:#\ue000", "a:\ue000", "http://a b/",
      "http://𝔞.org/", "//a", "http://a:b"], []),
    ("iri-reference", ["résumé", "//é/", "#é", "", "../x?y"], [":a", "a b", "\ue000"], []),
    ("hostname", ["a", "example.com", "A-B.c0m", "xn--bcher-kva.example", "a--b.c",
                  "www.example.com.", "a" * 63, ".".join(["a" * 24] * 10)],
     ["", ".", "-a.com", "a-.com", "a..b", "a_b.com", "a b", "a" * 64, "é.com", "a.-b",
      "1.2.3.4:80"],
     ["ſ.com", "a.com\n", ".".join(["a" * 25] * 4), ".".join(["ab"] * 11)]),
    ("idn-hostname", ["a", "example.com", "a-b.c", "A.B.", "abc-d"],
     ["", ".", "-a", "a-", "ab--c", "a..b", "a_b", "xn--", "a" * 64],
     ["bücher.example", "xn--bcher-kva.example", "例え.テスト"]),
    ("email", ["a@b.c", "first.last+tag@example.com", "x@localhost"],
     ["noat", ""],
     ["@b.c", "a@", "a..b@c", "a b@c.com", '"quoted"@example.com', "a@[127.0.0.1]", "é@b.c"]),
    ("idn-email", ["é@b.c", "用户@example.com", "a@b"], ["noat"], ["@b.c", "a@bücher.de"]),
    ("json-pointer", ["", "/", "/a/b", "/a~0b~1c", "/ é/\u2028", "//"],
     ["a", "/~", "/a~2", "/~a", "#/a"], []),
    ("relative-json-pointer", ["0", "1/a", "0#", "12/a~0", "10"],
     ["", "#", "01", "-1", "1a", "0##", "/a", "1~", "100"], ["١", "٣/a"]),
    ("uri-template", ["", "http://example.com/~{username}/", "{var}", "{+path}/here",
                      "{#x,hello,y}", "map?{x,y}", "{/var:1,var}", "{;list*}", "{?x,y,empty}",
                      "X{.var}", "{&x}", "{a.b%2F}", "{a:999}"],
     ["{", "}", "{}", "{a", "a}", "{=a}", "{!a}", "{a:0}", "{a:1000}", "{a*:3}", "{%41}",
      "{a b}"],
     ["a b", "{.a.}b", "{a..b}", "{a=1}", "{a[]}", "{a,}", "{,a}", "{n/k}", "<>"]),
    ("duration", ["P1D", "PT1H", "P1Y2M3DT4H5M6S", "P1W", "PT0.5S", "P1Y1D", "PT1H1S", "P1,5W",
                  "P0D", "P1M", "PT1M"],
     ["P", "PT", "P1DT", "P1", "1D", "PD", "P1D1W", "P1M1Y", "PT1H1M1H", "P1DT1D", "p1d"],
     ["P1.D", "-P1D", "+P1D", "P-1D", "P1e3D", "P1.5YT1H", "P.5D", "P1.5Y1D"]),
    ("regex", ["", "^[a-z]+$", r"^\d{3}-\d{4}$", "a|b|", "(a(?:b(c)))", r"[^\]\\-]+", "x*?y+?z??",
               r"\bword\B", "[A-Fa-f0-9-]", r"^\(?\d{3}\)?$", "é{2,}", "(|a)*", r"\u00e9\x41"],
     ["(", ")", "[]", "a**", "a{2,1}", "^*", r"\b+", "[z-a]", "a\\", "[a", "(?", "{1}"],
     ["(a(b(c(d))))", "(?=a)", r"(a)\1", "(?P<n>a)", "(?i)a", "a{,3}", "a{10,20}", "[g-z]",
      "[a&&b]", "a{", "[é-ü]", "\t", "a++"]),
]


@pytest.mark.parametrize("fmt,good,bad,narrowed", CASES, ids=[c[0] for c in CASES])
def test_formats(fmt, good, bad, narrowed):
    g = cengine.compile_json_schema({"type": "string", "format": fmt})
    for s in good:
        assert accepts(g, json.dumps(s)), s
        # every code point may be escaped: \u-escape every ASCII letter and digit
        escaped = "".join(f"\\u{ord(c):04x}" if c.isascii() and c.isalnum() else c
                          for c in json.dumps(s, ensure_ascii=False)[1:-1])
        assert accepts(g, '"' + escaped + '"'), escaped
        assert accepts(g, json.dumps(s, ensure_ascii=True)), s
        assert checker(fmt, s), s
    for s in bad:
        assert not accepts(g, json.dumps(s)), s
        assert not checker(fmt, s), s
    for s in narrowed:
        assert not accepts(g, json.dumps(s)), s
        assert checker(fmt, s) and not in_scope(fmt, s), s


def test_every_known_format_is_enforced():
    assert set(CHECKER.checkers) == set(FORMATS)


def test_a_known_format_without_grammar_is_refused_by_name(monkeypatch):
    from cengine.schema import formats
    monkeypatch.setitem(formats.UNENFORCEABLE, "uri", "no grammar (test)")
    for schema, pointer in (({"type": "string", "format": "uri"}, "/format"),
                            ({"properties": {"r": {"format": "uri"}}}, "/properties/r/format")):
        with pytest.raises(CompileError) as ei:
            schema_to_ir(schema)
        assert (ei.value.keyword, ei.value.pointer) == ("format", pointer)


@pytest.mark.parametrize("fmt", ["x-custom", "int32", "url", "color", "host-name", "jsonschema"])
def test_unknown_formats_are_annotations(fmt):
    g = cengine.compile_json_schema({"type": "string", "format": fmt})
    assert accepts(g, '"not checked"') and accepts(g, '""')


def test_format_only_constrains_strings():
    g = cengine.compile_json_schema({"format": "date"})
    assert accepts(g, "12") and accepts(g, '"2024-01-01"') and not accepts(g, '"x"')
    g = cengine.compile_json_schema({"type": "integer", "format": "regex"})
    assert accepts(g, "12") and not accepts(g, '"("')


REFUSED = [
    ({"type": "string", "format": 3}, "format", "/format"),
    # pattern beside a format is their product (test_schema_pattern_anchors.py); one that
    # no date matches leaves nothing
    ({"type": "string", "format": "date", "pattern": "^x"}, None, ""),
    ({"type": "string", "format": "date", "minLength": 11}, None, ""),
    # the format's automaton times a length counter, up to a documented bound
    ({"type": "string", "format": "email", "maxLength": 1024}, "maxLength", "/maxLength"),
]


def test_lengths_beside_a_format_are_enforced():
    """(once refused: the format does not imply them) cengine.schema.lengths"""
    g = cengine.compile_json_schema({"type": "string", "format": "date-time", "maxLength": 20})
    assert accepts(g, '"2024-01-01T00:00:00Z"')                 # 20 code points
    assert not accepts(g, '"2024-01-01T00:00:00.5Z"')           # 22
    g = cengine.compile_json_schema({"type": "string", "format": "hostname", "maxLength": 9})
    assert accepts(g, '"a.example"') and not accepts(g, '"ab.example"')


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
    g = cengine.compile_json_schema({"enum": ["a+", "(", "[a-z]"], "format": "regex"})
    assert accepts(g, '"a+"') and accepts(g, '"[a-z]"') and not accepts(g, '"("')
    g = cengine.compile_json_schema({"enum": ["http://a/b", "not a uri"], "format": "uri"})
    assert accepts(g, '"http://a/b"') and not accepts(g, '"not a uri"')


# --- hypothesis: acceptance against the checker -------------------------------------------------
def _mutations(s: str, alphabet: str) -> st.SearchStrategy:
    edit = st.tuples(st.integers(0, max(len(s) - 1, 0)), st.sampled_from(alphabet),
                     st.sampled_from(["replace", "insert", "delete"]))

    def apply(edits):
        out = s
        for i, c, op in edits:
            i = min(i, len(out))
            if op == "replace":
                out = out[:i] + c + out[i + 1:]
            elif op == "insert":
                out = out[:i] + c + out[i:]
            else:
                out = out[:i] + out[i + 1:]
        return out
    return st.lists(edit, min_size=1, max_size=3).map(apply)


def _uri_regexes():
    import rfc3986_validator
    return rfc3986_validator.URI_RE_COMP, rfc3986_validator.URI_REF_RE_COMP


_DATE_ALPHABET = "0123456789abcdefABCDEF:.-+TtZz"
_URI_ALPHABET = ":/?#[]@%!$&'()*+,;=-._~ aZ09\u00e9\ue000\n\\v"
_HOST_ALPHABET = "-._aZ09 é\nſ"
_label = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,20}[A-Za-z0-9])?", fullmatch=True)
_host = st.tuples(st.lists(_label, min_size=1, max_size=6), st.booleans()).map(
    lambda t: ".".join(t[0]) + ("." if t[1] else ""))


def _with_unicode(s: st.SearchStrategy) -> st.SearchStrategy:
    # IRIs: URIs with a few non-ASCII characters spliced in
    return st.tuples(s, st.lists(st.tuples(st.integers(0, 200), st.sampled_from(
        "é\u00a0\ud7ff\uf900\ufdd0\ufff0\ue000\U00010000")), max_size=3)).map(
        lambda t: _splice(t[0], t[1]))


def _splice(s, edits):
    for i, c in edits:
        i = min(i, len(s))
        s = s[:i] + c + s[i:]
    return s


def _regexes(depth: int) -> st.SearchStrategy:
    """Regexes inside the documented narrowing (groups nested at most depth deep)."""
    atom = st.sampled_from(["a", "b", "1", "-", ":", "é", ".", r"\d", r"\.", r"\(", "[a-z]",
                            "[^0-9_]", "[A-Fa-f0-9]", r"[\w-]", r"\u00e9", "/"])
    if depth > 0:
        atom = st.one_of(atom, st.tuples(st.sampled_from(["(", "(?:"]), _regexes(depth - 1))
                         .map(lambda t: t[0] + t[1] + ")"))
    quant = st.sampled_from(["", "", "*", "+", "?", "*?", "{2}", "{1,3}", "{2,}", "{0,10}", "+?"])
    piece = st.one_of(st.tuples(atom, quant).map("".join), st.sampled_from(["^", "$", r"\b", "|"]))
    return st.lists(piece, max_size=5).map("".join)


def _strategies():
    uri_re, ref_re = _uri_regexes()
    return {
        "date": (st.dates().map(lambda d: d.isoformat()), _DATE_ALPHABET),
        "date-time": (st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
                      _DATE_ALPHABET),
        "time": (st.times().map(lambda t: t.isoformat() + "Z"), _DATE_ALPHABET),
        "uuid": (st.uuids().map(str), _DATE_ALPHABET),
        "ipv4": (st.ip_addresses(v=4).map(str), _DATE_ALPHABET),
        "ipv6": (st.one_of(st.ip_addresses(v=6).map(str),
                           st.ip_addresses(v=6).map(lambda a: a.exploded)), _DATE_ALPHABET),
        "uri": (st.from_regex(uri_re, fullmatch=True), _URI_ALPHABET),
        "uri-reference": (st.from_regex(ref_re, fullmatch=True), _URI_ALPHABET),
        "iri": (_with_unicode(st.from_regex(uri_re, fullmatch=True)), _URI_ALPHABET),
        "iri-reference": (_with_unicode(st.from_regex(ref_re, fullmatch=True)), _URI_ALPHABET),
        "hostname": (_host, _HOST_ALPHABET),
        "idn-hostname": (_host, _HOST_ALPHABET + "xn"),
        "email": (st.tuples(st.from_regex(r"[a-z0-9.+_-]{1,8}", fullmatch=True),
                            _host).map("@".join),
                  "@. é\"[]-+"),
        "idn-email": (st.tuples(st.from_regex(r"[a-zé用.+_-]{1,8}", fullmatch=True),
                                _host).map("@".join),
                      "@. é\"[]-+"),
        "json-pointer": (st.text(alphabet="/~01a é", max_size=12), "/~01a"),
        "relative-json-pointer": (st.from_regex(r"(0|[1-9][0-9]{0,3})(#|(/[a-z~01]{0,3}){0,3})",
                                                fullmatch=True), "0123456789#/~١"),
        "uri-template": (st.from_regex(
            r"([a-z/:.?=&]{0,4}(\{[+#./;?&]?[a-z_][a-z0-9_.]{0,3}(:[1-9][0-9]{0,2}|\*)?"
            r"(,[a-z][a-z0-9]{0,2}\*?){0,2}\}))*", fullmatch=True), "{}:*,.+#=[]% a1/"),
        "regex": (_regexes(REGEX_GROUP_DEPTH), "()[]{}*+?|\\^$.-,:0123a"),
        "duration": (st.from_regex(r"P(\d{1,3}Y)?(\d{1,3}M)?(\d{1,3}D)?(T(\d{1,3}H)?(\d{1,3}M)?"
                                   r"(\d{1,3}([.,]\d{1,2})?S)?)?|P\d{1,2}W", fullmatch=True),
                     "PYMDWTHS.,-+01e"),
    }


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_acceptance_against_the_checker(fmt):
    strategy, alphabet = _strategies()[fmt]
    g = cengine.compile_json_schema({"type": "string", "format": fmt})

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(strategy.flatmap(lambda s: st.one_of(st.just(s), _mutations(s, alphabet))))
    def run(s):
        ours, theirs = accepts(g, json.dumps(s)), checker(fmt, s)
        assert not ours or theirs, ("accepted what the checker refuses", s)
        if theirs and in_scope(fmt, s):
            assert ours, ("refused what the checker accepts", s)
    run()


def test_regex_subset_accepted():
    g = cengine.compile_json_schema({"type": "string", "format": "regex"})

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(_regexes(REGEX_GROUP_DEPTH))
    def run(s):
        assert accepts(g, json.dumps(s)) and checker("regex", s), s
    run()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
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


def test_pattern_beside_format_is_enforced():
    """(once refused) the format's and the pattern's DFA product (searches.product_dfa)"""
    g = cengine.compile_json_schema({"type": "string", "format": "date", "pattern": "^2"})
    m = g.matcher()
    assert m.accept_bytes(b'"2020-01-02"') and m.is_accepting()
    m = g.matcher()
    assert not (m.accept_bytes(b'"1999-01-02"') and m.is_accepting())
