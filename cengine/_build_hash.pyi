"""Type stubs of cengine._build_hash (Cython, C++): the automaton builder's hash tables,
reached from Cython only (cimport of _build_hash.pxd); nothing public for Python."""
