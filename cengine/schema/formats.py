"""`format` as regular languages over decoded code points (mapped onto JSON spellings by
strings.decoded_to_json).

The reference is jsonschema's FORMAT_CHECKER with its format extras (rfc3986-validator,
rfc3987-syntax, fqdn, idna, uri-template, isoduration, jsonpointer, rfc3339-validator): every
format it knows is enforced, each language here accepts a subset of what the checker accepts,
and equals it where docs/json-schema.md does not name a narrowing.

Exact: date, time, date-time, uuid, ipv4, ipv6, uri, uri-reference, iri, iri-reference,
json-pointer. Narrowings (documented with their reasons): hostname, idn-hostname, email,
idn-email, relative-json-pointer, uri-template, duration, regex (its syntax nests without bound:
groups are nested at most REGEX_GROUP_DEPTH deep). A known format without a grammar would be
refused by name (UNENFORCEABLE, empty today). Every other name is an annotation, as draft
2020-12 says by default.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

from .. import ir

_D = ir.CharSet(((0x30, 0x39),))
_HEX = ir.CharSet(((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)))


def _c(*ranges: str) -> ir.Expr:
    """A class from 'a-z'-style or single-character strings."""
    out = []
    for r in ranges:
        out.append((ord(r[0]), ord(r[-1])))
    return ir.charset(out)


def _n(e: ir.Expr, n: int) -> ir.Expr:
    return ir.repeat(e, n, n)


# --- date / time (RFC 3339 section 5.6) ----------------------------------------------------
def _year() -> ir.Expr:
    # 0001..9999: year 0 is not a date (Python's date and jsonschema refuse it)
    return ir.alt(ir.seq(_c("1-9"), _n(_D, 3)), ir.seq(ir.lit("0"), _c("1-9"), _n(_D, 2)),
                  ir.seq(ir.lit("00"), _c("1-9"), _D), ir.seq(ir.lit("000"), _c("1-9")))


def _one_of(chars: str) -> ir.Expr:
    return ir.charset((ord(c), ord(c)) for c in chars)


def _multiple_of_four_01_99() -> ir.Expr:
    # 04 08 12 ... 96: [02468][48] | [13579][26] | [2468]0
    return ir.alt(ir.seq(_one_of("02468"), _one_of("48")), ir.seq(_one_of("13579"), _one_of("26")),
                  ir.seq(_one_of("2468"), ir.lit("0")))


def _leap_year() -> ir.Expr:
    m4 = _multiple_of_four_01_99()
    # divisible by 4 and not by 100, or divisible by 400 (never 0000)
    return ir.alt(ir.seq(_D, _D, m4), ir.seq(m4, ir.lit("00")))


def _month_day() -> ir.Expr:
    d28 = ir.alt(ir.seq(ir.lit("0"), _c("1-9")), ir.seq(ir.lit("1"), _D),
                 ir.seq(ir.lit("2"), _c("0-8")))
    d30 = ir.alt(d28, ir.lit("29"), ir.lit("30"))
    d31 = ir.alt(d30, ir.lit("31"))
    long_months = ir.alt(*(ir.lit(m) for m in ("01", "03", "05", "07", "08", "10", "12")))
    short_months = ir.alt(*(ir.lit(m) for m in ("04", "06", "09", "11")))
    return ir.alt(ir.seq(long_months, ir.lit("-"), d31), ir.seq(short_months, ir.lit("-"), d30),
                  ir.seq(ir.lit("02-"), d28))


def date() -> ir.Expr:
    return ir.alt(ir.seq(_year(), ir.lit("-"), _month_day()),
                  ir.seq(_leap_year(), ir.lit("-02-29")))


def time() -> ir.Expr:
    hour = ir.alt(ir.seq(_c("0-1"), _D), ir.seq(ir.lit("2"), _c("0-3")))
    sixty = ir.seq(_c("0-5"), _D)           # leap seconds (60) are not produced
    frac = ir.opt(ir.seq(ir.lit("."), ir.repeat(_D, 1, None)))
    offset = ir.alt(_c("Z", "z"), ir.seq(_c("+", "-"), hour, ir.lit(":"), sixty))
    return ir.seq(hour, ir.lit(":"), sixty, ir.lit(":"), sixty, frac, offset)


def date_time() -> ir.Expr:
    return ir.seq(date(), _c("T", "t"), time())


# --- identifiers and addresses -----------------------------------------------------------------
def uuid() -> ir.Expr:
    dash = ir.lit("-")
    return ir.seq(_n(_HEX, 8), dash, _n(_HEX, 4), dash, _n(_HEX, 4), dash, _n(_HEX, 4), dash,
                  _n(_HEX, 12))


def _dec_octet() -> ir.Expr:
    # 0..255 without leading zeros (Python's ipaddress refuses them)
    return ir.alt(_D, ir.seq(_c("1-9"), _D), ir.seq(ir.lit("1"), _D, _D),
                  ir.seq(ir.lit("2"), _c("0-4"), _D), ir.seq(ir.lit("25"), _c("0-5")))


def _loose_dec_octet() -> ir.Expr:
    # rfc3986-validator's 25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?: 0..255, leading zeros allowed
    return ir.alt(ir.seq(ir.lit("25"), _c("0-5")), ir.seq(ir.lit("2"), _c("0-4"), _D),
                  ir.seq(ir.opt(_c("0-1")), _D, ir.opt(_D)))


def _ipv4(octet: ir.Expr) -> ir.Expr:
    return ir.seq(octet, ir.lit("."), octet, ir.lit("."), octet, ir.lit("."), octet)


def ipv4() -> ir.Expr:
    return _ipv4(_dec_octet())


_H16 = ir.repeat(_HEX, 1, 4)
_H16C = ir.seq(_H16, ir.lit(":"))


def _ipv6(octet: ir.Expr) -> ir.Expr:
    """RFC 3986 IPv6address (no zone id), embedded IPv4 octets as given."""
    ls32 = ir.alt(ir.seq(_H16, ir.lit(":"), _H16), _ipv4(octet))
    dc = ir.lit("::")

    def head(k: int) -> ir.Expr:
        # [ *k( h16 ":" ) h16 ]
        return ir.opt(ir.seq(ir.repeat(_H16C, 0, k), _H16))

    return ir.alt(
        ir.seq(_n(_H16C, 6), ls32),
        ir.seq(dc, _n(_H16C, 5), ls32),
        ir.seq(head(0), dc, _n(_H16C, 4), ls32),
        ir.seq(head(1), dc, _n(_H16C, 3), ls32),
        ir.seq(head(2), dc, _n(_H16C, 2), ls32),
        ir.seq(head(3), dc, _H16C, ls32),
        ir.seq(head(4), dc, ls32),
        ir.seq(head(5), dc, _H16),
        ir.seq(head(6), dc),
    )


def ipv6() -> ir.Expr:
    return _ipv6(_dec_octet())


def _rfc3987_syntax_ipv6() -> ir.Expr:
    """rfc3987-syntax's ipv6address, which is not RFC 3986's: eight groups, or seven with one
    '::' standing for exactly one group ('::1' and 'fe80::1' are not in it)."""
    def groups(k: int) -> ir.Expr:      # k h16 joined by ':'
        return ir.seq(_H16, _n(ir.seq(ir.lit(":"), _H16), k - 1))
    ls32 = ir.alt(ir.seq(_H16, ir.lit(":"), _H16), _ipv4(_dec_octet()))
    dc = ir.lit("::")
    return ir.alt(
        ir.seq(_n(_H16C, 6), ls32),
        ir.seq(dc, _n(_H16C, 5), ls32),
        *(ir.seq(groups(k), dc, _n(_H16C, 5 - k), ls32) for k in range(1, 6)),
        ir.seq(groups(6), dc, _H16),
        ir.seq(groups(7), dc),
    )


# --- URI and IRI (RFC 3986 / RFC 3987) --------------------------------------------------------
def _chars(text: str, *ranges: Tuple[int, int]) -> ir.Expr:
    return ir.charset([(ord(c), ord(c)) for c in text] + list(ranges))


_ALNUM = ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A))
_UNRESERVED_SUB_DELIMS = "-._~!$&'()*+,;="
# RFC 3987 ucschar and iprivate as rfc3987-syntax spells them (BMP only: its grammar leaves
# out the planes 1-16 ranges of the RFC)
_UCSCHAR = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF))
_IPRIVATE = ((0xE000, 0xF8FF),)


def _generic_uri(ipv6_expr: ir.Expr, extra: tuple = (),
                 query_extra: tuple = ()) -> Tuple[ir.Expr, ir.Expr]:
    """(absolute URI, relative reference) of RFC 3986 (extra = ()) or RFC 3987 (extra = ucschar:
    the i-variants of unreserved; query_extra = iprivate)."""
    pct = ir.seq(ir.lit("%"), _HEX, _HEX)

    def cls(more: str = "", ranges: tuple = ()) -> ir.Expr:
        return ir.alt(_chars(_UNRESERVED_SUB_DELIMS + more, *_ALNUM, *extra, *ranges), pct)

    userinfo = ir.repeat(cls(":"), 0, None)
    # IPvFuture: a lower-case 'v' only, in both checkers (ASCII unreserved, not the i-variant)
    future = ir.seq(ir.lit("v"), ir.repeat(_HEX, 1, None), ir.lit("."),
                    ir.repeat(_chars(_UNRESERVED_SUB_DELIMS + ":", *_ALNUM), 1, None))
    # IPv4address and reg-name overlap: every dotted quad is also a reg-name
    host = ir.alt(ir.seq(ir.lit("["), ir.alt(ipv6_expr, future), ir.lit("]")),
                  ir.repeat(cls(), 0, None))
    # alt(EMPTY, ...) rather than ir.opt: the automaton builder (_build.pyx) emits a bounded
    # repeat's item from a state that also skips the repeat, and a leading star loops back to
    # that state, so opt(x* '@') would accept x* without the '@'
    authority = ir.seq(ir.alt(ir.EMPTY, ir.seq(userinfo, ir.lit("@"))), host,
                       ir.opt(ir.seq(ir.lit(":"), ir.repeat(_D, 0, None))))
    pchar = cls(":@")
    abempty = ir.repeat(ir.seq(ir.lit("/"), ir.repeat(pchar, 0, None)), 0, None)
    absolute = ir.seq(ir.lit("/"), ir.opt(ir.seq(ir.repeat(pchar, 1, None), abempty)))
    rootless = ir.seq(ir.repeat(pchar, 1, None), abempty)
    noscheme = ir.seq(ir.repeat(cls("@"), 1, None), abempty)
    tail = ir.seq(ir.opt(ir.seq(ir.lit("?"), ir.repeat(cls(":@/?", query_extra), 0, None))),
                  ir.opt(ir.seq(ir.lit("#"), ir.repeat(cls(":@/?"), 0, None))))
    scheme = ir.seq(ir.charset(_ALNUM[1:]), ir.repeat(_chars("+-.", *_ALNUM), 0, None))
    net = ir.seq(ir.lit("//"), authority, abempty)
    absolute_uri = ir.seq(scheme, ir.lit(":"), ir.alt(net, absolute, rootless, ir.EMPTY), tail)
    relative = ir.seq(ir.alt(net, absolute, noscheme, ir.EMPTY), tail)
    return absolute_uri, relative


def uri() -> ir.Expr:
    """RFC 3986 URI as rfc3986-validator accepts it (less a final newline: its '$')."""
    return _generic_uri(_ipv6(_loose_dec_octet()))[0]


def uri_reference() -> ir.Expr:
    return ir.alt(*_generic_uri(_ipv6(_loose_dec_octet())))


def iri() -> ir.Expr:
    """RFC 3987 IRI as rfc3987-syntax's grammar accepts it."""
    return _generic_uri(_rfc3987_syntax_ipv6(), _UCSCHAR, _IPRIVATE)[0]


def iri_reference() -> ir.Expr:
    return ir.alt(*_generic_uri(_rfc3987_syntax_ipv6(), _UCSCHAR, _IPRIVATE))


# --- host names ---------------------------------------------------------------------------------
# fqdn and idna both bound a name to 253 characters (a final dot aside) and a label to 63.
# Both bounds at once cost a product automaton (position in the name x position in the label,
# ~16k states before the JSON spellings), so the grammar takes two shapes whose bound is
# implied: up to 3 labels of up to 63 characters, or up to 10 labels of up to 24 (longest
# names 191 and 249 characters). Documented as a narrowing.
_HOST_SHAPES = ((63, 3), (24, 10))


def _ldh_label(longest: int, idna_rules: bool) -> ir.Expr:
    """1..longest letters, digits and hyphens, not starting or ending with a hyphen; with
    idna_rules also not '--' in the 3rd and 4th positions (RFC 5891 4.2.3.1: the A-label
    prefix 'xn--' and its kin)."""
    alnum = ir.charset(_ALNUM)
    ldh = _chars("-", *_ALNUM)
    if not idna_rules:
        return ir.seq(alnum, ir.opt(ir.seq(ir.repeat(ldh, 0, longest - 2), alnum)))
    third_fourth = ir.alt(ir.seq(alnum, ldh), ir.seq(ir.lit("-"), alnum))
    return ir.alt(
        alnum, ir.seq(alnum, alnum), ir.seq(alnum, ldh, alnum), ir.seq(alnum, ldh, ldh, alnum),
        ir.seq(alnum, ldh, third_fourth, ir.repeat(ldh, 0, longest - 5), alnum))


def _host_name(idna_rules: bool) -> ir.Expr:
    shapes = []
    for longest, most in _HOST_SHAPES:
        label = _ldh_label(longest, idna_rules)
        shapes.append(ir.seq(label, ir.repeat(ir.seq(ir.lit("."), label), 0, most - 1)))
    return ir.seq(ir.alt(*shapes), ir.opt(ir.lit(".")))


def hostname() -> ir.Expr:
    """fqdn's preferred name syntax (RFC 1123 labels: letters, digits, inner hyphens; an
    optional final dot), within the shapes above."""
    return _host_name(False)


def idn_hostname() -> ir.Expr:
    """What idna.encode accepts, narrowed to ASCII names: LDH labels without '--' at
    positions 3-4 (so no A-labels), no U-labels."""
    return _host_name(True)


# --- email (RFC 5321 Mailbox, RFC 6531 for idn-email) ------------------------------------------
def _mailbox(non_ascii: bool) -> ir.Expr:
    """A narrowing of RFC 5321 addresses: dot-atom local part, '@', host name labels."""
    utf8 = ((0x80, ir.MAX_UNICODE),) if non_ascii else ()
    atext = _chars("!#$%&'*+/=?^_`{|}~-", *_ALNUM, *utf8)
    atom = ir.repeat(atext, 1, 64)
    local = ir.seq(atom, ir.repeat(ir.seq(ir.lit("."), atom), 0, None))
    alnum = ir.charset(_ALNUM)
    ldh = _chars("-", *_ALNUM)
    label = ir.seq(alnum, ir.opt(ir.seq(ir.repeat(ldh, 0, 61), alnum)))
    host = ir.seq(label, ir.repeat(ir.seq(ir.lit("."), label), 0, None))
    return ir.seq(local, ir.lit("@"), host)


def email() -> ir.Expr:
    return _mailbox(False)


def idn_email() -> ir.Expr:
    """RFC 6531: the local part may also hold non-ASCII characters (the host stays ASCII)."""
    return _mailbox(True)


# --- JSON pointers (RFC 6901, draft-handrews-relative-json-pointer) ----------------------------
def json_pointer() -> ir.Expr:
    # every '~' is followed by '0' or '1'; the pointer is empty or starts with '/'
    unescaped = ir.charset([(0, ord("~") - 1), (ord("~") + 1, ir.MAX_UNICODE)])
    token_char = ir.alt(unescaped, ir.seq(ir.lit("~"), _c("0-1")))
    return ir.repeat(ir.seq(ir.lit("/"), ir.repeat(token_char, 0, None)), 0, None)


def relative_json_pointer() -> ir.Expr:
    """A non-negative integer, then '#' or a JSON pointer. Narrowed: ASCII digits, and the
    checker refuses any digit after a '0' (it takes '10' but not '100'), so after the first
    digit a '0' can only come last."""
    integer = ir.alt(ir.lit("0"), ir.seq(ir.repeat(_c("1-9"), 1, None), ir.opt(ir.lit("0"))))
    return ir.seq(integer, ir.alt(ir.lit("#"), json_pointer()))


# --- uri-template (RFC 6570) --------------------------------------------------------------------
def uri_template() -> ir.Expr:
    """RFC 6570 templates (levels 1-4), narrowed to what uri_template.validate also takes:
    max-length 1..999 (it reads at most three digits), varnames starting with a letter,
    digit or '_' (it refuses a leading pct-encoded triplet); its extensions (defaults after
    '=', '[]', 'name/key', a trailing joiner, the ',' operator) are not produced."""
    pct = ir.seq(ir.lit("%"), _HEX, _HEX)
    literal = ir.alt(
        ir.charset([(0x21, 0x21), (0x23, 0x24), (0x26, 0x26), (0x28, 0x3B), (0x3D, 0x3D),
                    (0x3F, 0x5B), (0x5D, 0x5D), (0x5F, 0x5F), (0x61, 0x7A), (0x7E, 0x7E),
                    *_UCSCHAR, (0x10000, 0x1FFFD), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD),
                    (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD),
                    (0x70000, 0x7FFFD), (0x80000, 0x8FFFD), (0x90000, 0x9FFFD),
                    (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
                    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
                    *_IPRIVATE, (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]),
        pct)
    varchar = ir.alt(_chars("_", *_ALNUM), pct)
    varname = ir.seq(_chars("_", *_ALNUM), ir.repeat(ir.seq(ir.opt(ir.lit(".")), varchar), 0, None))
    modifier = ir.opt(ir.alt(ir.seq(ir.lit(":"), _c("1-9"), ir.repeat(_D, 0, 2)), ir.lit("*")))
    varspec = ir.seq(varname, modifier)
    expression = ir.seq(ir.lit("{"), ir.opt(_chars("+#./;?&")), varspec,
                        ir.repeat(ir.seq(ir.lit(","), varspec), 0, None), ir.lit("}"))
    return ir.repeat(ir.alt(literal, expression), 0, None)


# --- duration (RFC 3339 appendix A, ISO 8601) -------------------------------------------------
def duration() -> ir.Expr:
    """P[nY][nM][nD][T[nH][nM][nS]] (at least one component, and one after T) or PnW.
    Narrowed from isoduration, which also takes signs, exponents, fractions on any component
    and some week combinations: ASCII digits, a fraction ('.' or ',') on the last component only
    (ISO 8601's rule), no sign."""
    num = ir.repeat(_D, 1, None)
    fraction = ir.seq(num, ir.opt(ir.seq(_chars(".,"), num)))

    def ordered(letters: str, last_fraction: bool) -> ir.Expr:
        # every non-empty subsequence of the designators, in order
        alts = []
        for mask in range(1, 1 << len(letters)):
            chosen = [c for i, c in enumerate(letters) if mask >> i & 1]
            alts.append(ir.seq(*(ir.seq(num, ir.lit(c)) for c in chosen[:-1]),
                               fraction if last_fraction else num, ir.lit(chosen[-1])))
        return ir.alt(*alts)

    time_part = ir.seq(ir.lit("T"), ordered("HMS", True))
    return ir.seq(ir.lit("P"), ir.alt(ordered("YMD", True),
                                      ir.seq(ordered("YMD", False), time_part),
                                      time_part, ir.seq(fraction, ir.lit("W"))))


# --- regex (ECMA-262, checked by the checker with Python's re.compile) ------------------------
REGEX_GROUP_DEPTH = 3
_METACHARS = "\\^$.|?*+()[]{}"


def _printable_but(chars: str) -> ir.Expr:
    """Printable ASCII (U+0020..U+007E) except chars, and every code point from U+00A0
    (control characters are left out: legal in both dialects, never meant)."""
    out, lo = [], 0x20
    for c in sorted(set(map(ord, chars))):
        if c > lo:
            out.append((lo, c - 1))
        lo = max(lo, c + 1)
    if lo <= 0x7E:
        out.append((lo, 0x7E))
    return ir.charset(out + [(0xA0, ir.MAX_UNICODE)])


def _regex_escape() -> ir.Expr:
    # escaped punctuation, the class escapes, control escapes, \xHH, \uHHHH: valid in both
    # ECMA-262 and Python
    return ir.seq(ir.lit("\\"), ir.alt(_chars(_METACHARS + "/-dDwWsSnrtfv"),
                                       ir.seq(ir.lit("x"), _HEX, _HEX),
                                       ir.seq(ir.lit("u"), _n(_HEX, 4))))


def _regex_class() -> ir.Expr:
    """[...] / [^...]: single characters, escapes and ranges (see below); a '-' only last.
    '[', '&', '~', '|' only escaped (Python warns on '[[', '&&', ...)."""
    plain = _printable_but("\\]-^[&~|")
    # ranges from '0', '1', 'a' or 'A' to a character of the same kind ([0-9], [1-5], [a-f],
    # [A-Z], ...): each other start would be one more automaton state per place a class occurs
    ranges = [ir.seq(ir.lit(lo), ir.lit("-"), ir.charset(((ord(lo), hi),)))
              for lo, hi in (("0", 0x39), ("1", 0x39), ("a", 0x7A), ("A", 0x5A))]
    item = ir.alt(plain, ir.lit("^"), _regex_escape(), *ranges)
    first = ir.alt(plain, _regex_escape(), *ranges)     # a leading '^' negates instead
    return ir.seq(ir.lit("["), ir.opt(ir.lit("^")), first, ir.repeat(item, 0, None),
                  ir.opt(ir.lit("-")), ir.lit("]"))


def _regex_quantifier() -> ir.Expr:
    number = ir.alt(ir.lit("0"), ir.seq(_c("1-9"), ir.repeat(_D, 0, 2)))
    # {n,m} needs n <= m: n one digit, m a larger-or-equal digit or two or three digits
    bounded = ir.alt(*(ir.seq(ir.lit(f"{n},"), ir.alt(ir.charset(((0x30 + n, 0x39),)),
                                                      ir.seq(_c("1-9"), ir.repeat(_D, 1, 2))))
                       for n in range(10)))
    counted = ir.seq(ir.lit("{"), ir.alt(number, ir.seq(number, ir.lit(",")), bounded), ir.lit("}"))
    return ir.seq(ir.alt(_chars("*+?"), counted), ir.opt(ir.lit("?")))


def regex() -> ir.Expr:
    """A narrowing of ECMA-262 regular expressions to a regular subset that Python's re (the
    checker) also compiles: literals, '.', escapes, classes, groups '(...)' and '(?:...)'
    nested at most REGEX_GROUP_DEPTH deep, alternation, quantifiers (one each, lazy allowed,
    counted ones with min <= max), '^' '$' '\\b' '\\B' unquantified. No lookaround,
    backreferences, named groups or flags."""
    literal = _printable_but(_METACHARS)
    anchor = ir.alt(_chars("^$"), ir.seq(ir.lit("\\"), _chars("bB")))
    quant = _regex_quantifier()
    simple = ir.alt(literal, ir.lit("."), _regex_escape(), _regex_class())
    body = ir.NOTHING
    for _ in range(REGEX_GROUP_DEPTH + 1):
        atom = simple if body is ir.NOTHING else ir.alt(
            simple, ir.seq(ir.lit("("), ir.opt(ir.lit("?:")), body, ir.lit(")")))
        piece = ir.alt(anchor, ir.seq(atom, ir.opt(quant)))
        # branch ('|' branch)* with branches that may be empty: any run of pieces and '|'
        body = ir.repeat(ir.alt(piece, ir.lit("|")), 0, None)
    return body


FORMATS: Dict[str, Callable[[], ir.Expr]] = {
    "date": date, "time": time, "date-time": date_time, "duration": duration,
    "uuid": uuid, "ipv4": ipv4, "ipv6": ipv6,
    "uri": uri, "uri-reference": uri_reference, "iri": iri, "iri-reference": iri_reference,
    "uri-template": uri_template, "hostname": hostname, "idn-hostname": idn_hostname,
    "email": email, "idn-email": idn_email,
    "json-pointer": json_pointer, "relative-json-pointer": relative_json_pointer,
    "regex": regex,
}

# formats the checker knows that have no grammar here: refused by name (compiler._format).
# Empty today: every format of the checker is enforced, exactly or narrowed.
UNENFORCEABLE: Dict[str, str] = {}


# the builders above depend on nothing but this module's constants: each format's expression
# is the same in every compile, so it is built once per process, on first use (IR
# expressions are immutable; a schema with a URI property rebuilt ~1,000 nodes per compile)
_FORMAT_EXPRS: Dict[str, ir.Expr] = {}


def format_expr(name: str) -> Optional[ir.Expr]:
    """The decoded strings of an enforced format, None for a format that is an annotation
    (compiler._format refuses the UNENFORCEABLE names before asking)."""
    got = _FORMAT_EXPRS.get(name)
    if got is None:
        build = FORMATS.get(name)
        if build is None:
            return None
        got = _FORMAT_EXPRS[name] = build()
    return got
