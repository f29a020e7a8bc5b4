"""Strings with `pattern` (and, for strings, `format`): a language over decoded code points
mapped onto the JSON spellings the automaton reads.

`pattern` is an ECMA-262 regex with search semantics (the string only has to contain a
match unless the pattern anchors itself with ^...$). cengine.regex parses it into IR over
code points (UTF-8 literals and CharSets); every code point is then replaced by
`json_grammar.char_in`, i.e. all its legal JSON spellings (raw UTF-8 where allowed, the
mandatory escapes for '"', '\\' and control characters, and the optional \\uXXXX / short
escapes), so the grammar accepts exactly the JSON strings whose *decoded* value matches.
"""
from __future__ import annotations

import functools
from typing import NamedTuple, Optional, Tuple

from .. import ir
from .. import automaton
from ..automaton import keep_positions
from . import formats
from . import json_grammar
from . import lengths as length_bounds
from .drafts import pointer as _ptr
from ..errors import CompileError, LimitError
from . import searches
from .searches import search_expr


def decoded_to_json(expr: ir.Expr, memo: Optional[dict] = None) -> ir.Expr:
    """expr over code points (as regex.regex_to_expr makes it) -> the same language over
    JSON string-body spellings (no quotes)."""
    if memo is None:
        memo = {}
    got = memo.get(expr)
    if got is not None:
        return got
    t = type(expr)
    if t is ir.Bytes:
        text = expr.data.decode("utf-8")
        out = ir.seq(*(json_grammar.char_in(((ord(c), ord(c)),)) for c in text))
    elif t is ir.CharSet:
        out = json_grammar.char_in(expr.ranges)
    elif t is ir.Seq:
        out = ir.seq(*(decoded_to_json(x, memo) for x in expr.items))
    elif t is ir.Alt:
        out = ir.alt(*(decoded_to_json(x, memo) for x in expr.items))
    elif t is ir.Repeat:
        out = ir.repeat(decoded_to_json(expr.item, memo), expr.lo, expr.hi)
    elif t is ir.Nothing:
        out = ir.NOTHING
    else:   # ByteSet / Ref never come out of the regex front end
        raise TypeError(f"unexpected expression in a decoded-string language: {expr!r}")
    memo[expr] = out
    return out


def length_range(expr: ir.Expr) -> Tuple[int, Optional[int]]:
    """(shortest, longest) length in code points of the strings of expr (None: unbounded)."""
    t = type(expr)
    if t is ir.Bytes:
        n = len(expr.data.decode("utf-8"))
        return n, n
    if t is ir.CharSet:
        return 1, 1
    if t is ir.Seq:
        lo, hi = 0, 0
        for x in expr.items:
            a, b = length_range(x)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if t is ir.Alt:
        parts = [length_range(x) for x in expr.items]
        return min(a for a, _ in parts), (None if any(b is None for _, b in parts)
                                          else max(b for _, b in parts))
    if t is ir.Repeat:
        a, b = length_range(expr.item)
        hi = None if expr.hi is None or b is None else b * expr.hi
        return a * expr.lo, hi
    return 0, 0


def _class_of(expr: ir.Expr) -> Optional[ir.Ranges]:
    """The code points of expr when it is one character of a set (a CharSet, a single code
    point, or an alternative of those); None otherwise."""
    t = type(expr)
    if t is ir.CharSet:
        return expr.ranges
    if t is ir.Bytes:
        text = expr.data.decode("utf-8")
        return ((ord(text), ord(text)),) if len(text) == 1 else None
    if t is ir.Alt:
        parts = [_class_of(x) for x in expr.items]
        if any(p is None for p in parts):
            return None
        return ir.normalize_ranges(r for p in parts for r in p)
    return None


def _fixed_length(expr: ir.Expr) -> Optional[int]:
    """The one length (in code points) of every string of expr, or None if lengths vary."""
    a, b = length_range(expr)
    return a if a == b else None


class ClassRepetition(NamedTuple):
    """A language `head C{lo,hi} foot` whose head and foot have fixed lengths: its strings
    are `fixed` code points plus the count of C."""
    head: ir.Expr
    ranges: ir.Ranges
    lo: int
    hi: Optional[int]
    foot: ir.Expr
    fixed: int


def class_repetition(expr: ir.Expr) -> Optional[ClassRepetition]:
    """expr as one repetition of a character class between fixed-length parts, or None.

    This is what a fully anchored `^C*$`, `^C+$`, `^C{n,m}$` (or `^abc-C+$`) compiles to;
    an unanchored pattern carries its `.*` padding on both sides and never has this form.
    Only then is a length bound a bound on the class's count alone, so it can be enforced by
    counting (the length of every other language would need the pattern's automaton times
    a counter)."""
    items = expr.items if type(expr) is ir.Seq else (expr,)
    reps = [i for i, x in enumerate(items) if type(x) is ir.Repeat
            and _class_of(x.item) is not None]
    for i in reps:
        rest = items[:i] + items[i + 1:]
        lens = [_fixed_length(x) for x in rest]
        if any(n is None for n in lens):
            continue
        r = items[i]
        return ClassRepetition(ir.seq(*items[:i]), _class_of(r.item), r.lo, r.hi,
                               ir.seq(*items[i + 1:]), sum(lens))
    # a single class character (`^C$`) has a fixed length: implied, handled by the caller
    return None


def pattern_expr(pattern, ptr: str) -> ir.Expr:
    """The decoded strings containing a match of pattern (IR over code points)."""
    where = _ptr(ptr, "pattern")
    if not isinstance(pattern, str):
        raise CompileError("'pattern' must be a string", keyword="pattern", pointer=where)
    try:
        return search_expr(pattern)
    except LimitError as e:
        raise LimitError(f"pattern {pattern!r}: {e.reason}", keyword="pattern",
                         pointer=where) from None
    except CompileError as e:
        raise CompileError(f"pattern {pattern!r}: {e.reason}", keyword="pattern",
                           pointer=where) from None


@functools.lru_cache(maxsize=None)
def _format_parts(name: str) -> Tuple[ir.Expr, Tuple[int, Optional[int]], ir.Expr]:
    # an enforced format's language is fixed (formats.format_expr builds it once per
    # process), and so are its lengths and its JSON spelling: worked out once per format
    # (the FORMATS names: a bounded set), not in every compile that has one
    language = formats.format_expr(name)
    return language, length_range(language), decoded_to_json(language)


def format_body(name: str) -> ir.Expr:
    """decoded_to_json of the enforced format `name`'s language (formats.format_expr)."""
    return _format_parts(name)[2]


def format_string(name: str, lo: int, hi: Optional[int], ptr: str,
                  g: Optional[ir.GrammarIR] = None) -> ir.Expr:
    """constrained_string of the enforced format `name`'s language (what "format")."""
    language, lengths, body = _format_parts(name)
    a, b = lengths
    if a >= lo and (hi is None or (b is not None and b <= hi)):
        # the lengths are implied: the quoted format alone, one object per process
        return _implied_format_string(name)
    return constrained_string(language, lo, hi, ptr, "format", g, lengths=lengths, body=body)


@functools.lru_cache(maxsize=None)
def _implied_format_string(name: str) -> ir.Expr:
    # what constrained_string makes when the format implies the length keywords; fixed per
    # format (the FORMATS names: a bounded set), so the builder may keep its positions
    return keep_positions(ir.seq(ir.lit('"'), format_body(name), ir.lit('"')))


def warm_formats() -> None:
    """Make every enforced format's fixed parts now (cengine.prepare: ahead of the first
    request): its language and JSON spelling, its quoted string, and the determinized
    positions the builder keeps for that string (keep_positions), each made once per
    process; on first use they cost 0.2-4.5 ms a format (uri, hostname, regex the most),
    which landed on the first schema with that format."""
    g = ir.GrammarIR()
    names = list(formats.FORMATS)
    for i, name in enumerate(names):
        # one rule per format, as a schema's shared string is (inlined where a schema's
        # would be, kept where a schema's would be)
        g.add(f"format-{i}", _implied_format_string(name))
    g.add("root", ir.alt(*(ir.ref(f"format-{i}") for i in range(len(names)))))
    g.root = "root"
    automaton.build(g)


def constrained_string(language: ir.Expr, lo: int, hi: Optional[int], ptr: str,
                       what: str, g: Optional[ir.GrammarIR] = None, *,
                       lengths: Optional[Tuple[int, Optional[int]]] = None,
                       body: Optional[ir.Expr] = None) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in `language` and has lo..hi
    code points. The length keywords are enforced where they are implied by the language or
    exclude it entirely, and (given the grammar g, for the counting rules) where the
    language is one class repetition (class_repetition): the class is counted with both
    bounds intersected. Any other real intersection is refused naming the keyword."""
    # (lengths, body: length_range and decoded_to_json of language, when the caller has them)
    a, b = lengths if lengths is not None else length_range(language)
    if (hi is not None and a > hi) or (b is not None and b < lo):
        return ir.NOTHING
    implied = a >= lo and (hi is None or (b is not None and b <= hi))
    rep = None if implied or g is None else class_repetition(language)
    if rep is not None:
        n_lo = max(rep.lo, lo - rep.fixed)
        caps = [n for n in (rep.hi, None if hi is None else hi - rep.fixed) if n is not None]
        n_hi = min(caps) if caps else None
        for n, key in ((n_lo, "minLength"), (n_hi, "maxLength")):
            if n is not None and n > json_grammar.MAX_STRING_LENGTH:
                raise LimitError(f"'{key}' beside '{what}' counts {n} characters, above the "
                                 f"documented limit of {json_grammar.MAX_STRING_LENGTH}",
                                 keyword=key, pointer=_ptr(ptr, key))
        return json_grammar.class_string(g, rep.ranges, n_lo, n_hi, decoded_to_json(rep.head),
                               decoded_to_json(rep.foot))
    short = a < lo
    long_ = hi is not None and (b is None or b > hi)
    if (short or long_) and g is not None:
        # the language's automaton times a length counter (cengine.schema.lengths)
        key = "maxLength" if long_ else "minLength"
        return length_bounds.length_string(g, language, lo, hi, key, _ptr(ptr, key))
    if short:
        raise CompileError(f"'minLength' beside '{what}' is only enforced when '{what}' implies "
                           "it (every match is at least that long)", keyword="minLength",
                           pointer=_ptr(ptr, "minLength"))
    if long_:
        raise CompileError(f"'maxLength' beside '{what}' is only enforced when '{what}' implies "
                           "it (every match is at most that long)", keyword="maxLength",
                           pointer=_ptr(ptr, "maxLength"))
    return ir.seq(ir.lit('"'), body if body is not None else decoded_to_json(language),
                  ir.lit('"'))


@functools.lru_cache(maxsize=64)
def _format_pattern_dfa(name: str, language: ir.Expr):
    # the product of an enforced format's DFA and a pattern's (both code-point DFAs, complete)
    f = length_bounds.language_dfa(formats.format_expr(name))
    p = length_bounds.language_dfa(language)
    d = searches.product_dfa(f[:2], p[:2], lambda a, b: a and b)
    return length_bounds.with_dist(*d)


def format_pattern_string(name: str, pattern, lo: int, hi: Optional[int], ptr: str,
                          g: ir.GrammarIR) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in the enforced format `name`,
    contains a match of `pattern` and has lo..hi code points: the product of the two DFAs
    over code points (searches.product_dfa) with the length counter of
    lengths.length_string. LimitError naming `pattern` past MAX_SEARCH_STATES /
    MAX_LENGTH_STATES (naming the length keyword when the lengths make it pass)."""
    language = pattern_expr(pattern, ptr)
    try:
        dfa = _format_pattern_dfa(name, language)
    except (length_bounds.TooLarge, searches.TooLarge) as e:
        raise LimitError(f"'pattern' beside format '{name}' needs {e} (documented limits "
                         "cengine.schema.searches.MAX_SEARCH_STATES, "
                         "cengine.schema.lengths.MAX_LENGTH_STATES)", keyword="pattern",
                         pointer=_ptr(ptr, "pattern")) from None
    key = "maxLength" if hi is not None else "minLength" if lo else "pattern"
    return length_bounds.length_string(g, None, lo, hi, key, _ptr(ptr, key), dfa=dfa,
                                       key=("format-pattern", name, language, lo, hi))


# states of the product DFA of a string with negated languages or several patterns (what
# excluding_string builds; documented in docs/limits.md): past it the negation is refused.
# Each state becomes a rule of the string's body, and such a body's positions (a search for
# several words, a host name minus the addresses) cost tens of milliseconds to build and,
# where no slice applies, first masks of ten and more (a oneOf of five overlapping searches:
# 960 states, 130 ms to compile, first masks of 60 ms)
MAX_EXCLUDING_STATES = 256


@functools.lru_cache(maxsize=256)
def _language_dfa(kind: str, value: str):
    # the complete DFA over code points of a pattern's or an enforced format's language
    # (lengths.language_dfa), once per (kind, value) and process
    if kind == "pattern":
        return length_bounds.language_dfa(search_expr(value))
    if kind == "format":
        return length_bounds.language_dfa(formats.format_expr(value))
    return length_bounds.language_dfa(ir.alt(*(ir.lit(v) for v in value)))


def in_language(kind: str, value: str, text: str) -> bool:
    """text (a decoded string) is in the language ("pattern", regex): contains a match, as
    the grammar reads it, or ("format", name): an enforced format's strings. The DFA over
    code points that excluding_string multiplies, run on text's code points."""
    groups, accepting = _language_dfa(kind, value)[:2]
    q = 0
    for ch in text:
        c = ord(ch)
        for t, ranges in groups[q]:
            if any(lo <= c <= hi for lo, hi in ranges):
                q = t
                break
        else:
            return False
    return bool(accepting[q])


def patterns_disjoint(first: Tuple[str, ...], second: Tuple[str, ...]) -> bool:
    """No string contains a match of a pattern of `first` and one of `second` (search
    semantics, as patternProperties match names): each pair's product of complete code-point
    DFAs has no accepting pair. False when some product passes MAX_EXCLUDING_STATES (not
    proven) or a pattern is not enforced."""
    try:
        for a in first:
            for b in second:
                _, accepting = searches.product_dfa(_language_dfa("pattern", a)[:2],
                                                    _language_dfa("pattern", b)[:2],
                                                    lambda x, y: x and y, MAX_EXCLUDING_STATES)
                if any(accepting):
                    return False
    except (CompileError, length_bounds.TooLarge, searches.TooLarge):
        return False
    return True


# patternProperties of different schemas whose languages overlap: split into the regions of
# names matching exactly one subset of them, for at most this many distinct schemas
MAX_PATTERN_GROUPS = 4


def pattern_regions(groups: Tuple[Tuple[str, ...], ...]) -> Optional[list]:
    """[(indices of the groups matched, language of the names matching exactly those groups,
    over code points)] for every nonempty subset whose region holds a name, each group a
    union of patterns (search semantics). None when some product passes
    MAX_EXCLUDING_STATES or a pattern is not enforced (the split is then not made)."""
    try:
        dfas = []
        for grp in groups:
            d = _language_dfa("pattern", grp[0])[:2]
            for p in grp[1:]:
                d = searches.product_dfa(d, _language_dfa("pattern", p)[:2],
                                         lambda a, b: a or b, MAX_EXCLUDING_STATES)
            dfas.append(d)
        out = []
        n = len(dfas)
        for mask in range(1, 1 << n):
            inside = [i for i in range(n) if mask >> i & 1]
            d = dfas[inside[0]]
            for i in range(n):
                if i == inside[0]:
                    continue
                if mask >> i & 1:
                    d = searches.product_dfa(d, dfas[i], lambda a, b: a and b,
                                             MAX_EXCLUDING_STATES)
                else:
                    d = searches.product_dfa(d, dfas[i], lambda a, b: a and not b,
                                             MAX_EXCLUDING_STATES)
                if not any(d[1]):
                    break
            if any(d[1]):
                out.append((tuple(inside), searches.dfa_to_expr(d)))
        return out
    except (CompileError, length_bounds.TooLarge, searches.TooLarge):
        return None


def excluding_string(fmt: Optional[str], patterns: Tuple[str, ...], values: Tuple[str, ...],
                     excluded: Tuple[Tuple[str, str], ...], lo: int, hi: Optional[int],
                     ptr: str, g: ir.GrammarIR) -> ir.Expr:
    """A JSON string (quotes included) whose decoded value is in the enforced format `fmt`
    (None: any), contains a match of each of `patterns`, is none of `values`, is in none
    of the `excluded` languages (("pattern", regex) / ("format", name): what `not` of those
    keywords leaves) and has lo..hi code points. Regular languages are closed under
    complement: the DFAs over code points (complete, lengths.language_dfa) are multiplied
    (searches.product_dfa), a pair accepting where the first accepts and the second does
    not, then counted by lengths.length_string. LimitError naming `not` past
    MAX_SEARCH_STATES (or MAX_LENGTH_STATES) states; a malformed or unsupported pattern is
    refused naming `pattern`."""
    for kind, value in excluded:
        if kind == "pattern":
            pattern_expr(value, _ptr(ptr, "not"))       # refused as a pattern would be
    for pattern in patterns:
        pattern_expr(pattern, ptr)                      # refused as a pattern would be
    try:
        if fmt is not None:
            dfa = _language_dfa("format", fmt)[:2]
        elif patterns:
            dfa = _language_dfa("pattern", patterns[0])[:2]
        else:
            dfa = _language_dfa("pattern", "")[:2]      # every string
        cap = MAX_EXCLUDING_STATES
        for pattern in patterns if fmt is not None else patterns[1:]:
            dfa = searches.product_dfa(dfa, _language_dfa("pattern", pattern)[:2],
                                       lambda a, b: a and b, cap)
        others = [_language_dfa(kind, value) for kind, value in excluded]
        if values:
            others.append(_language_dfa("values", values))
        for d in others:
            dfa = searches.product_dfa(dfa, d[:2], lambda a, b: a and not b, cap)
    except (length_bounds.TooLarge, searches.TooLarge) as e:
        raise LimitError(f"a string language with a negated one (from 'not', or a 'oneOf' or "
                         f"'if' narrowed by a negation) or several patterns needs {e} (at most "
                         f"MAX_EXCLUDING_STATES, {MAX_EXCLUDING_STATES}) "
                         "(documented limits cengine.schema.strings.MAX_EXCLUDING_STATES, "
                         "cengine.schema.searches.MAX_SEARCH_STATES, "
                         "cengine.schema.lengths.MAX_LENGTH_STATES)", keyword="not",
                         pointer=ptr) from None
    key = "maxLength" if hi is not None else "minLength" if lo else "not"
    return length_bounds.length_string(g, None, lo, hi, key, _ptr(ptr, key),
                                       dfa=length_bounds.with_dist(*dfa),
                                       key=("excluding", fmt, patterns, values, excluded, lo, hi))
