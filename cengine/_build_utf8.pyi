"""Type stubs of cengine._build_utf8 (Cython): UTF-8 byte-range sequences of code points."""
from typing import List, Tuple

def _utf8_sequences(lo: int, hi: int) -> List[Tuple[Tuple[int, int], ...]]: ...
