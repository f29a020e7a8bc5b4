"""Typed errors raised by the compilers. All are ValueErrors so callers can map them to 4xx."""
from __future__ import annotations

from typing import Optional


class CompileError(ValueError):
    """A schema, grammar, regex or word list that cannot be enforced exactly.

    keyword/pointer locate the offending JSON Schema keyword (pointer is a JSON pointer into
    the schema, e.g. "/properties/age/minimum"); rule/line/column locate a GBNF problem.
    """

    def __init__(self, message: str, *, keyword: Optional[str] = None,
                 pointer: Optional[str] = None, rule: Optional[str] = None,
                 line: Optional[int] = None, column: Optional[int] = None):
        self.keyword = keyword
        self.pointer = pointer
        self.rule = rule
        self.line = line
        self.column = column
        where = []
        if keyword is not None:
            where.append(f"keyword '{keyword}'")
        if pointer is not None:
            where.append(f"at '{pointer or '/'}'")
        if rule is not None:
            where.append(f"rule '{rule}'")
        if line is not None:
            where.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        super().__init__(message + (f" ({', '.join(where)})" if where else ""))
        self.reason = message


class LimitError(CompileError):
    """A documented limit (states, depth, repetition, schema size) was exceeded.

    .limit names the compile-budget option that was exceeded (`max_compile_work`,
    `max_dfa_growth`: cengine.CompileBudget) so a caller that set it can say so; None for the
    other limits."""

    def __init__(self, message: str, *, limit: Optional[str] = None, **where):
        super().__init__(message, **where)
        self.limit = limit
