"""Type stubs of cengine._build_positions (Cython, C++): the automaton builder's position
tables and compile-work budget (the base of cengine._build.Builder)."""

class Positions:
    """Every rule's positions (CSR tables) and the compile work spent making them."""
    used: int                   # compile work spent so far (units of MAX_COMPILE_WORK)
