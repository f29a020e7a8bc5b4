"""Type stubs of cengine._build (Cython, C++): the automaton builder (its phases in the
cengine._build_* modules)."""
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._build_nfa import RuleNfa
from ._build_positions import Positions

FLAG_FINAL: int
FLAG_WS: int
FLAG_CONTAINER: int
INF: int

class Builder(Positions):
    """The positions of a grammar's rules, built phase by phase (cengine._build_* modules)."""
    # max_growth: DFA states a rule may have per NFA state reached (plus DFA_GROWTH_SLACK),
    # 0: any;
    # limit_name: how the work limit is named in its error
    def __init__(self, limit: int, max_positions: int, max_growth: int = 0,
                 limit_name: str = "MAX_COMPILE_WORK") -> None: ...
    @property
    def n_positions(self) -> int: ...
    failed_rule: int            # add_rules: the rule being built when one raised (else -1)
    failed_phase: int           # 0 any-order positions, 1 NFA, 2 subset construction
    def add_rules(self, names: List[str], exprs: Dict[str, Any], whitespace: List[bool],
                  rule_index: Dict[str, int], ws_type: type, share: bool, max_nfa_states: int,
                  any_order: Any, any_order_positions: Any,
                  kept_keys: Optional[List[Any]] = None,
                  kept: Optional[Dict[Any, Tuple[np.ndarray, int]]] = None) -> None: ...
    def add_rule(self, rule: int, nfa: RuleNfa, start: int, accept: int) -> None: ...
    # packed: cengine._anyorder.positions' int32 array (P, E, C, then the tables)
    def add_positions(self, rule: int, packed: np.ndarray) -> None: ...
    def minimize(self, max_rounds: int, kept_keys: Optional[List[Any]] = None,
                 kept: Optional[Dict[Any, Tuple[np.ndarray, int]]] = None,
                 minimal: Optional[Dict[Any, Tuple[np.ndarray, np.ndarray]]] = None
                 ) -> Tuple[int, int]: ...
    def nullable(self) -> List[bool]: ...
    def left_cycle(self) -> Optional[List[int]]: ...
    def shortest(self) -> List[int]: ...
    def finish(self, rule_ws: List[bool], rule_container: List[bool],
               names: List[str]) -> Dict[str, np.ndarray]: ...
