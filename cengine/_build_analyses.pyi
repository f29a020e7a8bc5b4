"""Type stubs of cengine._build_analyses (Cython, C++): nullable rules, left recursion and
shortest completions of the automaton builder's positions, reached from Cython only
(cengine._build.Builder)."""
