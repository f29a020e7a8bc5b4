"""Type stubs of cengine._trie (Cython): the token trie of a vocabulary."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .vocab import Vocabulary

WS_BYTES: frozenset

TrieArrays = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int,
                   np.ndarray, np.ndarray]

_TRIES: Dict[Any, "TokenTrie"]

def trie_of(vocab: Vocabulary) -> "TokenTrie": ...

class TokenTrie:
    """Flat DFS token trie of one vocabulary (shared by every grammar)."""
    node_byte: np.ndarray
    node_end: np.ndarray
    tok_off: np.ndarray
    tok_ids: np.ndarray
    node_depth: np.ndarray
    node_big: np.ndarray
    child_tab: np.ndarray
    n_words: int
    vocab_size: int
    eos_ids: np.ndarray
    tokens: Sequence[bytes]
    def __init__(self, tokens: Sequence[bytes], eos_ids: Sequence[int],
                 keep: Optional[np.ndarray] = None,
                 items: Optional[List[Tuple[bytes, List[int]]]] = None) -> None: ...
    @property
    def n_nodes(self) -> int: ...
    def suffix_trie(self, exit_nodes: Tuple[int, ...],
                    runs: Optional["TokenTrie"] = None) -> Optional[TrieArrays]: ...
    def plain_lengths(self) -> np.ndarray: ...
    def slice_sizes(self) -> List[int]: ...
    def slice(self, k: int) -> Tuple[np.ndarray, "TokenTrie"]: ...
    def ws_split(self) -> Optional[Tuple["TokenTrie", "TokenTrie"]]: ...
    def nbytes(self) -> int: ...
