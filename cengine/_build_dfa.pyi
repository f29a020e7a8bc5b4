"""Type stubs of cengine._build_dfa (Cython, C++): the automaton builder's subset
construction."""

DFA_GROWTH_SLACK: int           # DFA states a rule may always have under a growth limit

class Determinizer:
    """The subset construction's state between rules of one build (cengine._build.Builder
    keeps one; its work is reached from Cython only)."""
    # max_growth: DFA states a rule may have per NFA state reached (plus DFA_GROWTH_SLACK),
    # 0: any
    def __init__(self, max_growth: int = 0) -> None: ...
