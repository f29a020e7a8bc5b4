"""Type stubs of cengine._slices (Cython): the exact slice search. Its kernel, slice_bfs, is a
C function for _mask.pyx (declared in _slices.pxd); the module has no public Python names."""
