"""Type stubs of cengine._keytrie (Cython, C++): the positions of an open object's free keys."""
from typing import Any, Dict

import numpy as np

# int32: P, E, C, then finals, e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to, for
# Builder.add_positions
def positions(node: Any, rule_index: Dict[str, int]) -> np.ndarray: ...
def escape_positions(node: Any, rule_index: Dict[str, int]) -> np.ndarray: ...
