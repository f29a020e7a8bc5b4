# Per-position mask tables (see _tables.pyx): PosTable's fields, which _mask.pyx's fill reads
# directly, and make_table, which packs one position's walk results.
from libc.stdint cimport int32_t, uint32_t
cimport numpy as cnp

from cengine._i32vec cimport I32Vec
from cengine._trie cimport TokenTrie, TrieC


cdef class PosTable:
    cdef readonly object bits          # uint32[n_words] or None
    cdef readonly object ids           # int32 ids when the list is smaller than the bitset
    cdef readonly object cond          # int32[k, 3] (token, ws, pmax)
    cdef readonly object groups        # list of (ws, pmax, trie arrays)
    cdef const uint32_t* bits_p
    cdef const int32_t* ids_p
    cdef int32_t n_ids
    cdef const int32_t* cond_p
    cdef int32_t n_cond
    cdef int32_t n_groups
    cdef int32_t* g_ws
    cdef int32_t* g_pm
    cdef TrieC* g_trie
    cdef readonly int32_t n_accepted
    cdef readonly int32_t n_frames     # 2 for a pair table (see TokenTables.pair_table)


cdef PosTable make_table(TokenTrie trie, cnp.ndarray bits, const I32Vec* acc,
                         const I32Vec* cond, const I32Vec* exits, int32_t n_words,
                         TokenTrie runs=*)
