"""Type stubs of cengine._build_inline (Cython, C++): the automaton builder's inlining pass."""
from typing import Any, Dict, List, Set, Tuple, Union

UNROLL_INLINE_MAX: int          # cengine.ir.UNROLL_INLINE_MAX, as the pass read it

def inline_small_rules(grammar: Any, ws_type: type, inline_max_match: int,
                       inline_max_size: int, any_order: Any = None, root_uses: bool = False
                       ) -> Tuple[Dict[str, Any], Union[Dict[str, Set[str]], List[str]]]: ...
def _recursive_rules(refs: Dict[str, Set[str]]) -> Set[str]: ...
