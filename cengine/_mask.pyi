"""Type stubs of cengine._mask (Cython): the mask tables of a grammar over a vocabulary."""
from typing import Any, Dict, List, Union, Tuple

import numpy as np

from ._matcher import Matcher
from ._tables import PosTable
from ._trie import TokenTrie
from .vocab import Vocabulary

TABLE_LOG: Any                  # None, or a list every table build appends its profile to
NARROW_FIRST_BYTES: int
DIRECT_VISITS: int

class TokenTables:
    """Mask tables of one grammar over one vocabulary (built lazily per position)."""
    trie: TokenTrie
    tables: Dict[Union[int, Tuple[int, int]], PosTable]
    def __init__(self, automaton: Any, vocab: Vocabulary) -> None: ...
    def shared_positions(self) -> List[int]: ...
    def table(self, p: int) -> PosTable: ...
    def pair_table(self, q: int, p: int) -> PosTable: ...
    def class_depth(self, p: int, lo: int, hi: int, mixed: bool = ...) -> int: ...
    def slice_depth(self, p: int) -> int: ...
    def fill(self, m: Matcher, out: np.ndarray) -> None: ...

def use_step_cache(on: bool) -> None: ...
