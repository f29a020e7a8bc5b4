"""Type stubs of cengine._mask (Cython): the mask tables of a grammar over a vocabulary."""
from typing import Any, Dict, List, Union, Tuple

import numpy as np

from ._matcher import Matcher
from ._tables import PosTable
from ._trie import TokenTrie
from .vocab import Vocabulary

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
    def slice_depth(self, p: int) -> int: ...
    def fill(self, m: Matcher, out: np.ndarray) -> None: ...
