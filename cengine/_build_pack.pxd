# The builder's last pass (_build_pack.pyx), called by the Builder.
from cengine._build_positions cimport Positions

cdef dict finish(Positions pos, list rule_ws, list rule_container, list names)
