"""Numbers with `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum` / `multipleOf`.

A bounded number is written without an exponent (with one, "value <= 5" is not a regular
language), so the set of legal spellings is regular and built as an explicit DFA over the
bytes `-`, `.` and `0`..`9`: the DFA reads the digits left to right and keeps, per bound, how
the digits so far compare with the bound's digits, and (for multipleOf) the remainder of the
digits read so far. It is pruned of dead states, minimized and emitted as one IR Dfa node
(its states become automaton positions one for one), so the closer and the masks work on it
as on any other grammar. The exploration and the one-pass minimization run in C
(cengine._numdfa, through _automaton); _minimize and _as_dfa here minimize the DFAs with
remainder cycles (Moore) and, with the Python exploration of tests/oracles/number_reference.py,
are the reference the C code is tested against (tests/test_schema_numbers_native.py).

Exactness is checked against two readings of a document at once, and a spelling is accepted
only when both say it is valid:
* the specification: the number is the exact decimal it spells, a bound written as a JSON
  float is the exact decimal of its shortest repr (`0.1` is 1/10);
* what JSON parsers (and the `jsonschema` package) see: a spelling without `.` is an exact
  integer, a spelling with `.` becomes the nearest double (ties to even), compared with the
  bound's own double. The set of decimals whose nearest double satisfies a bound is an
  interval with an exactly computable end (the midpoint between two doubles), so this
  reading is also exact.
For `multipleOf` the specification's exact division is used; see docs/json-schema.md for
how Python's `jsonschema` (float division) differs.
"""
from __future__ import annotations

import math
import struct
import sys
import threading
from decimal import Decimal
from fractions import Fraction
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import ir
from .._numdfa import number_automaton as _number_automaton
from ..errors import CompileError, LimitError
from .drafts import pointer as _ptr

NUMERIC_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")

# states of one number DFA after minimization (each becomes a rule): a documented limit
MAX_NUMBER_STATES = 4096
# digits of a multipleOf divisor's numerator p (the remainder automaton has p states)
MAX_MODULUS = 1000

_DBL_MAX = sys.float_info.max
_INF_VALUE = Fraction(2) ** 1024     # where rounding overflows to infinity: the "double" past max

Bound = Tuple[Fraction, bool]        # (value, closed)


# --- bounds -------------------------------------------------------------------------------
def _spec_value(v) -> Fraction:
    """The mathematical value of a bound as written in JSON (floats: their shortest repr)."""
    if isinstance(v, int):
        return Fraction(v)
    return Fraction(Decimal(repr(v)))


def _read_number(schema: dict, key: str, ptr: str):
    v = schema[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            (isinstance(v, float) and not math.isfinite(v)):
        raise CompileError(f"'{key}' must be a finite number", keyword=key, pointer=_ptr(ptr, key))
    return v


def _as_float(d: float) -> Fraction:
    if math.isinf(d):
        return _INF_VALUE if d > 0 else -_INF_VALUE
    return Fraction(d)


def _even(d: float) -> bool:
    """The double's significand is even (ties round to it); infinities count as even."""
    if math.isinf(d):
        return True
    return struct.unpack("<q", struct.pack("<d", d))[0] & 1 == 0


def _double_at_most(b: Fraction, strict: bool) -> float:
    """The largest double <= b (< b when strict), -inf when there is none."""
    if b > Fraction(_DBL_MAX):
        return _DBL_MAX
    if b < -Fraction(_DBL_MAX):
        return -math.inf
    d = float(b)        # correctly rounded
    while _as_float(d) > b or (strict and _as_float(d) == b):
        d = math.nextafter(d, -math.inf)
    return d


def _double_at_least(b: Fraction, strict: bool) -> float:
    d = _double_at_most(-b, strict)
    return -d


def _float_upper(b: Fraction, strict: bool) -> Bound:
    """The decimals x whose nearest double is <= b (< b when strict): x <= or < a midpoint."""
    d = _double_at_most(b, strict)
    up = math.nextafter(d, math.inf)
    return (_as_float(d) + _as_float(up)) / 2, _even(d)


def _float_lower(b: Fraction, strict: bool) -> Bound:
    d = _double_at_least(b, strict)
    down = math.nextafter(d, -math.inf)
    return (_as_float(d) + _as_float(down)) / 2, _even(d)


def _tighter_lower(a: Optional[Bound], b: Optional[Bound]) -> Optional[Bound]:
    if a is None or b is None:
        return a if b is None else b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] and b[1])


def _tighter_upper(a: Optional[Bound], b: Optional[Bound]) -> Optional[Bound]:
    if a is None or b is None:
        return a if b is None else b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] and b[1])


def _digits(x: Fraction) -> Tuple[str, str]:
    """|x| as (integer digits, fraction digits without trailing zeros); x must have a finite
    decimal expansion (decimals and doubles do)."""
    x = abs(x)
    n, d = x.numerator, x.denominator
    # d = 2**a * 5**b with a, b < d.bit_length(): m places make x an integer (one big
    # multiplication; digit by digit in Fractions, a 750-digit bound cost ~8 ms)
    m = d.bit_length()
    scaled, rest = divmod(n * 10 ** m, d)
    assert rest == 0, "not a finite decimal"
    ip, frac = divmod(scaled, 10 ** m)
    return str(ip), str(frac).zfill(m).rstrip("0")


# --- the DFA --------------------------------------------------------------------------------
class _Cmp:
    """One bound as the exploration reads it digit by digit (cengine._numdfa, through
    _comparator_spec): its value's digits, closed or not, upper or lower."""

    def __init__(self, value: Fraction, closed: bool, upper: bool):
        self.value, self.closed, self.upper = value, closed, upper
        self.neg = value < 0
        self.int_digits, self.frac_digits = _digits(value)


_SYMBOLS = "-.0123456789"   # the DFAs' alphabet, in the order their states are numbered


class _NumberDfa:
    """Spellings -?(0|[1-9][0-9]*)(.[0-9]+)? (integers: no fraction) whose value
    passes the bounds (one set for spellings without '.', one for spellings with '.') and
    whose digits, shifted K places, are a multiple of p."""

    def __init__(self, integer: bool, int_bounds: List[_Cmp], frac_bounds: List[_Cmp],
                 modulus: int, shift: Optional[int]):
        self.integer = integer
        self.ib, self.fb = int_bounds, frac_bounds
        self.p, self.k = modulus, shift        # shift None: no multipleOf


_DEAD, _SELF = -1, -2


def _blocks_acyclic(trans: List[Dict[str, int]], accepting: List[bool], live: set):
    """Equivalence classes {state: class} of the live states, or None when the live part has
    a cycle other than a self-loop. Without such cycles the classes come in one pass over
    the states in reverse topological order (Revuz): a state's successors are classed before
    it, so its class is found from its signature (accepting, class per symbol). A self-loop
    is written _SELF; a state q whose symbol a leads to a state of class X and whose other
    self-loops match X's is in X when X's signature, with its own class as _SELF, equals q's
    with X replaced by _SELF. (Moore's rounds on a bound with a 750-digit fraction, as the
    double reading of `exclusiveMinimum: 0` has, need hundreds of rounds; this is linear.)"""
    # postorder of a depth-first search from the start, ignoring self-loops
    order: List[int] = []
    colour: Dict[int, int] = {0: 1}            # 1 on the stack, 2 done
    stack = [(0, iter(trans[0].values()))]
    while stack:
        q, it = stack[-1]
        for t in it:
            if t == q or t not in live:
                continue
            c = colour.get(t)
            if c is None:
                colour[t] = 1
                stack.append((t, iter(trans[t].values())))
                break
            if c == 1:
                return None                     # a cycle through other states
        else:
            stack.pop()
            colour[q] = 2
            order.append(q)
    block: Dict[int, int] = {}
    by_signature: Dict[tuple, int] = {}
    looping = set()         # classes with a self-loop: the only ones a substitution can find
    for q in order:
        out = trans[q]
        row = []
        for ch in _SYMBOLS:
            t = out.get(ch)
            row.append(_DEAD if t is None or t not in live else _SELF if t == q else block[t])
        sig = (accepting[q], tuple(row))
        b = by_signature.get(sig)
        if b is None:
            for x in looping.intersection(row):
                cand = (accepting[q], tuple(_SELF if y == x else y for y in row))
                if by_signature.get(cand) == x:
                    b = x
                    break
        if b is None:
            b = by_signature[sig] = len(by_signature)
            if _SELF in row:
                looping.add(b)
        block[q] = b
    return block


def _blocks_moore(trans: List[Dict[str, int]], accepting: List[bool], states: List[int]):
    """Equivalence classes {state: class} of the live states by Moore's refinement."""
    n = len(trans)
    # Moore's refinement, vectorised: each round splits blocks by (block, block of every
    # symbol's target); rounds stop when no block splits
    dense = np.full(n, -1, np.int64)
    dense[states] = np.arange(len(states))
    targets = np.full((len(states), len(_SYMBOLS)), -1, np.int64)
    for i, q in enumerate(states):
        for j, ch in enumerate(_SYMBOLS):
            t = trans[q].get(ch)
            if t is not None:
                targets[i, j] = dense[t]       # -1 when the target is dead
    ids = np.asarray([int(accepting[q]) for q in states], np.int64)
    n_blocks = len(set(ids.tolist()))
    while True:
        succ = np.where(targets >= 0, ids[np.maximum(targets, 0)], -1)
        rows = np.concatenate([ids[:, None], succ], axis=1)
        # block ids of the distinct rows: one lexsort and a scan for changes (np.unique with
        # axis=0 sorts row objects and was ~90% of a first compile of `exclusiveMinimum: 0`,
        # whose DFA needs hundreds of rounds)
        order = np.lexsort(rows.T[::-1])
        srt = rows[order]
        starts = np.empty(len(states), bool)
        starts[0] = True
        starts[1:] = np.any(srt[1:] != srt[:-1], axis=1)
        new_ids = np.empty(len(states), np.int64)
        new_ids[order] = np.cumsum(starts) - 1
        n_new = int(new_ids.max()) + 1
        ids = new_ids
        if n_new == n_blocks:
            break
        n_blocks = n_new
    return dict(zip(states, ids.tolist()))


def _minimize(trans: List[Dict[str, int]], accepting: List[bool]):
    """Drop states that cannot reach acceptance, then merge equivalent states. Returns
    (transitions, accepting) over new ids with the start state 0, or None when nothing is
    accepted."""
    n = len(trans)
    rev: List[List[int]] = [[] for _ in range(n)]
    for q, out in enumerate(trans):
        for t in out.values():
            rev[t].append(q)
    live = set(q for q in range(n) if accepting[q])
    stack = list(live)
    while stack:
        t = stack.pop()
        for q in rev[t]:
            if q not in live:
                live.add(q)
                stack.append(q)
    if 0 not in live:
        return None
    states = sorted(live)
    block = _blocks_acyclic(trans, accepting, live)
    if block is None:
        block = _blocks_moore(trans, accepting, states)
    return _renumbered(trans, accepting, live, states, block)


def _renumbered(trans, accepting, live, states, block):
    """The quotient automaton, numbered breadth-first from the start (symbols in _SYMBOLS
    order), so equal languages give equal results whichever way the classes were found."""
    # renumber so that the start is 0, in breadth-first order from it
    ids = {block[0]: 0}
    order = [0]
    rep = {}
    for q in states:
        rep.setdefault(block[q], q)
    k = 0
    out_trans, out_acc = [], []
    while k < len(order):
        q = order[k]
        row = {}
        for ch in _SYMBOLS:
            t = trans[q].get(ch)
            if t is None or t not in live:
                continue
            b = block[t]
            if b not in ids:
                ids[b] = len(order)
                order.append(rep[b])
            row[ch] = ids[b]
        out_trans.append(row)
        out_acc.append(accepting[q])
        k += 1
    return out_trans, out_acc


def _as_dfa(trans, accepting) -> ir.Dfa:
    """The minimal automaton as an IR Dfa node: the builder makes its states positions one
    for one. (Emitted as one right-linear rule per state, a 1,081-state DFA cost ~100 ms of
    rule inlining and automaton building per compile, and 5x the positions.)"""
    edges = []
    for row in trans:
        ranges = []
        for ch, t in sorted(row.items(), key=lambda x: ord(x[0])):
            b = ord(ch)
            if ranges and ranges[-1][2] == t and ranges[-1][1] == b - 1:
                ranges[-1] = (ranges[-1][0], b, t)
            else:
                ranges.append((b, b, t))
        edges.append(tuple(ranges))
    return ir.Dfa(tuple(edges), tuple(bool(a) for a in accepting))


def tighter_bound(a, b, *, lower: bool):
    """Of two bounds of the same keyword, the one that implies the other under both readings
    (specification and doubles); None when the readings disagree."""
    sa, sb, ea, eb = _spec_value(a), _spec_value(b), Fraction(a), Fraction(b)
    if lower:
        sa, sb, ea, eb = -sa, -sb, -ea, -eb
    if sa <= sb and ea <= eb:
        return a
    if sb <= sa and eb <= ea:
        return b
    return None


def _comparator_spec(b: _Cmp) -> tuple:
    """A comparator as cengine._numdfa reads it."""
    return (b.int_digits.encode(), b.frac_digits.encode(), b.closed, b.upper, b.neg,
            b.value > 0)


def _automaton(dfa: _NumberDfa, keyword: str, pointer: str, *, raw: bool = False):
    """The minimal automaton of dfa as an ir.Dfa (None: nothing is accepted), built by
    cengine._numdfa: the same exploration, minimization and numbering as the reference
    (tests/oracles/number_reference.explore, _minimize and _as_dfa), in C. A live part with
    remainder cycles comes back explored and is minimized here (Moore). raw=True: the
    explored automaton, as the reference's explore returns it."""
    kind, a, b = _number_automaton(dfa.integer, [_comparator_spec(c) for c in dfa.ib],
                                   [_comparator_spec(c) for c in dfa.fb], dfa.p,
                                   -1 if dfa.k is None else dfa.k, MAX_NUMBER_STATES * 8, raw)
    if kind == 1:
        raise LimitError(f"the number constraints need more than {MAX_NUMBER_STATES} "
                         f"automaton states", keyword=keyword, pointer=pointer)
    if raw:
        return a, b
    if kind == 0:
        return None
    if kind == 2:
        return _minimal_dfa(a, b)
    return ir.Dfa(a, b)


def _minimal_dfa(trans, accepting) -> Optional[ir.Dfa]:
    """An explored automaton (([{symbol: target}], [bool]), state 0 the start) minimized, as
    an ir.Dfa (None: empty)."""
    small = _minimize(trans, accepting)
    return None if small is None else _as_dfa(*small)


# --- entry -------------------------------------------------------------------------------
def has_numeric_keywords(schema: dict) -> bool:
    return any(k in schema for k in NUMERIC_KEYWORDS)


def _divisor(schema: dict, ptr: str, integer: bool) -> Tuple[int, Optional[int]]:
    """(p, K): x is a multiple iff x * 10**K is an integer divisible by p."""
    if "multipleOf" not in schema:
        return 1, None
    where = _ptr(ptr, "multipleOf")
    v = _read_number(schema, "multipleOf", ptr)
    if v <= 0:
        raise CompileError("'multipleOf' must be greater than 0", keyword="multipleOf",
                           pointer=where)
    r = _spec_value(v)
    if integer:
        # n = t * p/q with gcd(p, q) = 1 exactly when p divides n
        p, k = r.numerator, 0
    else:
        k = 0
        while (r * 10 ** k).denominator != 1:
            k += 1
        p = int(r * 10 ** k)
    if p > MAX_MODULUS:
        raise LimitError(f"'multipleOf' {v} needs a remainder automaton of {p} states, more than "
                         f"the limit of {MAX_MODULUS}", keyword="multipleOf", pointer=where)
    if integer and p == 1:
        return 1, None          # every integer qualifies
    return p, k


# Minimal automata by constraint key, across grammars: the same bounds recur in many schemas
# (`minimum: 0`, `maximum: 100`), and exploring them costs milliseconds. Immutable values.
_AUTOMATA: Dict[tuple, object] = {}
_AUTOMATA_MAX = 1024
_AUTOMATA_LOCK = threading.Lock()


def number_expr(g: ir.GrammarIR, schema: dict, ptr: str, *, integer: bool, name: str,
                cache: Optional[dict] = None) -> ir.Expr:
    """The spellings of a number (integer=True: an integer) satisfying the numeric keywords
    of schema. Called only when at least one is present."""
    spec_lo: Optional[Bound] = None
    spec_hi: Optional[Bound] = None
    js_int_lo: Optional[Bound] = None       # what an integer spelling is compared with
    js_int_hi: Optional[Bound] = None
    js_frac_lo: Optional[Bound] = None      # ... and a spelling with '.' (its nearest double)
    js_frac_hi: Optional[Bound] = None
    for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        if key not in schema:
            continue
        v = _read_number(schema, key, ptr)
        strict = key.startswith("exclusive")
        exact = Fraction(v)
        if key.endswith("inimum"):
            spec_lo = _tighter_lower(spec_lo, (_spec_value(v), not strict))
            js_int_lo = _tighter_lower(js_int_lo, (exact, not strict))
            js_frac_lo = _tighter_lower(js_frac_lo, _float_lower(exact, strict))
        else:
            spec_hi = _tighter_upper(spec_hi, (_spec_value(v), not strict))
            js_int_hi = _tighter_upper(js_int_hi, (exact, not strict))
            js_frac_hi = _tighter_upper(js_frac_hi, _float_upper(exact, strict))
    p, k = _divisor(schema, ptr, integer)
    int_lo, int_hi = _tighter_lower(spec_lo, js_int_lo), _tighter_upper(spec_hi, js_int_hi)
    frac_lo, frac_hi = _tighter_lower(spec_lo, js_frac_lo), _tighter_upper(spec_hi, js_frac_hi)
    if integer:
        frac_lo = frac_hi = None        # integers are written without a fraction
    key = (integer, int_lo, int_hi, frac_lo, frac_hi, p, k)
    if cache is not None and key in cache:
        return cache[key]

    def cmps(lo, hi):
        out = []
        if lo is not None:
            out.append(_Cmp(lo[0], lo[1], upper=False))
        if hi is not None:
            out.append(_Cmp(hi[0], hi[1], upper=True))
        return out

    kw = next((x for x in NUMERIC_KEYWORDS if x in schema), "minimum")
    small = _AUTOMATA.get(key, False)
    if small is False:
        frac_cmps = cmps(frac_lo, frac_hi) if k != 0 else []    # k == 0: no '.' spellings
        small = _automaton(_NumberDfa(integer, cmps(int_lo, int_hi), frac_cmps, p, k), kw,
                           _ptr(ptr, kw))
        with _AUTOMATA_LOCK:
            if len(_AUTOMATA) >= _AUTOMATA_MAX:
                _AUTOMATA.pop(next(iter(_AUTOMATA)))      # oldest first out
            _AUTOMATA[key] = small
    if small is None:
        expr: ir.Expr = ir.NOTHING
    else:
        if len(small.accepting) > MAX_NUMBER_STATES:
            raise LimitError(f"the number constraints need {len(small.accepting)} automaton "
                             f"states, more than the limit of {MAX_NUMBER_STATES}", keyword=kw,
                             pointer=_ptr(ptr, kw))
        expr = g.add(g.fresh_name(name), small)
    if cache is not None:
        cache[key] = expr
    return expr
