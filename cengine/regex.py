"""Regex front end: ECMA-262 patterns (the dialect JSON Schema's `pattern` uses) -> grammar IR.

A hand-written recursive-descent parser turns the pattern straight into `cengine.ir`
expressions over code points (literals become UTF-8 `Bytes`, classes become `CharSet`).
Only the regular part of the language is accepted; everything that needs lookaround,
backreferences or flags is refused with a CompileError that names the construct and its
column (1-based, counted in code points), never silently weakened. See docs/regex.md.

Semantics are those of a pattern with the `u` flag: the pattern and the text are sequences
of code points (so `.` matches one emoji, `\\u{1F600}` is allowed). Lenient Annex B forms that
Python's `re` also reads the same way are kept: a `{`, `}` or `]` that does not start a
quantifier or class is a literal, and `-` next to a class escape in `[...]` is a literal.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

from . import ir
from .automaton import MAX_NFA_STATES
from .errors import CompileError, LimitError
from .utf8 import sequences

# Same cap as GBNF repetition: {m,n} is unrolled into copies of the item.
MAX_REPEAT = 4096
# groups nest at most this deep: parsing and the automaton builder recurse per level
MAX_GROUP_DEPTH = 100

_LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
# ECMA-262 WhiteSpace (incl. every Zs code point) plus LineTerminator
_SPACE = ir.normalize_ranges((
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)))
_DIGIT = ((0x30, 0x39),)
_WORD = ir.normalize_ranges(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))
_ANY = ((0, ir.MAX_UNICODE),)

_CLASS_ESCAPES = {
    "d": _DIGIT, "D": ir.negate_ranges(_DIGIT),
    "w": _WORD, "W": ir.negate_ranges(_WORD),
    "s": _SPACE, "S": ir.negate_ranges(_SPACE),
}
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_SYNTAX = set("^$\\.*+?()[]{}|/-")
_HEX = set("0123456789abcdefABCDEF")

DOT = ir.charset(_LINE_TERMINATORS, negated=True)
ANY_STRING = ir.repeat(ir.CharSet(_ANY), 0, None)


def _is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


class _Parser:
    def __init__(self, pattern: str, markers: bool = False):
        self.p = pattern
        self.n = len(pattern)
        self.i = 0
        self.depth = 0
        # markers: every '^' / '$' is read as the symbol START / END (search_parts), and a
        # lookahead may follow the leading '^' of a top-level alternative
        self.markers = markers
        self.n_markers = 0
        self.looks: List[List[Tuple[bool, ir.Expr]]] = []

    # --- helpers -------------------------------------------------------------------
    def error(self, message: str, at: Optional[int] = None, limit: bool = False) -> CompileError:
        col = (self.i if at is None else at) + 1
        cls = LimitError if limit else CompileError
        return cls(f"{message} at column {col} of the regex", column=col)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < self.n else ""

    # --- structure -------------------------------------------------------------------
    def parse_top(self) -> List[Tuple[ir.Expr, bool, bool]]:
        """Top-level alternatives as (expr, starts with ^, ends with $)."""
        out = [self.alternative(top=True)]
        while self.peek() == "|":
            self.i += 1
            out.append(self.alternative(top=True))
        if self.i < self.n:     # only a ')' stops an alternative at the top
            raise self.error("unmatched ')'")
        return out

    def disjunction(self) -> ir.Expr:
        items = [self.alternative(top=False)[0]]
        while self.peek() == "|":
            self.i += 1
            items.append(self.alternative(top=False)[0])
        return ir.alt(*items) if len(items) > 1 else items[0]

    def alternative(self, top: bool) -> Tuple[ir.Expr, bool, bool]:
        if self.markers:
            return self.marked_alternative(top)
        items: List[ir.Expr] = []
        start_anchor = end_anchor = False
        while self.i < self.n and self.p[self.i] not in "|)":
            c = self.p[self.i]
            if c == "^":
                if not (top and not items and not end_anchor):
                    raise self.error("anchor '^' is only supported at the start of the pattern "
                                     "or of a top-level alternative")
                start_anchor = True
                self.i += 1
                self.refuse_quantifier("anchor '^'")
                continue
            if c == "$":
                at = self.i
                self.i += 1
                self.refuse_quantifier("anchor '$'")
                if not top or self.peek() not in ("", "|", "$"):
                    raise self.error("anchor '$' is only supported at the end of the pattern "
                                     "or of a top-level alternative", at)
                end_anchor = True
                continue
            at = self.i
            atom = self.atom()
            items.append(self.quantified(atom, at))
        # stopped at '|', ')' or the end: the caller decides whether that is legal
        return ir.seq(*items) if items else ir.EMPTY, start_anchor, end_anchor

    def marked_alternative(self, top: bool) -> Tuple[ir.Expr, bool, bool]:
        """alternative() in marker mode: (expr, False, False) with '^' / '$' read as the
        symbols START / END; at the top, the lookaheads after its leading '^'s are kept in
        self.looks (and the alternative's items after them are its body)."""
        items: List[ir.Expr] = []
        looks: List[Tuple[bool, ir.Expr]] = []
        while self.i < self.n and self.p[self.i] not in "|)":
            c = self.p[self.i]
            at = self.i
            if c in "^$":
                self.i += 1
                self.refuse_quantifier(f"anchor '{c}'")
                items.append(START if c == "^" else END)
                self.n_markers += 1
                continue
            if c == "(" and self.p[self.i + 1:self.i + 3] in ("?=", "?!"):
                neg = self.p[self.i + 2] == "!"
                what = "negative lookahead '(?!'" if neg else "lookahead '(?='"
                if not (top and items and all(x is START for x in items)):
                    raise self.error(f"{what} is only supported right after the leading '^' "
                                     "of the pattern or of a top-level alternative", at)
                self.i += 3
                self.depth += 1
                body = self.disjunction()
                self.depth -= 1
                if self.peek() != ")":
                    raise self.error("missing ')' for the group opened", at)
                self.i += 1
                self.refuse_quantifier(what)
                looks.append((neg, body))
                continue
            atom = self.atom()
            items.append(self.quantified(atom, at))
        if top:
            self.looks.append(looks)
        return ir.seq(*items) if items else ir.EMPTY, False, False

    def refuse_quantifier(self, what: str) -> None:
        save = self.i
        if self.quantifier() is not None:
            raise self.error(f"{what} cannot be repeated", save)
        self.i = save

    # --- quantifiers -----------------------------------------------------------------
    def braces(self) -> Optional[Tuple[int, Optional[int]]]:
        """Parse {m}, {m,}, {m,n} at self.i; None (self.i unchanged) if it is not one."""
        p, j = self.p, self.i + 1
        start = j
        while j < self.n and p[j].isdigit() and p[j].isascii():
            j += 1
        if j == start:
            if j < self.n and p[j] == ",":
                k = j + 1
                while k < self.n and p[k].isascii() and p[k].isdigit():
                    k += 1
                if k > j + 1 and k < self.n and p[k] == "}":
                    raise self.error("'{,n}' is not an ECMA-262 quantifier (ECMA reads it as "
                                     "literal text, Python as {0,n}); write {0,n} or \\{")
            return None
        lo = int(p[start:j])
        hi: Optional[int] = lo
        if j < self.n and p[j] == ",":
            j += 1
            s2 = j
            while j < self.n and p[j].isdigit() and p[j].isascii():
                j += 1
            hi = int(p[s2:j]) if j > s2 else None
        if j >= self.n or p[j] != "}":
            return None
        at = self.i
        self.i = j + 1
        for v in (lo, hi):
            if v is not None and v > MAX_REPEAT:
                raise self.error(f"repetition bound {v} exceeds the limit of {MAX_REPEAT}",
                                 at, limit=True)
        if hi is not None and hi < lo:
            raise self.error(f"numbers out of order in {{{lo},{hi}}} quantifier", at)
        return lo, hi

    def quantifier(self) -> Optional[Tuple[int, Optional[int]]]:
        c = self.peek()
        if c == "*":
            self.i += 1
            q = (0, None)
        elif c == "+":
            self.i += 1
            q = (1, None)
        elif c == "?":
            self.i += 1
            q = (0, 1)
        elif c == "{":
            q = self.braces()
            if q is None:
                return None
        else:
            return None
        if self.peek() == "?":      # lazy: same language
            self.i += 1
        return q

    def quantified(self, atom: ir.Expr, at: int) -> ir.Expr:
        q = self.quantifier()
        if q is None:
            return atom
        save = self.i
        if self.quantifier() is not None:
            raise self.error("nothing to repeat (a quantifier follows a quantifier)", save)
        self.i = save
        return ir.repeat(atom, q[0], q[1])

    # --- atoms -----------------------------------------------------------------------
    def atom(self) -> ir.Expr:
        c = self.p[self.i]
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return DOT
        if c == "\\":
            at = self.i
            kind, val = self.escape(in_class=False)
            return ir.CharSet(val) if kind == "set" else self.literal(val, at)
        if c in "*+?":
            raise self.error(f"nothing to repeat before '{c}'")
        if c == "{":
            save = self.i
            if self.braces() is not None:
                raise self.error("nothing to repeat before '{'", save)
            self.i = save + 1
            return ir.lit("{")
        self.i += 1
        return self.literal(ord(c), self.i - 1)

    def literal(self, cp: int, at: int) -> ir.Expr:
        if _is_surrogate(cp):
            raise self.error(f"lone surrogate U+{cp:04X} can never appear in UTF-8 output", at)
        return ir.lit(chr(cp))

    def group(self) -> ir.Expr:
        at = self.i
        self.i += 1
        if self.peek() == "?":
            two = self.p[self.i:self.i + 3]
            if two.startswith("?:"):
                self.i += 2
            elif two.startswith("?="):
                raise self.error("lookahead '(?=' is not supported", at)
            elif two.startswith("?!"):
                raise self.error("negative lookahead '(?!' is not supported", at)
            elif two == "?<=":
                raise self.error("lookbehind '(?<=' is not supported", at)
            elif two == "?<!":
                raise self.error("negative lookbehind '(?<!' is not supported", at)
            elif two.startswith("?<"):
                end = self.p.find(">", self.i + 2)
                name = self.p[self.i + 2:end] if end >= 0 else ""
                if end < 0 or not name.replace("$", "_").isidentifier():
                    raise self.error("invalid group name in '(?<name>...)'", at)
                self.i = end + 1
            elif two.startswith("?P"):
                raise self.error("Python-style group '(?P' is not ECMA-262 syntax "
                                 "(write '(?<name>...)')", at)
            elif len(two) > 1 and (two[1].isalpha() or two[1] == "-"):
                raise self.error(f"inline flags '(?{two[1]}' are not supported", at)
            else:
                raise self.error("invalid group '(?'", at)
        if self.depth >= MAX_GROUP_DEPTH:
            raise self.error(f"groups nest more than {MAX_GROUP_DEPTH} deep", at, limit=True)
        self.depth += 1
        expr = self.disjunction()
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("missing ')' for the group opened", at)
        self.i += 1
        return expr

    def hex_digits(self, count: int, what: str, at: int) -> int:
        s = self.p[self.i:self.i + count]
        if len(s) != count or not set(s) <= _HEX:
            raise self.error(f"escape '\\{what}' needs {count} hex digits", at)
        self.i += count
        return int(s, 16)

    def escape(self, in_class: bool):
        """Parse a backslash escape at self.i. Returns ("cp", code point) or ("set", ranges)."""
        at = self.i
        self.i += 1
        if self.i >= self.n:
            raise self.error("pattern ends with a lone backslash", at)
        c = self.p[self.i]
        self.i += 1
        if c in _CLASS_ESCAPES:
            return "set", _CLASS_ESCAPES[c]
        if c in _CONTROL_ESCAPES:
            return "cp", _CONTROL_ESCAPES[c]
        if c == "b":
            if in_class:
                return "cp", 0x08
            raise self.error("word boundary '\\b' is not supported", at)
        if c == "B":
            raise self.error("non-word boundary '\\B' is not supported", at)
        if c == "0":
            if self.peek().isdigit():
                raise self.error("legacy octal escape '\\0" + self.peek() + "' is not supported",
                                 at)
            return "cp", 0
        if c in "123456789":
            raise self.error(f"backreference '\\{c}' is not supported", at)
        if c == "k":
            raise self.error("named backreference '\\k' is not supported", at)
        if c in "pP":
            raise self.error(f"unicode property escape '\\{c}{{...}}' is not supported", at)
        if c == "c":
            x = self.peek()
            if x.isascii() and x.isalpha():
                self.i += 1
                return "cp", ord(x) % 32
            raise self.error("control escape '\\c' must be followed by a letter A-Z or a-z", at)
        if c == "x":
            return "cp", self.hex_digits(2, "x", at)
        if c == "u":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1:end] if end >= 0 else ""
                if not digits or not set(digits) <= _HEX or int(digits, 16) > ir.MAX_UNICODE:
                    raise self.error("escape '\\u{...}' needs 1 or more hex digits up to 10FFFF",
                                     at)
                self.i = end + 1
                return "cp", int(digits, 16)
            cp = self.hex_digits(4, "u", at)
            # a UTF-16 surrogate pair written as two escapes is one code point
            if 0xD800 <= cp <= 0xDBFF and self.p[self.i:self.i + 2] == "\\u":
                tail = self.p[self.i + 2:self.i + 6]
                if len(tail) == 4 and set(tail) <= _HEX and 0xDC00 <= int(tail, 16) <= 0xDFFF:
                    self.i += 6
                    return "cp", 0x10000 + ((cp - 0xD800) << 10) + (int(tail, 16) - 0xDC00)
            return "cp", cp
        if c in _SYNTAX or not (c.isascii() and c.isalnum()):
            return "cp", ord(c)     # identity escape
        raise self.error(f"escape '\\{c}' is not ECMA-262 syntax", at)

    def char_class(self) -> ir.Expr:
        at = self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: List[Tuple[int, int]] = []
        while True:
            if self.i >= self.n:
                raise self.error("missing ']' for the character class opened", at)
            if self.p[self.i] == "]":
                self.i += 1
                break
            a_at = self.i
            a = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("", "]"):
                self.i += 1
                b = self.class_atom()
                if a[0] == "cp" and b[0] == "cp":
                    if a[1] > b[1]:
                        raise self.error("range out of order in character class", a_at)
                    ranges.append((a[1], b[1]))
                    continue
                # Annex B: a '-' beside a class escape such as \w is a literal dash
                ranges.append((0x2D, 0x2D))
                for kind, val in (a, b):
                    ranges.extend(val if kind == "set" else ((val, val),))
                continue
            ranges.extend(a[1] if a[0] == "set" else ((a[1], a[1]),))
        # ECMA: [] matches nothing and [^] matches any code point
        return ir.charset(ranges, negated=negated)

    def class_atom(self):
        c = self.p[self.i]
        if c == "\\":
            return self.escape(in_class=True)
        self.i += 1
        return "cp", ord(c)


# the symbols '^' and '$' are read as in marker mode (search_parts): past every code point
START_SYMBOL = ir.MAX_UNICODE + 1
END_SYMBOL = ir.MAX_UNICODE + 2
START = ir.CharSet(((START_SYMBOL, START_SYMBOL),))
END = ir.CharSet(((END_SYMBOL, END_SYMBOL),))


class SearchAlternative(NamedTuple):
    """A top-level alternative of a pattern read in marker mode: its body (IR over code
    points and the symbols START / END, the leading '^'s included) and the lookaheads after
    its leading '^'s, (negative, body) each."""
    body: ir.Expr
    looks: Tuple[Tuple[bool, ir.Expr], ...]
    simple: bool


def search_parts(pattern: str) -> List[SearchAlternative]:
    """The top-level alternatives of pattern with '^' / '$' read as symbols wherever they
    stand (ECMA-262 without the m flag: '^' holds only at the start of the text, '$' only at
    its end; cengine.schema.searches makes the search language of that exactly). `simple`:
    no lookahead, and the anchors are only leading '^'s and trailing '$'s of the alternative
    (what regex_to_expr reads by itself). CompileError as regex_to_expr for every other
    construct; a lookahead anywhere but after a leading '^' is refused."""
    if not isinstance(pattern, str):
        raise CompileError(f"a regex must be a string, not {type(pattern).__name__}")
    parser = _Parser(pattern, markers=True)
    out = []
    while True:
        before = parser.n_markers
        body, _, _ = parser.alternative(top=True)
        looks = tuple(parser.looks[-1])
        items = body.items if type(body) is ir.Seq else (body,)
        lead = 0
        while lead < len(items) and items[lead] is START:
            lead += 1
        trail = 0
        while trail < len(items) - lead and items[len(items) - 1 - trail] is END:
            trail += 1
        simple = not looks and parser.n_markers - before == lead + trail
        out.append(SearchAlternative(body, looks, simple))
        if parser.peek() != "|":
            break
        parser.i += 1
    if parser.i < parser.n:
        raise parser.error("unmatched ')'")
    return out


def _size(e: ir.Expr, cache: dict) -> int:
    """Roughly the number of NFA states the automaton builder will make for e."""
    if isinstance(e, ir.Bytes):
        return max(1, len(e.data))
    if isinstance(e, ir.ByteSet):
        return 1
    if isinstance(e, ir.CharSet):
        n = cache.get(e.ranges)
        if n is None:
            n = cache[e.ranges] = sum(len(s) for lo, hi in e.ranges for s in sequences(lo, hi)) or 1
        return n
    if isinstance(e, ir.Seq):
        return sum(_size(x, cache) for x in e.items) + len(e.items)
    if isinstance(e, ir.Alt):
        return sum(_size(x, cache) + 2 for x in e.items)
    if isinstance(e, ir.Repeat):
        copies = e.hi if e.hi is not None else e.lo + 1
        return (_size(e.item, cache) + 2) * max(copies, 1)
    return 1


def _trim_free_edges(expr: ir.Expr, start_free: bool, end_free: bool) -> ir.Expr:
    """expr with its edge repetitions cut to their minimum where the text around a match is
    free: containing a match of `P X{lo,hi}` is containing one of `P X{lo}` (the first lo
    copies of any longer match are one), and an edge `X{0,n}` or `X*` drops out. Same
    language once the any-string prefix / suffix is added; why: a search for `[a-z]{1,255}`
    otherwise carries 255 counting states into every DFA state that the prefix loops in."""
    items = list(expr.items) if type(expr) is ir.Seq else [expr]

    def cut(k: int) -> bool:
        x = items[k]
        if type(x) is not ir.Repeat or x.hi == x.lo:
            return False
        if x.lo == 0:
            del items[k]
            return True          # the next item is now the edge
        items[k] = ir.repeat(x.item, x.lo, x.lo)
        return False

    while end_free and items and cut(len(items) - 1):
        pass
    while start_free and items and cut(0):
        pass
    return ir.seq(*items) if items else ir.EMPTY


def regex_to_expr(pattern: str, *, anchored: bool = True) -> ir.Expr:
    """The language of `pattern` as an IR expression over code points (UTF-8 bytes).

    anchored=True: the whole text must match (anchors ^ and $ are then redundant).
    anchored=False: JSON Schema `pattern` semantics, the pattern may match anywhere; a
    top-level alternative keeps its own ^ / $ and gets an any-string prefix / suffix otherwise.
    """
    if not isinstance(pattern, str):
        raise CompileError(f"a regex must be a string, not {type(pattern).__name__}")
    parser = _Parser(pattern)
    alts = parser.parse_top()
    out = []
    for expr, start, end in alts:
        if not anchored:
            expr = _trim_free_edges(expr, not start, not end)
            expr = ir.seq(ir.EMPTY if start else ANY_STRING, expr, ir.EMPTY if end else ANY_STRING)
        out.append(expr)
    result = ir.alt(*out)
    _check_size(result)
    return result


def simple_search_expr(parts: List[SearchAlternative]) -> ir.Expr:
    """regex_to_expr(pattern, anchored=False) of a pattern whose search_parts are all simple
    (their anchors sit inside groups, as in `(^gs://.+)|(^https?://.+)`, which the parser
    of regex_to_expr does not read)."""
    out = []
    for alt in parts:
        items = list(alt.body.items) if type(alt.body) is ir.Seq else [alt.body]
        start = bool(items) and items[0] is START
        while items and items[0] is START:
            items.pop(0)
        end = bool(items) and items[-1] is END
        while items and items[-1] is END:
            items.pop()
        expr = _trim_free_edges(ir.seq(*items) if items else ir.EMPTY, not start, not end)
        out.append(ir.seq(ir.EMPTY if start else ANY_STRING, expr,
                          ir.EMPTY if end else ANY_STRING))
    result = ir.alt(*out)
    _check_size(result)
    return result


def _check_size(result: ir.Expr) -> None:
    size = _size(result, {})
    if size > MAX_NFA_STATES:
        raise LimitError(f"regex expands to about {size} automaton states, more than the "
                         f"limit of {MAX_NFA_STATES} (large {{m,n}} repetitions multiply)")


def regex_to_ir(pattern: str) -> ir.GrammarIR:
    """A grammar whose documents are exactly the strings matching the whole pattern."""
    g = ir.GrammarIR()
    g.add("root", regex_to_expr(pattern, anchored=True))
    return g
