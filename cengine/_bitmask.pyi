"""Type stubs of cengine._bitmask (Cython): the Python entry point over masks."""
import numpy as np

def apply_mask(logits: np.ndarray, mask: np.ndarray) -> None:
    """Set logits[i] = -inf in place wherever bit i of the int32 mask is 0 (float32 logits)."""
