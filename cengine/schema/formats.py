"""`format` as regular languages over decoded code points (mapped onto JSON spellings by
strings.decoded_to_json).

Enforced exactly: date, time, date-time (RFC 3339, real calendar days, leap years), uuid,
ipv4, ipv6 (RFC 3986 text form). email is a documented narrowing (a dot-atom local part and
a dot-separated host name). Every other format is an annotation, as draft 2020-12 says by
default: it is not enforced (docs/json-schema.md).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

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
    d28 = ir.alt(ir.seq(ir.lit("0"), _c("1-9")), ir.seq(ir.lit("1"), _D), ir.seq(ir.lit("2"), _c("0-8")))
    d30 = ir.alt(d28, ir.lit("29"), ir.lit("30"))
    d31 = ir.alt(d30, ir.lit("31"))
    long_months = ir.alt(*(ir.lit(m) for m in ("01", "03", "05", "07", "08", "10", "12")))
    short_months = ir.alt(*(ir.lit(m) for m in ("04", "06", "09", "11")))
    return ir.alt(ir.seq(long_months, ir.lit("-"), d31), ir.seq(short_months, ir.lit("-"), d30),
                  ir.seq(ir.lit("02-"), d28))


def date() -> ir.Expr:
    return ir.alt(ir.seq(_year(), ir.lit("-"), _month_day()), ir.seq(_leap_year(), ir.lit("-02-29")))


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


def ipv4() -> ir.Expr:
    o = _dec_octet()
    return ir.seq(o, ir.lit("."), o, ir.lit("."), o, ir.lit("."), o)


def ipv6() -> ir.Expr:
    """RFC 3986 IPv6address (no zone id)."""
    h16 = ir.repeat(_HEX, 1, 4)
    h16c = ir.seq(h16, ir.lit(":"))
    ls32 = ir.alt(ir.seq(h16, ir.lit(":"), h16), ipv4())
    dc = ir.lit("::")

    def head(k: int) -> ir.Expr:
        # [ *k( h16 ":" ) h16 ]
        if k < 0:
            return ir.EMPTY
        return ir.opt(ir.seq(ir.repeat(h16c, 0, k), h16))

    return ir.alt(
        ir.seq(_n(h16c, 6), ls32),
        ir.seq(dc, _n(h16c, 5), ls32),
        ir.seq(head(0), dc, _n(h16c, 4), ls32),
        ir.seq(head(1), dc, _n(h16c, 3), ls32),
        ir.seq(head(2), dc, _n(h16c, 2), ls32),
        ir.seq(head(3), dc, h16c, ls32),
        ir.seq(head(4), dc, ls32),
        ir.seq(head(5), dc, h16),
        ir.seq(head(6), dc),
    )


def email() -> ir.Expr:
    """A narrowing of RFC 5321 addresses: dot-atom local part, '@', host name labels."""
    atext = ir.charset([(ord(c), ord(c)) for c in "!#$%&'*+/=?^_`{|}~-"] +
                       [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)])
    atom = ir.repeat(atext, 1, 64)
    local = ir.seq(atom, ir.repeat(ir.seq(ir.lit("."), atom), 0, None))
    alnum = ir.charset(((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)))
    ldh = ir.charset(((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0x2D, 0x2D)))
    label = ir.seq(alnum, ir.opt(ir.seq(ir.repeat(ldh, 0, 61), alnum)))
    host = ir.seq(label, ir.repeat(ir.seq(ir.lit("."), label), 0, None))
    return ir.seq(local, ir.lit("@"), host)


FORMATS: Dict[str, Callable[[], ir.Expr]] = {
    "date": date, "time": time, "date-time": date_time, "uuid": uuid,
    "ipv4": ipv4, "ipv6": ipv6, "email": email,
}


def format_expr(name: str) -> Optional[ir.Expr]:
    """The decoded strings of an enforced format, None for a format that is an annotation."""
    build = FORMATS.get(name)
    return build() if build is not None else None
