"""Frozen pure-Python copy of the inlining pass as it was before it ran over int arrays
(cengine._build.inline_small_rules at 33ec82c), kept as the reference the fast pass must
match: the same expressions (structure and sharing: one result object per shared subtree),
the same callees per rule, the same errors. See tests/test_automaton_inline_equivalence.py.

The pass: rules that match at most `inline_max_match` bytes (or are whitespace rules), are not
recursive, not containers and not the root are substituted into their callers when their
substituted body has at most `inline_max_size` nodes; a repeat counted past UNROLL_INLINE_MAX
keeps calling its item. Returns (rule -> expression, rule -> rules that expression calls).
"""
from __future__ import annotations

from cengine import ir
from cengine.errors import CompileError, LimitError

UNROLL_INLINE_MAX = 32
MAX_EXPR_DEPTH = 4000
_INF = float("inf")


def _too_deep(depth):
    if depth > MAX_EXPR_DEPTH:
        raise RecursionError("grammar expressions nest too deeply")


def _refs(e, out, ws_type, depth=0):
    _too_deep(depth)
    k = type(e)
    if k is ir.Ref:
        out.add(e.name)
    elif k is ir.Seq or k is ir.Alt:
        for it in e.items:
            _refs(it, out, ws_type, depth + 1)
    elif k is ir.Repeat or k is ws_type:
        _refs(e.item, out, ws_type, depth + 1)


def _max_match(e, rule_max, ws_type, memo, cap, depth=0):
    # past cap the exact length does not matter: stop walking and answer inf
    _too_deep(depth)
    k = type(e)
    if k is ir.Bytes:
        return len(e.data)
    if k is ir.ByteSet:
        return 1
    if k is ir.CharSet:
        top = e.ranges[-1][1] if e.ranges else 0
        return 1 if top < 0x80 else 2 if top < 0x800 else 3 if top < 0x10000 else 4
    if k is ir.Ref:
        return rule_max(e.name)
    if k is ws_type:
        return _max_match(e.item, rule_max, ws_type, memo, cap, depth + 1)
    if k is ir.Dfa:
        if id(e) not in memo:
            memo[id(e)] = ir.dfa_max_match(e)
        return memo[id(e)]
    if k is not ir.Seq and k is not ir.Alt and k is not ir.Repeat:
        return 0
    if id(e) in memo:
        return memo[id(e)]
    if k is ir.Seq:
        v = 0
        for it in e.items:
            v = v + _max_match(it, rule_max, ws_type, memo, cap, depth + 1)
            if v > cap:
                v = _INF
                break
    elif k is ir.Alt:
        if not e.items:
            max(())                 # the ValueError of an empty alternation
        v = _max_match(e.items[0], rule_max, ws_type, memo, cap, depth + 1)
        for it in e.items[1:]:
            if v > cap:
                break
            w = _max_match(it, rule_max, ws_type, memo, cap, depth + 1)
            if w > v:
                v = w
        if v > cap:
            v = _INF
    else:
        m = _max_match(e.item, rule_max, ws_type, memo, cap, depth + 1)
        v = 0 if m == 0 else _INF if e.hi is None or e.hi * m > cap else e.hi * m
    memo[id(e)] = v
    return v


def _repeat_count(e):
    return e.hi if e.hi is not None else e.lo


def _subst(e, inlinable, resolved, memo, depth=0):
    _too_deep(depth)
    k = type(e)
    if k is ir.Ref:
        if e.name in inlinable:
            x = resolved(e.name)
            if x is not None:
                return x
        return e
    if k is not ir.Seq and k is not ir.Alt and k is not ir.Repeat:
        return e
    if id(e) in memo:
        return memo[id(e)]
    if k is ir.Seq or k is ir.Alt:
        out = tuple(_subst(it, inlinable, resolved, memo, depth + 1) for it in e.items)
        # a subtree that calls nothing inlined stays the same object
        x = k(out) if any(y is not it for y, it in zip(out, e.items)) else e
    elif type(e.item) is ir.Ref and _repeat_count(e) > UNROLL_INLINE_MAX:
        x = e           # a long counted run calls its item: one copy of it, not n
    else:
        y = _subst(e.item, inlinable, resolved, memo, depth + 1)
        x = ir.Repeat(y, e.lo, e.hi) if y is not e.item else e
    memo[id(e)] = x
    return x


def _long_repeat_refs(e, out, depth=0):
    """Rules that _subst keeps as calls in e: items of repeats counted past UNROLL_INLINE_MAX."""
    _too_deep(depth)
    k = type(e)
    if k is ir.Repeat:
        if type(e.item) is ir.Ref and _repeat_count(e) > UNROLL_INLINE_MAX:
            out.add(e.item.name)
        else:
            _long_repeat_refs(e.item, out, depth + 1)
    elif k is ir.Seq or k is ir.Alt:
        for it in e.items:
            _long_repeat_refs(it, out, depth + 1)
    elif hasattr(e, "item"):     # the whitespace wrapper
        _long_repeat_refs(e.item, out, depth + 1)


def _size(e, ws_type, depth=0):
    """Node count (repeats weighted by their count, at most 64)."""
    _too_deep(depth)
    k = type(e)
    if k is ir.Seq or k is ir.Alt:
        return 1 + sum(_size(it, ws_type, depth + 1) for it in e.items)
    if k is ir.Repeat:
        hi = e.hi if e.hi is not None else e.lo + 1
        return 1 + _size(e.item, ws_type, depth + 1) * max(1, min(hi, 64))
    if k is ws_type:
        return _size(e.item, ws_type, depth + 1)
    if k is ir.Bytes:
        return max(1, len(e.data))
    if k is ir.Dfa:
        return ir.dfa_size(e)
    return 1


def _recursive_rules(refs):
    """Rules that reach themselves (a search from every rule: slow and obvious)."""
    out = set()
    for n in refs:
        seen, stack = set(), list(refs[n])
        while stack:
            m = stack.pop()
            if m == n:
                out.add(n)
                break
            if m not in seen:
                seen.add(m)
                stack.extend(refs[m])
    return out


def inline_small_rules(grammar, ws_type, inline_max_match, inline_max_size):
    rules = grammar.rules
    refs = {}
    for n, r in rules.items():
        s = set()
        _refs(r.expr, s, ws_type)
        refs[n] = s
    for n, rs in refs.items():
        for m in rs:
            if m not in rules:
                line, col = (rules[n].origin or (None, None))
                raise CompileError(f"rule '{m}' is used but never defined", rule=m,
                                   line=line, column=col)
    recursive = _recursive_rules(refs)
    maxlen = {n: _INF for n in recursive}
    mm_memo = {}

    def rule_max(n):
        return maxlen[n]

    def measure(n):             # callees first
        if n not in maxlen:
            for m in refs[n]:
                measure(m)
            maxlen[n] = _max_match(rules[n].expr, rule_max, ws_type, mm_memo, inline_max_match)

    for n in rules:
        measure(n)
    inlinable = {n for n, r in rules.items()
                 if n != grammar.root and n not in recursive and not r.container
                 and not getattr(r, "frame", False)
                 and (r.whitespace or maxlen[n] <= inline_max_match)}
    done = {}
    memo = {}

    def subst_rule(n):
        e = rules[n].expr
        return _subst(e, inlinable, resolved, memo) if refs[n] & inlinable else e

    def resolved(n):
        # the inlined body of an inlinable rule, or None when it is too big to copy
        if n not in done:
            done[n] = None
            x = subst_rule(n)
            if rules[n].whitespace:
                x = ws_type(x)
            if _size(x, ws_type) <= inline_max_size:
                done[n] = x
        return done[n]

    try:
        exprs = {n: subst_rule(n) for n in rules}
    except RecursionError:
        raise LimitError("grammar expressions nest too deeply") from None

    calls = {}

    def calls_of(n):
        # its own calls, with each inlined rule replaced by what its body calls
        if n not in calls:
            c = set()
            kept = set()
            _long_repeat_refs(rules[n].expr, kept)
            for m in refs[n]:
                if m in inlinable and done.get(m) is not None:
                    c |= calls_of(m)
                    if m in kept:       # also called, from a long counted run
                        c.add(m)
                else:
                    c.add(m)
            calls[n] = c
        return calls[n]

    return exprs, {n: calls_of(n) for n in rules}
