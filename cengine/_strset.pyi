"""Type stubs of cengine._strset (Cython, C++): the minimal DFA of a finite set of strings."""
from typing import Iterable, Tuple

# (edges, accepting, longest, size): the fields of an ir.Dfa (state 0 starts; edges[q] sorted,
# disjoint (lo, hi, target) byte ranges; the longest string's length; states plus edges)
def string_set_dfa(words: Iterable[bytes]) -> Tuple[Tuple[Tuple[Tuple[int, int, int], ...], ...],
                                                    Tuple[bool, ...], float, int]: ...
