"""Type stubs of cengine._build_inline (Cython, C++): the automaton builder's inlining pass."""
from typing import Any, Dict, Set, Tuple

UNROLL_INLINE_MAX: int          # cengine.ir.UNROLL_INLINE_MAX, as the pass read it

def inline_small_rules(grammar: Any, ws_type: type, inline_max_match: int,
                       inline_max_size: int, any_order: Any = None
                       ) -> Tuple[Dict[str, Any], Dict[str, Set[str]]]: ...
def _recursive_rules(refs: Dict[str, Set[str]]) -> Set[str]: ...
