"""llama.cpp GBNF -> grammar IR, by a hand-written recursive-descent parser.

The accepted syntax follows llama.cpp's grammar parser (src/llama-grammar.cpp), read for facts:
rules `name ::= alternates` end at a newline, except that newlines are allowed after `::=`,
after `|` and anywhere inside parentheses; `#` starts a comment up to the end of the line;
terminals are Unicode code points (string literals, `[...]` classes, `.`).

Where llama.cpp is silently lenient we refuse instead (docs/gbnf.md lists each case): token
terminals (`<think>`, `<[12]>`, `!<...>`), repetition bounds above MAX_REPEAT (llama.cpp turns
`{0,5000}` into `*`), `{m,n}` with m > n, empty classes (llama.cpp reads `[]` as the empty
string), reversed ranges, escapes of surrogates or of values beyond U+10FFFF, and a rule
defined twice (llama.cpp keeps the last definition).

Each GBNF rule becomes exactly one IR rule (groups and repetitions stay inside its
expression) so the automaton's per-rule positions mirror what the user wrote.
"""
from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

from . import ir
from .errors import CompileError, LimitError

# Largest m or n accepted in {m}, {m,}, {m,n}, and largest product of nested bounds: the
# automaton unrolls bounded repetitions.
MAX_REPEAT = 4096
# parenthesised groups nested in one another (the parser recurses once per level; as the regex
# front end's MAX_GROUP_DEPTH)
MAX_GROUP_DEPTH = 100

_SIMPLE_ESCAPES = {"t": 0x09, "n": 0x0A, "r": 0x0D, "\\": 0x5C, '"': 0x22,
                   "[": 0x5B, "]": 0x5D, "-": 0x2D}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_ANY_CHAR = ir.charset([(0, ir.MAX_UNICODE)])


def _is_name_char(c: str) -> bool:
    # ASCII only, as llama.cpp: isalnum() would also admit other scripts' letters
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9") or c == "-"


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.rule: Optional[str] = None          # the rule being parsed, for error reports
        self.depth = 0                           # groups open around the current position
        # line starts: after "\n", or after a "\r" not followed by "\n" (llama.cpp takes a lone
        # "\r" as a newline too)
        starts = [0]
        for i, c in enumerate(text):
            if c == "\n" or (c == "\r" and (i + 1 >= self.n or text[i + 1] != "\n")):
                starts.append(i + 1)
        self._line_starts = starts
        self.rules: Dict[str, ir.Rule] = {}
        self.uses: List[Tuple[str, int, str]] = []   # (callee, position, caller) in source order

    # --- positions and errors -------------------------------------------------------
    def where(self, pos: int) -> Tuple[int, int]:
        """1-based (line, column); columns count code points."""
        i = bisect.bisect_right(self._line_starts, pos) - 1
        return i + 1, pos - self._line_starts[i] + 1

    def error(self, message: str, pos: Optional[int] = None, *, rule: Optional[str] = None,
              cls=CompileError) -> CompileError:
        line, column = self.where(self.pos if pos is None else pos)
        return cls(message, rule=self.rule if rule is None else rule, line=line, column=column)

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < self.n else ""

    def describe(self, pos: int) -> str:
        if pos >= self.n:
            return "end of input"
        c = self.text[pos]
        if c in "\r\n":
            return "end of line"
        return repr(c)

    # --- lexical helpers ------------------------------------------------------------
    def skip_space(self, newline_ok: bool) -> None:
        text, n, i = self.text, self.n, self.pos
        while i < n:
            c = text[i]
            if c == " " or c == "\t" or (newline_ok and (c == "\n" or c == "\r")):
                i += 1
            elif c == "#":
                while i < n and text[i] != "\n" and text[i] != "\r":
                    i += 1
            else:
                break
        self.pos = i

    def parse_name(self, what: str) -> str:
        start = self.pos
        while self.pos < self.n and _is_name_char(self.text[self.pos]):
            self.pos += 1
        if self.pos == start:
            raise self.error(f"expected {what} (letters, digits, '-'), "
                             f"found {self.describe(start)}")
        return self.text[start:self.pos]

    def parse_int(self) -> Tuple[int, int]:
        start = self.pos
        while self.pos < self.n and _is_digit(self.text[self.pos]):
            self.pos += 1
        return int(self.text[start:self.pos]), start

    def parse_char(self, unterminated: str, open_pos: int) -> int:
        """One code point of a literal or class, escapes decoded."""
        if self.pos >= self.n:
            raise self.error(unterminated, open_pos)
        start = self.pos
        c = self.text[start]
        if c != "\\":
            self.pos += 1
            cp = ord(c)
            if 0xD800 <= cp <= 0xDFFF:
                raise self.error("a lone surrogate is not a character (no UTF-8 encoding)", start)
            return cp
        if start + 1 >= self.n:
            raise self.error(unterminated, open_pos)
        e = self.text[start + 1]
        if e in _SIMPLE_ESCAPES:
            self.pos = start + 2
            return _SIMPLE_ESCAPES[e]
        if e in _HEX_ESCAPES:
            k = _HEX_ESCAPES[e]
            digits = self.text[start + 2:start + 2 + k]
            if len(digits) != k or not all(d in _HEX_DIGITS for d in digits):
                raise self.error(f"bad escape: '\\{e}' needs exactly {k} hex digits", start)
            cp = int(digits, 16)
            if cp > ir.MAX_UNICODE:
                raise self.error(f"bad escape: '\\{e}{digits}' is beyond U+10FFFF", start)
            if 0xD800 <= cp <= 0xDFFF:
                raise self.error(f"bad escape: '\\{e}{digits}' is a surrogate, not a character",
                                 start)
            self.pos = start + 2 + k
            return cp
        shown = "end of line" if e in "\r\n" else repr(e)
        raise self.error(f"bad escape: unknown escape '\\' followed by {shown} (known: \\x.. "
                         "\\u.... \\U........ \\t \\n \\r \\\\ \\\" \\[ \\] \\-)", start)

    # --- grammar --------------------------------------------------------------------
    def parse(self, root: str) -> ir.GrammarIR:
        self.skip_space(True)
        while self.pos < self.n:
            self.parse_rule()
        self.rule = None
        for callee, pos, caller in self.uses:
            if callee not in self.rules:
                raise self.error(f"rule '{callee}' is used in rule '{caller}' but never defined",
                                 pos, rule=callee)
        if root not in self.rules:
            # nothing in the text to point at: report the start of the grammar
            raise CompileError(f"root rule '{root}' is not defined", rule=root, line=1, column=1)
        g = ir.GrammarIR(root=root)
        g.rules = dict(self.rules)
        return g

    def parse_rule(self) -> None:
        self.rule = None
        name_pos = self.pos
        name = self.parse_name("a rule name")
        self.rule = name
        self.skip_space(False)
        if self.text.startswith("::=", self.pos):
            self.pos += 3
        else:
            raise self.error(f"expected '::=' after rule name '{name}', "
                             f"found {self.describe(self.pos)}")
        if name in self.rules:
            line, col = self.rules[name].origin
            raise self.error(f"rule '{name}' is defined twice (first at line {line}, "
                             f"column {col})", name_pos)
        self.skip_space(True)
        expr = self.parse_alternates(nested=False)
        c = self.peek()
        if c == "\r":
            self.pos += 2 if self.peek(1) == "\n" else 1
        elif c == "\n":
            self.pos += 1
        elif c == ")":
            raise self.error("unmatched ')'")
        elif c:
            raise self.error(f"unexpected {self.describe(self.pos)}: expected a symbol, '|' "
                             "or the end of the line")
        self.rules[name] = ir.Rule(name, expr, origin=self.where(name_pos))
        self.skip_space(True)

    def parse_alternates(self, nested: bool) -> ir.Expr:
        items = [self.parse_sequence(nested)]
        while self.peek() == "|":
            self.pos += 1
            self.skip_space(True)
            items.append(self.parse_sequence(nested))
        return ir.alt(*items) if len(items) > 1 else items[0]

    def parse_sequence(self, nested: bool) -> ir.Expr:
        items: List[ir.Expr] = []
        while self.pos < self.n:
            c = self.text[self.pos]
            if c == '"':
                items.append(self.parse_literal())
            elif c == "[":
                items.append(self.parse_class())
            elif c == "<" or c == "!":
                raise self.error("token terminals ('<name>', '<[id]>', '!<...>') are not "
                                 "supported: llamay enforces grammars over text, not token ids")
            elif _is_name_char(c):
                start = self.pos
                name = self.parse_name("a rule name")
                self.uses.append((name, start, self.rule))
                items.append(ir.Ref(name))
            elif c == "(":
                open_pos = self.pos
                if self.depth >= MAX_GROUP_DEPTH:
                    raise self.error(f"groups nest more than {MAX_GROUP_DEPTH} deep", open_pos,
                                     cls=LimitError)
                self.pos += 1
                self.skip_space(True)
                self.depth += 1
                inner = self.parse_alternates(nested=True)
                self.depth -= 1
                if self.peek() != ")":
                    if self.pos >= self.n:
                        raise self.error("unterminated group: '(' is never closed", open_pos)
                    raise self.error(f"expected ')' to close the group opened at line "
                                     f"{self.where(open_pos)[0]}, column "
                                     f"{self.where(open_pos)[1]}, found "
                                     f"{self.describe(self.pos)}")
                self.pos += 1
                items.append(inner)
            elif c == ".":
                self.pos += 1
                items.append(_ANY_CHAR)
            elif c in "*+?{":
                op_pos = self.pos
                lo, hi = self.parse_repetition()
                if not items:
                    raise self.error(f"bad repetition: '{c}' has nothing before it to repeat",
                                     op_pos)
                copies = _copies(items[-1]) * (hi if hi is not None else max(lo, 1))
                if copies > MAX_REPEAT:
                    raise self.error(f"nested repetitions make {copies} copies of one item, "
                                     f"above the limit of {MAX_REPEAT}", op_pos, cls=LimitError)
                items[-1] = ir.repeat(items[-1], lo, hi)
            else:
                break
            self.skip_space(nested)
        return ir.seq(*items) if items else ir.EMPTY

    def parse_repetition(self) -> Tuple[int, Optional[int]]:
        c = self.text[self.pos]
        self.pos += 1
        if c == "*":
            return 0, None
        if c == "+":
            return 1, None
        if c == "?":
            return 0, 1
        # {m} {m,} {m,n} {,n}; spaces are allowed between the parts (not newlines outside groups)
        open_pos = self.pos - 1
        self.skip_space(False)
        if self.pos >= self.n:
            raise self.error("bad repetition: unterminated '{'", open_pos)
        if _is_digit(self.peek()):
            lo, lo_pos = self.parse_int()
            self.skip_space(False)
        elif self.peek() == ",":
            lo, lo_pos = 0, None            # {,n}: at most n
        else:
            raise self.error(f"bad repetition: expected a number after '{{', found "
                             f"{self.describe(self.pos)}")
        hi: Optional[int]
        hi_pos = None
        if self.peek() == "}":
            hi = lo
        elif self.peek() == ",":
            self.pos += 1
            self.skip_space(False)
            if _is_digit(self.peek()):
                hi, hi_pos = self.parse_int()
                self.skip_space(False)
            elif lo_pos is None:
                raise self.error("bad repetition: '{,}' needs an upper bound, use '*'")
            else:
                hi = None
            if self.peek() != "}":
                raise self.error(f"bad repetition: expected '}}', found {self.describe(self.pos)}")
        else:
            raise self.error(f"bad repetition: expected ',' or '}}', found "
                             f"{self.describe(self.pos)}")
        self.pos += 1
        for value, pos in ((lo, lo_pos), (hi, hi_pos)):
            if value is not None and value > MAX_REPEAT:
                raise self.error(f"repetition bound {value} is above the limit of {MAX_REPEAT}",
                                 pos, cls=LimitError)
        if hi is not None and lo > hi:
            raise self.error(f"bad repetition: minimum {lo} is above maximum {hi}", open_pos)
        return lo, hi

    def parse_literal(self) -> ir.Expr:
        open_pos = self.pos
        self.pos += 1
        cps: List[int] = []
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated string literal", open_pos)
            if self.text[self.pos] == '"':
                self.pos += 1
                break
            cps.append(self.parse_char("unterminated string literal", open_pos))
        return ir.lit("".join(map(chr, cps)))

    def parse_class(self) -> ir.Expr:
        open_pos = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        unterminated = "unterminated character class"
        ranges: List[Tuple[int, int]] = []
        while True:
            if self.pos >= self.n:
                raise self.error(unterminated, open_pos)
            if self.text[self.pos] == "]":
                self.pos += 1
                break
            lo_pos = self.pos
            lo = self.parse_char(unterminated, open_pos)
            hi = lo
            # '-' makes a range unless it is the last character of the class: [a-] is a or -
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi = self.parse_char(unterminated, open_pos)
                if hi < lo:
                    raise self.error(f"reversed range U+{lo:04X}-U+{hi:04X} in character class",
                                     lo_pos)
            ranges.append((lo, hi))
        if not ranges:
            raise self.error("empty character class", open_pos)
        return ir.charset(ranges, negated)


def _copies(e: ir.Expr) -> int:
    """How many copies of its innermost item the bounded repetitions nested in e unroll to.

    The automaton unrolls {m,n}; nested ones multiply (("a"{0,99}){0,99} is 9801 copies), so
    the product, not each bound, is what MAX_REPEAT limits, as llama.cpp limits it too.
    """
    if isinstance(e, ir.Repeat):
        return _copies(e.item) * (e.hi if e.hi is not None else max(e.lo, 1))
    if isinstance(e, (ir.Seq, ir.Alt)):
        return max(_copies(it) for it in e.items)
    return 1


def parse_gbnf(text: str, root: str = "root") -> ir.GrammarIR:
    """Parse llama.cpp GBNF into a GrammarIR with one rule per GBNF rule.

    Raises CompileError with .rule, .line and .column (1-based; columns count code points).
    """
    if not isinstance(text, str):
        raise TypeError("GBNF text must be a str")
    return _Parser(text).parse(root)
