"""Pure-Python test oracles, slow and obvious on purpose, that the engine must agree with:
`reference.ReferenceMatcher` (matcher and closer) and `automaton_reference.build_reference`
(the automaton builder). They live with the tests, not in the installed package."""
from __future__ import annotations


def reference_matcher(grammar, vocab=None):
    """The oracle's matcher over a compiled cengine.Grammar (what Grammar.matcher is to the
    Cython matcher)."""
    from .reference import ReferenceMatcher
    return ReferenceMatcher(grammar.automaton, vocab)
