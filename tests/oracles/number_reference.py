"""The bounded-number exploration in Python (a test oracle), as cengine.schema.numbers made
it before cengine._numdfa explored in C: one comparator per bound read digit by digit, the
number DFA's states stepped one symbol at a time (step) or all symbols at once (successors),
and explore(), the breadth-first search, whose (transitions, accepting) lists the C explorer
must give state for state (tests/test_schema_numbers_native.py) and numbers' minimizers take
(tests/test_schema_numbers_construction.py). Built from the numbers._NumberDfa (and its
numbers._Cmp bounds) that number_expr hands numbers._automaton."""
from __future__ import annotations

from typing import Dict, List

from cengine.errors import LimitError
from cengine.schema import numbers as N

_SYMBOLS = N._SYMBOLS
_DIGITS = "0123456789"


class Comparator:
    """One bound, read digit by digit: how |x| compares with |B| so far."""

    def __init__(self, bound: N._Cmp):
        self.value, self.closed, self.upper = bound.value, bound.closed, bound.upper
        self.neg = bound.neg
        self.int_digits, self.frac_digits = bound.int_digits, bound.frac_digits
        self._int_rows: Dict[tuple, tuple] = {}
        self._frac_rows: Dict[tuple, tuple] = {}

    # comparator states: ("i", n, c) in the integer part (n digits read, capped at len+1;
    # c the comparison of those digits with the bound's first n), ("f", c, i) in the fraction
    start = ("i", 0, 0)

    def int_digit(self, s, d: str):
        _, n, c = s
        L = len(self.int_digits)
        if n >= L:
            return ("i", L + 1, 0)
        if c == 0:
            c = (d > self.int_digits[n]) - (d < self.int_digits[n])
        return ("i", n + 1, c)

    def _int_cmp(self, s) -> int:
        _, n, c = s
        L = len(self.int_digits)
        return -1 if n < L else 1 if n > L else c

    def dot(self, s):
        return ("f", self._int_cmp(s), 0)

    def frac_digit(self, s, d: str):
        _, c, i = s
        if c != 0:
            return s
        if i < len(self.frac_digits):
            c = (d > self.frac_digits[i]) - (d < self.frac_digits[i])
            return ("f", c, i + 1 if c == 0 else 0)
        return ("f", 1, 0) if d != "0" else s

    def int_row(self, s) -> tuple:
        """int_digit(s, d) for the ten digits, memoized per state."""
        row = self._int_rows.get(s)
        if row is None:
            row = self._int_rows[s] = tuple(self.int_digit(s, d) for d in _DIGITS)
        return row

    def frac_row(self, s) -> tuple:
        row = self._frac_rows.get(s)
        if row is None:
            row = self._frac_rows[s] = tuple(self.frac_digit(s, d) for d in _DIGITS)
        return row

    def holds(self, s, negative: bool) -> bool:
        if s[0] == "i":
            mag = self._int_cmp(s)
            if mag == 0 and self.frac_digits:
                mag = -1
        else:
            _, c, i = s
            mag = c if c != 0 else (-1 if i < len(self.frac_digits) else 0)
        if not negative:
            cmp = 1 if self.neg else mag
        else:
            cmp = -1 if (self.value > 0) else -mag
        if self.upper:
            return cmp < 0 or (cmp == 0 and self.closed)
        return cmp > 0 or (cmp == 0 and self.closed)


class NumberDfa:
    """Spellings -?(0|[1-9][0-9]*)(.[0-9]+)? (integers: no fraction) whose value
    passes the bounds (one set for spellings without '.', one for spellings with '.') and
    whose digits, shifted K places, are a multiple of p."""

    def __init__(self, dfa: N._NumberDfa):
        self.integer = dfa.integer
        self.ib = [Comparator(b) for b in dfa.ib]
        self.fb = [Comparator(b) for b in dfa.fb]
        self.p, self.k = dfa.p, dfa.k        # k None: no multipleOf

    def start(self):
        return ("S", False, tuple(b.start for b in self.ib), tuple(b.start for b in self.fb), 0, 0)

    def step(self, st, ch: str):
        phase, neg, ic, fc, r, fd = st
        if ch == "-":
            return ("-", True, ic, fc, r, fd) if phase == "S" else None
        if ch == ".":
            if phase not in ("Z", "I") or self.k == 0 or self.integer:
                # integers, and numbers under an integral divisor: integer spellings only
                return None
            return (".", neg, (), tuple(b.dot(s) for b, s in zip(self.fb, fc)), r, 0)
        # a digit
        if phase in ("S", "-"):
            nxt = "Z" if ch == "0" else "I"
        elif phase == "I":
            nxt = "I"
        elif phase in (".", "F"):
            nxt = "F"
        else:
            return None                         # no digit after a leading 0
        d = int(ch)
        if nxt in ("Z", "I"):
            ic = tuple(b.int_digit(s, ch) for b, s in zip(self.ib, ic))
            fc = tuple(b.int_digit(s, ch) for b, s in zip(self.fb, fc))
            if self.k is not None:
                r = (r * 10 + d) % self.p
            return (nxt, neg, ic, fc, r, fd)
        if self.integer and ch != "0":
            return None
        fc = tuple(b.frac_digit(s, ch) for b, s in zip(self.fb, fc))
        if self.k is not None:
            if fd < self.k:
                r, fd = (r * 10 + d) % self.p, fd + 1
            elif ch != "0":
                return None
        return ("F", neg, ic, fc, r, fd)

    def successors(self, st) -> Dict[str, tuple]:
        """{symbol: step(st, symbol)} without the None steps, in _SYMBOLS order; the same
        results as step, with each comparator's digit transitions computed once per state
        and shared by the ten digits (step per symbol was most of a cold compile)."""
        phase, neg, ic, fc, r, fd = st
        out: Dict[str, tuple] = {}
        if phase == "S":
            out["-"] = ("-", True, ic, fc, r, fd)
        if phase in ("Z", "I") and not (self.k == 0 or self.integer):
            out["."] = (".", neg, (), tuple(b.dot(s) for b, s in zip(self.fb, fc)), r, 0)
        if phase in ("S", "-", "I"):
            icols = list(zip(*[b.int_row(s) for b, s in zip(self.ib, ic)])) or [()] * 10
            fcols = list(zip(*[b.int_row(s) for b, s in zip(self.fb, fc)])) or [()] * 10
            for d, ch in enumerate(_DIGITS):
                nxt = "I" if phase == "I" or d else "Z"
                r2 = (r * 10 + d) % self.p if self.k is not None else r
                out[ch] = (nxt, neg, icols[d], fcols[d], r2, fd)
        elif phase in (".", "F"):
            fcols = list(zip(*[b.frac_row(s) for b, s in zip(self.fb, fc)])) or [()] * 10
            for d, ch in enumerate(_DIGITS):
                if self.integer and d:
                    continue
                r2, fd2 = r, fd
                if self.k is not None:
                    if fd < self.k:
                        r2, fd2 = (r * 10 + d) % self.p, fd + 1
                    elif d:
                        continue
                out[ch] = ("F", neg, ic, fcols[d], r2, fd2)
        return out

    def accepting(self, st) -> bool:
        phase, neg, ic, fc, r, fd = st
        if phase in ("Z", "I"):
            bounds, states = self.ib, ic
        elif phase == "F":
            bounds, states = self.fb, fc
        else:
            return False
        if not all(b.holds(s, neg) for b, s in zip(bounds, states)):
            return False
        if self.k is not None:
            pad = self.k - (fd if phase == "F" else 0)
            return (r * pow(10, pad, self.p)) % self.p == 0
        return True


def explore(dfa: N._NumberDfa, keyword: str, pointer: str):
    """States, transitions {state: {symbol: target}} and accepting set, by breadth-first
    search, of the states the C explorer makes (numbers._automaton with raw=True); raises
    LimitError past MAX_NUMBER_STATES * 8 raw states."""
    dfa = NumberDfa(dfa)
    start = dfa.start()
    index = {start: 0}
    order = [start]
    trans: List[Dict[str, int]] = []
    i = 0
    while i < len(order):
        st = order[i]
        out = {}
        for ch, t in dfa.successors(st).items():
            j = index.get(t)
            if j is None:
                j = index[t] = len(order)
                order.append(t)
                if len(order) > N.MAX_NUMBER_STATES * 8:
                    raise LimitError(f"the number constraints need more than "
                                     f"{N.MAX_NUMBER_STATES} automaton states", keyword=keyword,
                                     pointer=pointer)
            out[ch] = j
        trans.append(out)
        i += 1
    accepting = [dfa.accepting(st) for st in order]
    return trans, accepting
