"""Type stubs of cengine._numdfa (Cython, C++): a bounded number's automaton, explored and
minimized (cengine.schema.numbers._automaton; the Python reference is numbers._explore,
_minimize and _as_dfa)."""
from typing import Any, List, Tuple

# int_bounds / frac_bounds: up to two (integer digits, fraction digits, closed, upper,
# negative value, positive value) each. k -1: no multipleOf. Returns (kind, a, b): 0 nothing
# accepted; 1 more than max_raw explored states; 2 (a, b) the explored automaton as
# numbers._explore returns it ([{symbol: target}], [bool]); 3 (a, b) the minimal automaton's
# ir.Dfa edges and accepting
def number_automaton(integer: bool, int_bounds: List[Tuple[bytes, bytes, bool, bool, bool, bool]],
                     frac_bounds: List[Tuple[bytes, bytes, bool, bool, bool, bool]], p: int,
                     k: int, max_raw: int, raw: bool = False) -> Tuple[int, Any, Any]: ...
