"""Type stubs of cengine._build_pack (Cython, C++): pruning, closure chains and packing of the
automaton builder's tables, reached from Cython only (cengine._build.Builder.finish)."""
