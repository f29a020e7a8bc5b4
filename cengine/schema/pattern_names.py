"""Names against patternProperties patterns: whether a declared name matches a pattern
(read as ECMA-262 reads it, by the pattern's own grammar), whether every name does, and the
alphabet of the extra keys beside a pattern. Read by the object compiler and by allOf merges
(which value schemas a name meets)."""
from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from typing import Any, Dict, FrozenSet, List, Optional

import numpy as np

from .. import ir
from ..errors import CompileError
from ..regex import _DIGIT, _LINE_TERMINATORS, _SPACE, _WORD
from .json_grammar import _minus
from .keys import FULL_ALPHABET as _FULL_ALPHABET

# The constructs ECMA-262 (the patterns' dialect, as cengine.regex reads it) and Python's re
# (which jsonschema uses) read differently, each by the code points the two disagree on: a
# key holding none of those gets the same schema under both readings. `\b`/`\B` stand on
# `\w`. Python's `.` (no DOTALL) matches all but "\n" and its `$` (no MULTILINE) also before
# a final "\n": rules of re, not of its Unicode database. `\d`, `\w`, `\s` are read from
# the running interpreter's re (its Unicode database is jsonschema's), on first need, once
# per process (~20-30 ms a class).
_CONSTRUCT = re.compile(r"\\(.)|([.$])", re.S)
_ESCAPE_CONSTRUCT = {"d": "d", "D": "d", "w": "w", "W": "w", "b": "w", "B": "w",
                     "s": "s", "S": "s"}
_PY_CLASS = {"d": r"\d+", "w": r"\w+", "s": r"\s+"}
_ECMA_CLASS = {".": ir.negate_ranges(_LINE_TERMINATORS), "d": _DIGIT, "w": _WORD, "s": _SPACE}


@functools.lru_cache(maxsize=4096)
def _constructs(pattern: str) -> FrozenSet[str]:
    """The sensitive constructs pattern uses: ".", "$", "d", "w", "s" (an escaped "." or "$"
    is a literal in both dialects; one in a character class is counted too, which only
    narrows)."""
    out = set()
    for m in _CONSTRUCT.finditer(pattern):
        c = m.group(1)
        if c is None:
            out.add(m.group(2))
        elif c in _ESCAPE_CONSTRUCT:
            out.add(_ESCAPE_CONSTRUCT[c])
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def _python_class(construct: str) -> ir.Ranges:
    """The code points (surrogates apart) Python's re matches by a class escape in a str
    pattern: the runs of its matches over a string of them all."""
    cps = np.concatenate((np.arange(0xD800, dtype="<u4"),
                          np.arange(0xE000, ir.MAX_UNICODE + 1, dtype="<u4")))
    text = cps.tobytes().decode("utf-32-le")
    gap = 0xE000 - 0xD800
    return ir.normalize_ranges(
        (m.start() + (gap if m.start() >= 0xD800 else 0),
         m.end() - 1 + (gap if m.end() - 1 >= 0xD800 else 0))
        for m in re.finditer(_PY_CLASS[construct], text))


@functools.lru_cache(maxsize=None)
def _disagreement(construct: str) -> ir.Ranges:
    """The code points on which ECMA-262 and Python's re read the construct differently."""
    if construct == "$":
        return ((0x0A, 0x0A),)
    ecma = _ECMA_CLASS[construct]
    py = ir.negate_ranges(((0x0A, 0x0A),)) if construct == "." else _python_class(construct)
    return _minus(ir.normalize_ranges(_minus(ecma, py) + _minus(py, ecma)),
                  ((0xD800, 0xDFFF),))


def warm_disagreements() -> None:
    """Read every class's disagreement set now (cengine.prepare: ahead of the first request)."""
    for construct in _ECMA_CLASS:
        _disagreement(construct)


@functools.lru_cache(maxsize=64)
def _alphabet_of(constructs: FrozenSet[str]) -> ir.Ranges:
    if not constructs:
        return _FULL_ALPHABET
    cut = [r for c in sorted(constructs) for r in _disagreement(c)]
    return ir.negate_ranges(ir.normalize_ranges(cut))


def _key_alphabet(patterns: List[str]) -> ir.Ranges:
    """The code points extra keys beside the patterns may hold (normalized ranges): all but
    those on which a construct the patterns use is read differently by ECMA-262 and
    Python's re, so a key gets the same schema under both readings. One tuple per set of
    constructs (the key spaces and memos are keyed on it)."""
    return _alphabet_of(frozenset().union(*(_constructs(p) for p in patterns)))


def _in_alphabet(alphabet: ir.Ranges, s: str) -> bool:
    """Every code point of s lies in the normalized ranges alphabet (one of _alphabet_of's)."""
    return alphabet is _FULL_ALPHABET or _outside(alphabet).search(s) is None


@functools.lru_cache(maxsize=64)
def _outside(alphabet: ir.Ranges) -> "re.Pattern[str]":
    """A character class of the code points outside alphabet: declared names are checked
    against it per pattern, by the thousand in a large schema."""
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in
                                     ir.negate_ranges(alphabet)) + "]")


# patternProperties patterns' grammars (a declared name matched against a pattern), by
# pattern, at most _PATTERN_GRAMMARS_MAX of them (least recently used dropped)
_PATTERN_GRAMMARS: "OrderedDict[str, Any]" = OrderedDict()
_PATTERN_GRAMMARS_MAX = 512
_PATTERN_GRAMMARS_LOCK = threading.Lock()


def _pattern_expr(pattern: str, exprs: Optional[Dict[str, ir.Expr]]) -> ir.Expr:
    """searches.search_expr(pattern) (regex_to_expr(pattern, anchored=False) and inner anchors,
    lookaheads), read once per compile: exprs is the compile's
    memo (_Compiler._regex_exprs), shared by the name matches' grammars and the key
    languages (strings.pattern_expr), which parse the same pattern alike. Only a parse that
    succeeded is kept: a refused pattern is parsed again by each, so each names its error."""
    from .searches import search_expr
    if exprs is None:
        return search_expr(pattern)
    e = exprs.get(pattern)
    if e is None:
        e = exprs[pattern] = search_expr(pattern)
    return e


def _pattern_grammar(pattern: str, exprs: Optional[Dict[str, ir.Expr]] = None):
    from ..grammar import Grammar
    with _PATTERN_GRAMMARS_LOCK:
        got = _PATTERN_GRAMMARS.get(pattern)
        if got is not None:
            _PATTERN_GRAMMARS.move_to_end(pattern)
            return got
    g = ir.GrammarIR()
    g.add("root", _pattern_expr(pattern, exprs))
    got = Grammar.from_ir(g)
    with _PATTERN_GRAMMARS_LOCK:
        _PATTERN_GRAMMARS[pattern] = got
        while len(_PATTERN_GRAMMARS) > _PATTERN_GRAMMARS_MAX:
            _PATTERN_GRAMMARS.popitem(last=False)
    return got


def _pattern_matches(pattern: str, s: str, ptr: str,
                     exprs: Optional[Dict[str, ir.Expr]] = None) -> bool:
    """The decoded string s contains a match of pattern (ECMA-262, as the grammar reads it)."""
    try:
        expr = _pattern_expr(pattern, exprs)
        walked = _walk(pattern, expr, s)
        if walked is None:
            g = _pattern_grammar(pattern, exprs)
    except CompileError as e:
        raise CompileError(f"pattern {pattern!r}: {e.reason}", keyword="patternProperties",
                           pointer=ptr) from None
    try:
        data = s.encode("utf-8")
    except UnicodeEncodeError:
        raise CompileError("a name with a lone surrogate beside patternProperties",
                           keyword="patternProperties", pointer=ptr) from None
    if walked is not None:
        return walked
    m = g.matcher()
    return m.accept_bytes(data) and m.is_accepting()


def _walk(pattern: str, expr: ir.Expr, s: str) -> Optional[bool]:
    """s is in expr's language (pattern's, over code points), read by its Thompson NFA in
    the key space of its keys' alphabet (keys._KeySpace, where its key languages are made
    too) when s lies in that alphabet, else in the whole one's: a name's few code points
    cost a few state sets, where the pattern's byte automaton (built, determinized, a
    matcher per name) cost ~1 ms per pattern. None past the key NFA bound (the caller
    builds the automaton) or for a lone surrogate (refused)."""
    from . import keys
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        return None
    alphabet = _key_alphabet([pattern])
    if not _in_alphabet(alphabet, s):
        alphabet = _FULL_ALPHABET
    space = keys._key_space(alphabet)
    with space.lock:
        start = space.made.get((expr, space.FINAL))
        if start is None:
            if keys._thompson_states(expr, {}) > keys.MAX_KEY_NFA_STATES:
                return None
            start = space.frag(expr, space.FINAL)
        edges = space.edges
        closures = space.closures
        first = frozenset((start,))
        cur = closures.get(first)
        if cur is None:
            cur = closures[first] = space.closure(first)
        for ch in s:
            c = ord(ch)
            nxt = frozenset(t for q in cur for a, b, t in edges[q] if a <= c <= b)
            cur = closures.get(nxt)
            if cur is None:
                cur = closures[nxt] = space.closure(nxt)
            if not cur:
                return False
        return space.FINAL in cur


def _name_matches(pattern: str, name: str, ptr: str,
                  exprs: Optional[Dict[str, ir.Expr]] = None) -> bool:
    """A declared name matches a patternProperties pattern, read alike by ECMA-262 and
    Python's re (refused where the two could disagree: a code point outside _key_alphabet)."""
    if not _in_alphabet(_key_alphabet([pattern]), name):
        raise CompileError(f"the name {name!r} beside the pattern {pattern!r}: ECMA-262 and "
                           "Python's re may read it differently", keyword="patternProperties",
                           pointer=ptr)
    return _pattern_matches(pattern, name, ptr, exprs)


def _universal_pattern(pattern: Any, exprs: Optional[Dict[str, ir.Expr]] = None) -> bool:
    """Every string contains a match: no anchors or lookaround, and the empty string matches."""
    if not isinstance(pattern, str):
        return False
    if "^" in pattern or "$" in pattern:      # an anchor can make the empty match position-bound
        return pattern in ("^.*", ".*$", "^[\\s\\S]*$")
    return _pattern_matches(pattern, "", "", exprs)
