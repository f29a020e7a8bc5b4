"""Type stubs of cengine._build_ir (Cython): the IR's classes and slot offsets for the
automaton builder's passes, reached from Cython only (cimport of _build_ir.pxd)."""
