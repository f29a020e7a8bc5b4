"""Type stubs of cengine._build_minimize (Cython, C++): minimisation of the automaton builder's
positions, reached from Cython only (cengine._build.Builder.minimize)."""
