# UTF-8 byte-range sequences of code point sets (_build_utf8.pyx), for _build_nfa.
from libc.stdint cimport int64_t

cdef list _charset_sequences(ranges)
cdef int64_t _tail_id(tuple sq, int i) except -1
