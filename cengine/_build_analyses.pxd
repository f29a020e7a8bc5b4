# Analyses of the builder's positions (_build_analyses.pyx), called by the Builder.
from cengine._build_positions cimport Positions

cdef list nullable(Positions pos)
cdef object left_cycle(Positions pos)
cdef list shortest(Positions pos)
