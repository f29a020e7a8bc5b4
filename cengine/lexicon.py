"""Lexicon front end: "the output is made only of these words" -> grammar IR.

A document is one or more words from the list, each pair separated by exactly one
separator from SEPARATORS, optionally ended by one mark from FINAL_MARKS. Words match
exactly (case-sensitive, byte for byte in UTF-8). See docs/lexicon.md for the full rules.

The word list becomes one rule whose expression is already factored as a prefix tree
(alternatives sharing a first byte are merged), so its DFA is the trie of the words: the
automaton and the mask walk follow trie edges and never scan the list. The document rule
calls the word rule once per word, so the trie exists once however many words are used.
"""
from __future__ import annotations

from typing import Iterable, List, Tuple

from . import ir
from .automaton import MAX_NFA_STATES
from .errors import CompileError, LimitError

# what may stand between two words: exactly one of these
SEPARATORS: Tuple[str, ...] = (" ", "\n", ", ", "; ", ": ", ". ", "! ", "? ")
# what may end the document after the last word: nothing or exactly one of these
FINAL_MARKS: Tuple[str, ...] = (".", "!", "?")

# documented limits
MAX_WORDS = 100_000
MAX_WORD_BYTES = 256
MAX_TOTAL_BYTES = 1 << 20     # sum of the distinct words' UTF-8 lengths (1 MiB)
# branch points factored along one path; deeper, the remaining suffixes are listed flat.
# Keeps the expression shallow for the recursive walkers of the IR (same language).
MAX_TRIE_NESTING = 32

WORD_RULE = "word"


def _clean(words: Iterable[str]) -> List[bytes]:
    """Validate, encode, drop empty words and duplicates; sorted for the trie builder."""
    if isinstance(words, (str, bytes)):
        raise CompileError("a lexicon is a list of words, not a single string")
    words = list(words)
    if len(words) > MAX_WORDS:
        raise LimitError(f"the lexicon has {len(words)} words, more than the limit of {MAX_WORDS}")
    out = set()
    total = 0
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise CompileError(f"lexicon word {i} is a {type(w).__name__}, not a string")
        try:
            b = w.encode("utf-8")
        except UnicodeEncodeError:
            raise CompileError(f"lexicon word {i} ({w!r}) holds a lone surrogate, "
                               f"which cannot appear in UTF-8 output") from None
        if len(b) > MAX_WORD_BYTES:
            raise LimitError(f"lexicon word {i} is {len(b)} bytes long, more than the limit "
                             f"of {MAX_WORD_BYTES}")
        if b and b not in out:
            out.add(b)
            total += len(b)
    if not out:
        raise CompileError("the lexicon has no non-empty word")
    if total > MAX_TOTAL_BYTES:
        raise LimitError(f"the lexicon's words total {total} bytes, more than the limit of "
                         f"{MAX_TOTAL_BYTES}")
    return sorted(out)


def _common_prefix(a: bytes, b: bytes, start: int) -> int:
    n = min(len(a), len(b))
    i = start
    while i < n and a[i] == b[i]:
        i += 1
    return i


def trie_expr(words: List[bytes], depth: int = 0, nesting: int = 0) -> ir.Expr:
    """The alternatives of `words` (sorted, distinct, sharing words[k][:depth]) as a prefix tree.

    Each node is Alt(end-of-word?, one branch per next byte); a branch starts with the
    longest literal its words share, so chains without choices stay single Bytes. Below
    MAX_TRIE_NESTING branch points the suffixes are plain alternatives (the DFA still
    merges them into the trie; only the NFA stops sharing their prefixes).
    """
    if nesting >= MAX_TRIE_NESTING and len(words) > 1:
        return ir.Alt(tuple(ir.Bytes(w[depth:]) for w in words))
    branches: List[ir.Expr] = []
    i = 0
    if len(words[0]) == depth:      # sorted: the word equal to the prefix comes first
        branches.append(ir.EMPTY)
        i = 1
    while i < len(words):
        j = i + 1
        b = words[i][depth]
        while j < len(words) and words[j][depth] == b:
            j += 1
        group = words[i:j]
        # sorted group: the first and last words bound the common prefix of all of them
        end = _common_prefix(group[0], group[-1], depth + 1)
        branches.append(ir.seq(ir.Bytes(group[0][depth:end]), trie_expr(group, end, nesting + 1)))
        i = j
    # branches are distinct by construction; building Alt directly skips ir.alt's dedup,
    # which would hash whole (deep) subtrees at every level
    return branches[0] if len(branches) == 1 else ir.Alt(tuple(branches))


def nfa_states(e: ir.Expr) -> int:
    """States the automaton builder's Thompson construction makes inside e (no recursion)."""
    n = 0
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Bytes):
            n += max(len(x.data) - 1, 0)
        elif isinstance(x, ir.Alt):
            n += 2 * len(x.items)
            stack.extend(x.items)
        elif isinstance(x, ir.Seq):
            n += len(x.items) - 1
            stack.extend(x.items)
    return n


def lexicon_to_ir(words: Tuple[str, ...]) -> ir.GrammarIR:
    """Documents: word (separator word)* [final mark], words from `words` (see module doc)."""
    clean = _clean(words)
    g = ir.GrammarIR()
    word = ir.Ref(WORD_RULE)
    sep = ir.alt(*(ir.lit(s) for s in SEPARATORS))
    final = ir.alt(*(ir.lit(s) for s in FINAL_MARKS))
    g.add("root", ir.seq(word, ir.repeat(ir.seq(sep, word), 0, None), ir.opt(final)))
    trie = trie_expr(clean)
    # refuse here, with a lexicon-specific message, what the automaton builder would refuse
    states = nfa_states(trie) + 2
    if states > MAX_NFA_STATES:
        raise LimitError(f"the lexicon's prefix tree needs {states} automaton states, more than "
                         f"the limit of {MAX_NFA_STATES}: use fewer or shorter words")
    g.add(WORD_RULE, trie)
    return g
