# Minimisation of the builder's positions (_build_minimize.pyx), called by the Builder.
from cengine._build_positions cimport Positions

cdef tuple minimize(Positions pos, int max_rounds, list kept_keys, dict kept, dict minimal)
