"""JSON lexical pieces as grammar IR: whitespace, strings, numbers, literals, any value.

The shared pieces are rules with fixed names (`json-ws`, `json-string-body`, ...) added to a
GrammarIR at most once, so every schema compiled into one grammar reuses them (per-rule token
tables are cached: one shared string body is far cheaper than one per property).

Strings are exact RFC 8259 strings over valid UTF-8: control characters only escaped, every
escape including `\\uXXXX`, surrogates only as a correctly paired `\\uD8xx\\uDCxx` escape.
`char_in(ranges)` builds "one string character whose decoded code point lies in ranges" in
every spelling (literal UTF-8, short escape, `\\u` escape, surrogate pair), which is what lets
the schema compiler count code points and exclude key names exactly.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from json.encoder import encode_basestring as _encode_basestring
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Tuple

from .. import ir
from ..automaton import keep_positions
from ..ir import UNROLL_INLINE_MAX
from .._strset import string_set_dfa

WS = "json-ws"
STRING_CHAR = "json-string-char"
STRING_BODY = "json-string-body"
STRING = "json-string"
NUMBER = "json-number"
INTEGER = "json-integer"
FRACTION = "json-fraction"
BOOLEAN = "json-boolean"
NULL = "json-null"
VALUE = "json-value"
OBJECT = "json-object"
ARRAY = "json-array"

_DIGIT = ir.ByteSet(((0x30, 0x39),))
_DIGIT19 = ir.ByteSet(((0x31, 0x39),))
_WS_BYTES = ir.ByteSet(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))

# the two-character escapes and the code point each stands for
SHORT_ESCAPES = {'"': 0x22, "\\": 0x5C, "/": 0x2F, "b": 0x08, "f": 0x0C, "n": 0x0A,
                 "r": 0x0D, "t": 0x09}

_U = ir.lit("u")
# (escape letter, code point) by letter
_SHORT_BY_LETTER = tuple(sorted((ord(c), cp) for c, cp in SHORT_ESCAPES.items()))

_SURR_LO, _SURR_HI = 0xD800, 0xDFFF
_ALL = ((0, ir.MAX_UNICODE),)


# ir.alt skips the deduplicating hash when the items' cheap summaries differ (it used to be
# done here, for the trie of free keys); the name stays for the callers
alt = ir.alt


# --- code point sets --------------------------------------------------------------------
def _intersect(ranges: Iterable[Tuple[int, int]], lo: int, hi: int) -> ir.Ranges:
    # clipped normalized ranges are normalized (the usual input): checked, not sorted again
    out = []
    last = None
    for a, b in ranges:
        if a > b or (last is not None and a <= last + 1):
            return ir.normalize_ranges((max(a, lo), min(b, hi)) for a, b in ranges
                                       if a <= hi and b >= lo)
        last = b
        if a <= hi and b >= lo:
            out.append((a if a > lo else lo, b if b < hi else hi))
    return tuple(out)


def _minus(ranges: Iterable[Tuple[int, int]], cut: Iterable[Tuple[int, int]]) -> ir.Ranges:
    """The code points of ranges (within 0..MAX_UNICODE) outside cut, normalized: one sweep
    of the two normalized lists (the pieces left are apart by construction)."""
    cut = ir.normalize_ranges(cut)
    n_cut = len(cut)
    out = []
    j = 0
    for a, b in ir.normalize_ranges(ranges):
        a, b = max(a, 0), min(b, ir.MAX_UNICODE)
        if a > b:
            continue
        while j < n_cut and cut[j][1] < a:
            j += 1
        k = j
        while k < n_cut and cut[k][0] <= b:
            ca, cb = cut[k]
            if ca > a:
                out.append((a, ca - 1))
            a = cb + 1
            if a > b:
                break
            k += 1
        if a <= b:
            out.append((a, b))
    return tuple(out)


def _contains(ranges: ir.Ranges, cp: int) -> bool:
    """cp lies in one of the normalized (ascending) ranges."""
    for a, b in ranges:
        if cp <= b:
            return a <= cp
    return False


# --- hex digits of \\u escapes ------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def _hex_digit(lo: int, hi: int) -> ir.Expr:
    """One hex digit (either case) with value in [lo, hi]."""
    ranges = []
    if lo <= 9:
        ranges.append((0x30 + lo, 0x30 + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((0x41 + a, 0x41 + b))
        ranges.append((0x61 + a, 0x61 + b))
    return ir.ByteSet(ir.normalize_ranges(ranges))


@functools.lru_cache(maxsize=8192)
def hex_range(lo: int, hi: int, n: int = 4) -> ir.Expr:
    """Exactly n hex digits (either case) spelling a value in [lo, hi]."""
    if lo > hi:
        return ir.NOTHING
    if n == 0:
        return ir.EMPTY
    unit = 16 ** (n - 1)
    dlo, dhi = lo // unit, hi // unit
    rlo, rhi = lo % unit, hi % unit
    if dlo == dhi:
        return ir.seq(_hex_digit(dlo, dlo), hex_range(rlo, rhi, n - 1))
    full = ir.repeat(_hex_digit(0, 15), n - 1, n - 1)
    parts = []
    first_full = dlo if rlo == 0 else dlo + 1
    last_full = dhi if rhi == unit - 1 else dhi - 1
    if rlo != 0:
        parts.append(ir.seq(_hex_digit(dlo, dlo), hex_range(rlo, unit - 1, n - 1)))
    if first_full <= last_full:
        parts.append(ir.seq(_hex_digit(first_full, last_full), full))
    if rhi != unit - 1:
        parts.append(ir.seq(_hex_digit(dhi, dhi), hex_range(0, rhi, n - 1)))
    return ir.alt(*parts)


@functools.lru_cache(maxsize=1024)
def _pairs(lo: int, hi: int) -> ir.Expr:
    """`\\uHHHH\\uLLLL` surrogate-pair escapes (after the first backslash-u) for [lo, hi]."""
    out = []
    hs_lo, hs_hi = 0xD800 + ((lo - 0x10000) >> 10), 0xD800 + ((hi - 0x10000) >> 10)
    ls_lo, ls_hi = 0xDC00 + ((lo - 0x10000) & 0x3FF), 0xDC00 + ((hi - 0x10000) & 0x3FF)
    low = lambda a, b: ir.seq(ir.lit("\\u"), hex_range(a, b))  # noqa: E731
    if hs_lo == hs_hi:
        return ir.seq(hex_range(hs_lo, hs_lo), low(ls_lo, ls_hi))
    first_full, last_full = hs_lo, hs_hi
    if ls_lo != 0xDC00:
        out.append(ir.seq(hex_range(hs_lo, hs_lo), low(ls_lo, 0xDFFF)))
        first_full += 1
    if ls_hi != 0xDFFF:
        out.append(ir.seq(hex_range(hs_hi, hs_hi), low(0xDC00, ls_hi)))
        last_full -= 1
    if first_full <= last_full:
        out.append(ir.seq(hex_range(first_full, last_full), low(0xDC00, 0xDFFF)))
    return ir.alt(*out)


def char_in(ranges: Iterable[Tuple[int, int]]) -> ir.Expr:
    """One JSON string character, in any legal spelling, whose code point lies in `ranges`."""
    # memoized: expressions are immutable, and key exclusion asks for the same sets per schema
    return _char_in(tuple((a, b) for a, b in ranges))


@functools.lru_cache(maxsize=4096)
def _char_in(ranges: ir.Ranges) -> ir.Expr:
    ranges = _minus(ranges, ((_SURR_LO, _SURR_HI),))
    if not ranges:
        return ir.NOTHING
    return ir.alt(_literal_in(ranges), _escaped_in(ranges))


def _literal_in(ranges: ir.Ranges) -> ir.Expr:
    """The characters of `ranges` that may stand in a string as themselves."""
    quote_backslash = ((0x22, 0x22), (0x5C, 0x5C))
    return ir.charset(_minus(_intersect(ranges, 0x20, ir.MAX_UNICODE), quote_backslash))


def _escaped_in(ranges: ir.Ranges) -> ir.Expr:
    """Every escaped spelling (short, \\uXXXX, surrogate pair) of the characters of `ranges`."""
    # the escape letters ascend and no two are adjacent: the ranges are normalized as built
    short = tuple((k, k) for k, cp in _SHORT_BY_LETTER if _contains(ranges, cp))
    escapes = []
    if short:
        escapes.append(ir.ByteSet(short))
    u = u_escape_digits(ranges)
    if type(u) is not ir.Nothing:
        escapes.append(ir.seq(_U, u))
    return ir.seq(ir.lit("\\"), ir.alt(*escapes)) if escapes else ir.NOTHING


def u_escape_digits(ranges: ir.Ranges) -> ir.Expr:
    """What follows `\\u` in the `\\uXXXX` escapes (a surrogate pair's second `\\u` included)
    of the characters of `ranges` (normalized, surrogates apart); NOTHING when none."""
    # the pieces of disjoint ranges are different expressions, none empty: what alt() makes
    # of them is their flat Alt, built directly
    u = []
    for a, b in _intersect(ranges, 0, ir.MAX_UNICODE):
        if b <= 0xFFFF or a > 0xFFFF:
            pieces = ((hex_range(a, b) if b <= 0xFFFF else _pairs(a, b)),)
        else:
            pieces = (hex_range(a, 0xFFFF), _pairs(0x10000, b))
        for e in pieces:
            if type(e) is ir.Alt:
                u.extend(e.items)
            else:
                u.append(e)
    if not u:
        return ir.NOTHING
    return u[0] if len(u) == 1 else ir.Alt(tuple(u))


# --- shared rules --------------------------------------------------------------------------
def _ensure(g: ir.GrammarIR, name: str, build, **flags) -> ir.Ref:
    if name not in g.rules:
        g.add(name, ir.NOTHING, **flags)    # placeholder first: value refers to itself
        g.rules[name].expr = build()
    return ir.Ref(name)


# The fixed lexical rules' expressions depend on nothing: made once per process (on first
# use), their rules added to a grammar the first time it asks, in the same order as before
# (a rule's name before those it calls), and the same calls handed out every time.
_WS_REF = ir.Ref(WS)
_WS_EXPR = ir.repeat(_WS_BYTES, 0, None)
_COMMA = ir.seq(_WS_REF, ir.lit(","), _WS_REF)
_COLON = ir.seq(_WS_REF, ir.lit(":"), _WS_REF)
_STRING_REF = ir.Ref(STRING)
_STRING_BODY_REF = ir.Ref(STRING_BODY)
_STRING_CHAR_REF = ir.Ref(STRING_CHAR)
_VALUE_REF = ir.Ref(VALUE)
_STRING_EXPR = ir.seq(ir.lit('"'), _STRING_BODY_REF)


def ws(g: ir.GrammarIR) -> ir.Ref:
    """Structural whitespace; its bytes spend the document's whitespace budget."""
    if WS not in g.rules:
        g.add(WS, _WS_EXPR, whitespace=True)
    return _WS_REF


def ws_bytes() -> ir.Ranges:
    """The bytes of structural whitespace (ws() is any number of them)."""
    return _WS_BYTES.ranges


def comma(g: ir.GrammarIR) -> ir.Expr:
    ws(g)
    return _COMMA


def colon(g: ir.GrammarIR) -> ir.Expr:
    ws(g)
    return _COLON


def string_char(g: ir.GrammarIR) -> ir.Ref:
    """Exactly one code point of a string body: used for minLength/maxLength."""
    if STRING_CHAR not in g.rules:
        # its frame kept: along a count the mask tables then see (run, character) pairs and
        # decide plain tokens by their number of characters
        g.add(STRING_CHAR, char_in(_ALL), frame=True)
    return _STRING_CHAR_REF


@functools.lru_cache(maxsize=1)
def _string_body_expr() -> ir.Expr:
    return ir.seq(ir.repeat(char_in(_ALL), 0, None), ir.lit('"'))


def string_body(g: ir.GrammarIR) -> ir.Ref:
    """The unconstrained rest of a string, closing quote included; shared by every string.

    The quote belongs to the rule so that the rule can end only at a quote: a rule that may
    end after any character makes every token cross its end, and the mask tables then
    decide nothing ahead of time.
    """
    if STRING_BODY not in g.rules:
        g.add(STRING_BODY, _string_body_expr())
    return _STRING_BODY_REF


def string(g: ir.GrammarIR) -> ir.Ref:
    if STRING not in g.rules:
        g.add(STRING, _STRING_EXPR)
        string_body(g)
    return _STRING_REF


@functools.lru_cache(maxsize=1)
def _any_char() -> ir.Expr:
    return char_in(_ALL)


def _counted(g: ir.GrammarIR, n: int, closes: bool) -> ir.Expr:
    """The character of a run of at most n: a call of string_char (its frame kept, so each
    count is a (count, character) pair) where the run ends in the closing quote and has two
    or more (closes), or is too long for the builder to inline; else inline. A lone call
    (at most one, or the fixed prefix before an unbounded rest) would be a frame on its own
    whose table hands nearly every token to a suffix walk."""
    if n > _INLINED_RUN or (closes and n >= 2):
        return string_char(g)
    return _any_char()


# Bounds up to this are one position per count (a call of the character rule each, pair
# tables in the mask); above it the count is a counter on the stack (see counter_string).
UNROLL_LENGTH_MAX = 4096
# the largest minLength/maxLength a string compiles with (documented in docs/limits.md)
MAX_STRING_LENGTH = 1 << 20


def bounded_string(g: ir.GrammarIR, lo: int, hi: Optional[int]) -> ir.Expr:
    """A string of lo..hi code points (hi None: unbounded); escapes count as one."""
    if lo == 0 and hi is None:
        return string(g)
    if hi is not None and hi < lo:
        return ir.NOTHING
    if max(lo, hi or 0) > UNROLL_LENGTH_MAX:
        # a rule of its own: called, not copied, wherever the schema repeats it (array items)
        return _ensure(g, f"json-string-length-{lo}-{hi}",
                       lambda: counter_string(g, lo, hi))
    def unrolled():
        if hi is None:
            return ir.seq(ir.lit('"'), ir.repeat(_counted(g, lo, False), lo, lo), string_body(g))
        return ir.seq(ir.lit('"'), ir.repeat(_counted(g, hi, True), lo, hi), ir.lit('"'))
    if max(lo, hi or 0) > _INLINED_RUN:
        # one rule per bound pair: every property with maxLength 255 calls the same ~260
        # positions instead of the builder copying them into each caller
        return _ensure(g, f"json-string-length-{lo}-{hi}", unrolled)
    return unrolled()


# Above UNROLL_LENGTH_MAX a length is a counter on the pushdown stack (counter_string): the
# level-1 rule is COUNT_FIRST calls of the character (positions farther than the longest
# token from its end share one mask table), level k is COUNT_BASE calls of level k - 1, so
# a bound n costs at most about 4 * COUNT_FIRST positions (E1, U1, two last runs) plus
# 4 * COUNT_BASE per level (log_COUNT_BASE(n / COUNT_FIRST) levels). Fewer levels mean fewer
# contexts near a level's end whose mask tables are built cold: 256 x 64 was the best mean
# mask of the shapes measured (git show d543055:docs/benchmarks.md, "String lengths above
# 4,096 as a counter on the stack").
COUNT_FIRST = 256
COUNT_BASE = 64
# a run of at most this many characters is inlined by the builder (~44 positions a
# character; past it the builder keeps a counted run of a rule as calls): the counter keeps
# its last run longer, as calls
_INLINED_RUN = UNROLL_INLINE_MAX


def counter_string(g: ir.GrammarIR, lo: int, hi: Optional[int], first: Optional[int] = None,
                   base: Optional[int] = None) -> ir.Expr:
    """A string of lo..hi code points (hi None: unbounded) counted on the stack: rule E1 is
    exactly `first` (default COUNT_FIRST) characters, E(k) exactly `base` (COUNT_BASE)
    E(k-1); U1 is fewer than `first` characters then the quote, U(k) fewer than `base`
    E(k-1) then U(k-1).

    "Exactly lo" is lo's digits of E(k) from the top level down, then a run of characters;
    "at most n more, then the quote" takes at each level, with d the digit of n there,
    either fewer than d E(k) and U(k) (the string ends below this level) or d E(k) and the
    lower levels. Unambiguous, so the matcher carries one stack per level where the string
    may still end (a pushdown frame cannot tell its caller whether it ended full or
    partial; the wrong guess dies at the quote or a block's end). Exact in code points: a
    call of the character rule is one code point in any spelling.
    """
    return _counter(g, ir.lit('"'), string_char(g), ir.lit('"'), string_body(g), lo, hi,
                    first or COUNT_FIRST, base or COUNT_BASE, "")


def _run_and_blocks(n: int, first: int, sizes: Sequence[int]) -> Tuple[list, int]:
    """n = sum(digits[k] * sizes[k]) + run: digits per level (top first) and the last run of
    single characters; the run is kept past _INLINED_RUN (one block borrowed) when n allows."""
    run = n % first
    if run <= _INLINED_RUN and n >= first:
        run += first
    m = n - run
    digits = []
    for s in reversed(sizes):
        d, m = divmod(m, s)
        digits.append(d)
    return digits, run


def _counter(g: ir.GrammarIR, open_: ir.Expr, ch: ir.Expr, close: ir.Expr, tail: ir.Expr,
             lo: int, hi: Optional[int], first: int, base: int, tag: str) -> ir.Expr:
    """`open_`, lo..hi repetitions of the one-character `ch`, `close` (which ends the
    string); `tail` is `ch* close` (the unbounded rest), `tag` names the level rules of this
    (ch, close) pair ("" for any character then the quote)."""
    sizes = [first]                     # characters of E1, E2, ...
    while sizes[-1] * base <= max(lo, hi or 0):
        sizes.append(sizes[-1] * base)
    name = f"json-count{tag}-{first}x{base}"

    def exact(k: int) -> ir.Ref:         # E(k): exactly sizes[k - 1] characters
        if k == 1:
            return _ensure(g, f"{name}-e1", lambda: ir.repeat(ch, first, first))
        return _ensure(g, f"{name}-e{k}", lambda: ir.repeat(exact(k - 1), base, base))

    def under(k: int) -> ir.Ref:         # U(k): fewer than sizes[k - 1] characters, close
        if k == 1:
            return _ensure(g, f"{name}-u1", lambda: ir.seq(ir.repeat(ch, 0, first - 1), close))
        return _ensure(g, f"{name}-u{k}",
                       lambda: ir.seq(ir.repeat(exact(k - 1), 0, base - 1), under(k - 1)))

    levels = range(len(sizes), 0, -1)
    try:
        digits, run = _run_and_blocks(lo, first, sizes)
        prefix = ir.seq(open_, *(ir.repeat(exact(k), d, d) for k, d in zip(levels, digits)),
                        ir.repeat(ch, run, run))
        if hi is None:
            return ir.seq(prefix, tail)
        digits, run = _run_and_blocks(hi - lo, first, sizes)
        rest = ir.seq(ir.repeat(ch, 0, run), close)
        for k, d in reversed(list(zip(levels, digits))):
            if d:
                rest = ir.alt(ir.seq(ir.repeat(exact(k), 0, d - 1), under(k)),
                              ir.seq(ir.repeat(exact(k), d, d), rest))
        return ir.seq(prefix, rest)
    finally:
        # exact and under call themselves through their cells: unbound, no cycle outlives
        # the call
        exact = under = None  # noqa: F841


def class_string(g: ir.GrammarIR, ranges: Iterable[Tuple[int, int]], lo: int,
                 hi: Optional[int], head: ir.Expr = ir.EMPTY,
                 foot: ir.Expr = ir.EMPTY) -> ir.Expr:
    """A string (quotes included) `head`, then lo..hi characters whose code points lie in
    `ranges` (every JSON spelling, as char_in), then `foot`: what a pattern `^C{n,m}$` beside
    minLength/maxLength leaves. Counted like bounded_string (one position per count up to
    UNROLL_LENGTH_MAX, a counter above; the level rules are named by class and foot)."""
    ranges = ir.normalize_ranges(ranges)
    tag = "-" + hashlib.sha1(repr((ranges, foot)).encode()).hexdigest()[:12]
    one = char_in(ranges)
    cls = hashlib.sha1(repr(ranges).encode()).hexdigest()[:12]

    def ch() -> ir.Ref:
        # the character as a rule with its frame kept (as string_char): along a count that
        # closes the string the mask tables see (count, character) pairs and decide plain
        # tokens by class and length (see _counted); the counter's levels call it too
        return _ensure(g, f"json-class-char-{cls}", lambda: one, frame=True)
    close = ir.seq(foot, ir.lit('"'))
    open_ = ir.seq(ir.lit('"'), head)
    # the unbounded rest loops inline (one DFA, as string_body's)
    tail = _ensure(g, f"json-class-rest{tag}", lambda: ir.seq(ir.repeat(one, 0, None), close))
    if hi is not None and hi < lo:
        return ir.NOTHING
    if max(lo, hi or 0) > UNROLL_LENGTH_MAX:
        return _counter(g, open_, ch(), close, tail, lo, hi, COUNT_FIRST, COUNT_BASE, tag)

    def unrolled():
        if hi is None:
            return ir.seq(open_, ir.repeat(one, lo, lo), tail)
        return ir.seq(open_, ir.repeat(ch() if hi >= 2 else one, lo, hi), close)
    if max(lo, hi or 0) > _INLINED_RUN:
        # a rule of its own, as bounded_string's (named by class, head, foot and bounds)
        key = hashlib.sha1(repr((ranges, head, foot)).encode()).hexdigest()[:12]
        return _ensure(g, f"json-class-string-{key}-{lo}-{hi}", unrolled)
    return unrolled()


@functools.lru_cache(maxsize=1)
def _int_part() -> ir.Expr:
    nonzero = ir.seq(_DIGIT19, ir.repeat(_DIGIT, 0, None))
    return ir.seq(ir.opt(ir.lit("-")), ir.alt(ir.lit("0"), nonzero))


@functools.lru_cache(maxsize=1)
def _number_expr() -> ir.Expr:
    frac = ir.seq(ir.lit("."), ir.repeat(_DIGIT, 1, None))
    exp = ir.seq(ir.ByteSet(((0x45, 0x45), (0x65, 0x65))),
                 ir.opt(ir.ByteSet(((0x2B, 0x2B), (0x2D, 0x2D)))), ir.repeat(_DIGIT, 1, None))
    return ir.seq(_int_part(), ir.opt(frac), ir.opt(exp))


@functools.lru_cache(maxsize=1)
def _fraction_expr() -> ir.Expr:
    """Numbers that are no integers (`not: {type: integer}`): without an exponent, a fraction
    with a nonzero digit (exactly those); with one, a negative exponent after a mantissa
    whose last digit is nonzero (1.5e-07, 5e-324: every spelling json.dumps gives a
    non-integral float). Other exponent forms (15e-1, 1.25e1) are not produced: which of
    them are integers is not a regular language."""
    digits = ir.repeat(_DIGIT, 0, None)
    nz_frac = ir.seq(ir.lit("."), digits, _DIGIT19)
    plain = ir.seq(_int_part(), nz_frac, digits)
    nz_int = ir.seq(ir.opt(ir.lit("-")), ir.alt(_DIGIT19, ir.seq(_DIGIT19, digits, _DIGIT19)))
    mantissa = ir.alt(ir.seq(_int_part(), nz_frac), nz_int)
    exp = ir.seq(ir.ByteSet(((0x45, 0x45), (0x65, 0x65))), ir.lit("-"),
                 ir.repeat(ir.lit("0"), 0, None), _DIGIT19, digits)
    return ir.alt(plain, ir.seq(mantissa, exp))


def fraction(g: ir.GrammarIR) -> ir.Ref:
    if FRACTION not in g.rules:
        g.add(FRACTION, _fraction_expr())
    return ir.Ref(FRACTION)


_NUMBER_REF, _INTEGER_REF, _BOOLEAN_REF, _NULL_REF = (
    ir.Ref(NUMBER), ir.Ref(INTEGER), ir.Ref(BOOLEAN), ir.Ref(NULL))
_BOOLEAN_EXPR = ir.alt(ir.lit("true"), ir.lit("false"))
_NULL_EXPR = ir.lit("null")


def number(g: ir.GrammarIR) -> ir.Ref:
    if NUMBER not in g.rules:
        g.add(NUMBER, _number_expr())
    return _NUMBER_REF


def integer(g: ir.GrammarIR) -> ir.Ref:
    """An integer written as one: `-?(0|[1-9][0-9]*)`. `1.0` (an integer for JSON Schema) and
    exponents are not produced, a documented narrowing (docs/json-schema.md)."""
    if INTEGER not in g.rules:
        g.add(INTEGER, _int_part())
    return _INTEGER_REF


def boolean(g: ir.GrammarIR) -> ir.Ref:
    if BOOLEAN not in g.rules:
        g.add(BOOLEAN, _BOOLEAN_EXPR)
    return _BOOLEAN_REF


def null(g: ir.GrammarIR) -> ir.Ref:
    if NULL not in g.rules:
        g.add(NULL, _NULL_EXPR)
    return _NULL_REF


_PUNCT = {c: ir.lit(c) for c in "{}[]"}


def container(g: ir.GrammarIR, open_: str, members: ir.Expr, close: str, *,
              nullable_members: bool) -> ir.Expr:
    """`open ws members ws close`, or `open ws close` when members may be empty.

    `members` must not match the empty string: the empty case is its own alternative so two
    whitespace rules never stand side by side (that would make the matcher track both).
    """
    w = ws(g)
    close_ = _PUNCT.get(close) or ir.lit(close)
    empty = close_ if nullable_members else ir.NOTHING
    return ir.seq(_PUNCT.get(open_) or ir.lit(open_), w, alt(empty, ir.seq(members, w, close_)))


def value(g: ir.GrammarIR) -> ir.Ref:
    """Any JSON value (the `true` / `{}` schema). Objects and arrays are containers."""
    if VALUE not in g.rules:
        # its rules are the same in every grammar: built once, then the missing ones added in
        # the order a build would add them (the expressions are immutable and shared)
        for name, expr, is_container, is_ws in _value_rules():
            if name not in g.rules:
                g.add(name, expr, container=is_container, whitespace=is_ws)
    return _VALUE_REF


@functools.lru_cache(maxsize=1)
def _value_rules() -> tuple:
    fresh = ir.GrammarIR()
    _build_value(fresh)
    return tuple((r.name, r.expr, r.container, r.whitespace) for r in fresh.rules.values())


def _build_value(g: ir.GrammarIR) -> None:
    v = ir.Ref(VALUE)
    g.add(VALUE, ir.NOTHING)
    member = ir.seq(string(g), colon(g), v)
    g.add(OBJECT, container(g, "{", ir.seq(member, ir.repeat(ir.seq(comma(g), member), 0, None)),
                            "}", nullable_members=True), container=True)
    g.add(ARRAY, container(g, "[", ir.seq(v, ir.repeat(ir.seq(comma(g), v), 0, None)),
                           "]", nullable_members=True), container=True)
    g.rules[VALUE].expr = ir.alt(ir.Ref(OBJECT), ir.Ref(ARRAY), string(g), number(g),
                                 boolean(g), null(g))


@functools.lru_cache(maxsize=1)
def _fixed_rules() -> dict:
    # name -> the one expression the fixed rules above are added with (every grammar shares
    # them); each derives a finite string
    out = {WS: _WS_EXPR, STRING: _STRING_EXPR, STRING_BODY: _string_body_expr(),
           STRING_CHAR: char_in(_ALL), NUMBER: _number_expr(), INTEGER: _int_part(),
           FRACTION: _fraction_expr(), BOOLEAN: _BOOLEAN_EXPR, NULL: _NULL_EXPR}
    for name, expr, _, _ in _value_rules():
        out[name] = expr
    # those that call nothing are the same language in every grammar: the builder keeps
    # their determinized positions (keep_positions) instead of making them again per compile
    # (the string body's UTF-8 NFA, the number's: a tenth of a small schema's build)
    for expr in out.values():
        keep_positions(expr)
    return out


def productive_fixed_rules(g: ir.GrammarIR) -> list:
    """The names of g's rules that are this module's fixed rules as it adds them (the same
    expression objects, so not replaced since): each derives a finite string, so
    ir.productive_rules needs not prove them again in every grammar."""
    rules = g.rules
    out = []
    for name, expr in _fixed_rules().items():
        r = rules.get(name)
        if r is not None and r.expr is expr:
            out.append(name)
    return out


# --- literals (enum / const / property names) -----------------------------------------------
def canonical_string(s: str) -> bytes:
    """The spelling used for key names and enum/const strings: `json.dumps(ensure_ascii=False)`
    (raw UTF-8, short escapes for `"` `\\` and \\b\\f\\n\\r\\t, \\u00XX for other controls)."""
    try:
        # what json.dumps(s, ensure_ascii=False) returns for a str, without making an
        # encoder per call (an enum of 10,000 strings calls this 10,000 times)
        return _encode_basestring(s).encode("utf-8")
    except UnicodeEncodeError:     # a lone surrogate: only the escaped spelling exists
        return json.dumps(s, ensure_ascii=True).encode("ascii")


def number_literal(v, *, fraction: bool = True) -> ir.Expr:
    """A number equal to v: integral values as digits with an optional all-zero fraction
    (1, 1.0, 1.00; fraction=False: digits only, for values typed integer), others in Python's
    shortest repr with optional trailing fraction zeros."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return ir.NOTHING       # not representable in JSON
        if v.is_integer():
            v = int(v)
    zeros = ir.opt(ir.seq(ir.lit("."), ir.repeat(ir.lit("0"), 1, None))) if fraction else ir.EMPTY
    if isinstance(v, int):
        if v == 0:
            return ir.seq(ir.opt(ir.lit("-")), ir.lit("0"), zeros)
        return ir.seq(ir.lit(str(v)), zeros)
    r = repr(v)
    if "e" in r or "E" in r:
        return ir.lit(r)
    return ir.seq(ir.lit(r), ir.repeat(ir.lit("0"), 0, None))


def value_literal(g: ir.GrammarIR, v, *, integer: bool = False) -> ir.Expr:
    """Exactly the JSON value v (enum/const): objects keep the key order of v, whitespace may
    stand between tokens, strings use the canonical spelling. integer=True: the value is
    typed integer, so an integral number is written as digits only."""
    if v is None:
        return ir.lit("null")
    if v is True:
        return ir.lit("true")
    if v is False:
        return ir.lit("false")
    if isinstance(v, (int, float)):
        return number_literal(v, fraction=not integer)
    if isinstance(v, str):
        return ir.byte_string(canonical_string(v))
    if isinstance(v, list):
        if not v:
            return ir.seq(ir.lit("["), ws(g), ir.lit("]"))
        items = [value_literal(g, x) for x in v]
        body = items[0]
        for x in items[1:]:
            body = ir.seq(body, comma(g), x)
        return container(g, "[", body, "]", nullable_members=False)
    if isinstance(v, dict):
        if not v:
            return ir.seq(ir.lit("{"), ws(g), ir.lit("}"))
        body = ir.EMPTY
        for i, (k, x) in enumerate(v.items()):
            member = ir.seq(ir.byte_string(canonical_string(k)), colon(g), value_literal(g, x))
            body = member if i == 0 else ir.seq(body, comma(g), member)
        return container(g, "{", body, "}", nullable_members=False)
    raise TypeError(f"not a JSON value: {v!r}")


# strings of an enum from which they are one ir.Dfa (the set's minimal automaton, made in
# linear time) rather than an alternation of literals (whose subset construction starts from
# one branch per value: its first states hold every value's NFA state, so the build grows
# faster than the values). Below it the alternation is as cheap and its tables are those
# every earlier build made.
STRING_SET_DFA_MIN = 64


def string_set(values: Sequence[str]) -> ir.Expr:
    """Exactly the JSON strings of `values` (enum/const), each in its canonical spelling (the
    one value_literal accepts): an alternation of the literals for a few, the minimal DFA of
    their spellings from STRING_SET_DFA_MIN values on (repeats counted). The two accept the same
    bytes: a string's literal is one fixed byte string."""
    spellings = [canonical_string(v) for v in values]
    if len(spellings) < STRING_SET_DFA_MIN:
        return ir.alt(*(ir.byte_string(b) for b in spellings))
    edges, accepting, longest, size = string_set_dfa(spellings)
    return ir.Dfa(edges, accepting, longest, size)


# --- key names outside a set ----------------------------------------------------------------
def _free_key_escape(used: ir.Ranges) -> Tuple[str, ir.Expr]:
    """The escape rule of a set of characters the names use (all it depends on): a node
    whose positions the builder makes directly (escapes of every other character)."""
    tag = hashlib.sha1(repr(used).encode()).hexdigest()[:12]
    return f"json-key-escape-{tag}", ir.KeyEscape(used, STRING_BODY)


def _ranges_of(chars) -> ir.Ranges:
    """The code points of a set of characters as normalized ranges (runs merged)."""
    out = []
    for c in sorted(map(ord, chars)):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return tuple(out)


def free_key_escape(g: ir.GrammarIR, names: Iterable[str]) -> str:
    """The escape rule of the free keys outside `names` (added once per character set): what
    string_not_in and free_member make their tries call."""
    esc_name, esc_expr = _free_key_escape(_ranges_of(set("".join(names))))
    if esc_name not in g.rules:
        g.add(esc_name, esc_expr)
    return esc_name


def string_not_in(g: ir.GrammarIR, names: Sequence[str]) -> ir.Expr:
    """A JSON string (with quotes) whose decoded value is none of `names`.

    A rule of its own, an ir.FreeKey node: the trie of the names over code points, whose
    positions the builder makes directly (cengine._keytrie). At each node a character that
    leaves the trie frees the rest of the string; closing the quote is allowed unless the
    node is a name. While a key is still a prefix of a name, the characters that occur in
    the names are written as themselves (escaped only where JSON requires it): their other
    spellings (`\\u0061` for `a`) are refused there, a documented narrowing. The escapes of
    every other character leave the trie through one rule shared by all the trie's nodes
    (and by every names set that uses the same characters).
    """
    keys = free_keys(g, names)          # (adds the shared body and escape rules)
    if type(keys) is not FreeKeys:
        return keys                     # no names: any string
    # the rule depends on the set of names alone (and the grammar's shared rules): objects
    # that declare the same names in any order (a protocol's messages) share one
    memo = g.memo("string_not_in")
    out = memo.get(keys.names)
    if out is None:
        out = memo[keys.names] = g.add(g.fresh_name("json-free-key"),
                                       ir.FreeKey(tuple(sorted(keys.names)), STRING_BODY,
                                                  keys.escape))
    return out


@dataclass(frozen=True)
class FreeKeys:
    """The keys of an open object's extra members, not yet a rule: string_not_in(g, names)
    (free_keys made them; free_key_rule makes that rule, free_member the extra member's
    rule instead, which alone is called)."""
    names: frozenset
    escape: str         # the escape rule of the names' characters (free_key_escape)


def free_keys(g: ir.GrammarIR, names: Sequence[str]):
    """The keys outside `names` for extra members: string(g) when names is empty, else a
    FreeKeys whose shared rules (string body, escape) are added now, where string_not_in
    adds them, and whose own rule is made only where it is called."""
    if not names:
        return string(g)
    memo = g.memo("free_keys")
    key = frozenset(names)
    out = memo.get(key)
    if out is None:
        string_body(g)
        out = memo[key] = FreeKeys(key, free_key_escape(g, key))
    return out


def free_key_rule(g: ir.GrammarIR, keys: FreeKeys) -> ir.Expr:
    """The rule of keys free_keys made: string_not_in of its names."""
    return string_not_in(g, keys.names)


def is_free_member(g: ir.GrammarIR, e: ir.Expr) -> bool:
    """e is a rule free_member made (an ir.FreeKey with a rest)."""
    if type(e) is not ir.Ref:
        return False
    r = g.rules.get(e.name)
    return r is not None and type(r.expr) is ir.FreeKey and r.expr.rest is not None


def free_member(g: ir.GrammarIR, keys: FreeKeys, rest: str) -> ir.Ref:
    """A rule of the free keys `keys` (free_keys made them) followed by a call of rule
    `rest`: the trie of string_not_in(g, keys.names), whose closed key calls `rest` instead
    of ending the rule. One per (names set, rest) pair; string_not_in's own rule is not made
    for it (an open object's extra member calls this one alone)."""
    memo = g.memo("free_member")
    out = memo.get((keys.names, rest))
    if out is None:
        out = memo[(keys.names, rest)] = g.add(
            g.fresh_name("json-free-member"),
            ir.FreeKey(tuple(sorted(keys.names)), STRING_BODY, keys.escape, rest))
    return out
