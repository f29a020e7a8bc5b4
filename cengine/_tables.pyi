"""Type stubs of cengine._tables (Cython): per-position mask tables and their sharing."""
from typing import Any, Hashable, List, Optional, Tuple

import numpy as np

from .lru import ByteLRU

SHARED_MAX_BYTES: int
SHARED_TABLES: ByteLRU["PosTable"]

def shared_tables_nbytes() -> int: ...

class PosTable:
    """The mask table of one position (or of a pair of frames)."""
    bits: Optional[np.ndarray]
    ids: Optional[np.ndarray]
    cond: np.ndarray
    groups: List[Tuple[int, int, Tuple[Any, ...]]]
    n_accepted: int
    n_frames: int
    def nbytes(self) -> int: ...

class RuleSignatures:
    """Structural keys of positions whose rule (with what it calls) is small."""
    def __init__(self, a: Any) -> None: ...
    def rule_digest(self, r: int) -> Optional[bytes]: ...
    def get(self, p: int) -> Optional[Tuple[bytes, int]]: ...
    def horizon_key(self, q: int, horizon: int) -> Tuple[Hashable, ...]: ...
    def positions(self) -> List[int]: ...
