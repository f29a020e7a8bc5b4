"""Names against patternProperties patterns: whether a declared name matches a pattern
(read as ECMA-262 reads it, by the pattern's own grammar), whether every name does, and the
alphabet of the extra keys beside a pattern. Read by the object compiler and by allOf merges
(which value schemas a name meets)."""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from .. import ir
from ..errors import CompileError

# extra keys beside a narrow patternProperties pattern that uses a construct ECMA-262 and
# Python's re read differently outside printable ASCII (keys.py): printable ASCII only
PATTERN_KEY_ALPHABET = (0x20, 0x7E)
_DIALECT_SENSITIVE = re.compile(r"\\[dwsDWSbB]|\.|\$")


def _key_alphabet(patterns: List[str]) -> Tuple[int, int]:
    if any(_DIALECT_SENSITIVE.search(p.replace("\\\\", "")) for p in patterns):
        return PATTERN_KEY_ALPHABET
    return (0, ir.MAX_UNICODE)


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
    lo, hi = _key_alphabet([pattern])
    alphabet = (lo, hi) if all(lo <= ord(c) <= hi for c in s) else (0, ir.MAX_UNICODE)
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
    Python's re (refused where the two could disagree, see PATTERN_KEY_ALPHABET)."""
    lo, hi = _key_alphabet([pattern])
    if not all(lo <= ord(c) <= hi for c in name):
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
