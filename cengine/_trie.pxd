# The token trie of a vocabulary (see _trie.pyx): its C view TrieC, which the walks of
# _mask.pyx and the suffix tries of _tables.pyx share, and the TokenTrie that owns the arrays.
from libc.stdint cimport int32_t, uint8_t, uint32_t

from cengine._i32vec cimport I32Vec, i32_push

cdef struct TrieC:
    const uint8_t* byte
    const int32_t* end
    const int32_t* tok_off
    const int32_t* tok_ids
    const int32_t* big          # per node: row of its child table, or -1 (few children)
    const int32_t* child_tab    # rows of 256: the child reached by each byte, or -1
    int32_t n_nodes
    int32_t max_len


cdef enum:
    TABLE_MIN_CHILDREN = 16     # nodes with this many children get a byte -> child table


cdef inline void set_tokens(const TrieC* t, int32_t x, uint32_t* bits, I32Vec* ids) noexcept nogil:
    cdef int32_t k, tok
    for k in range(t.tok_off[x], t.tok_off[x + 1]):
        tok = t.tok_ids[k]
        if ids != NULL:
            i32_push(ids, tok)
        else:
            bits[tok >> 5] |= (<uint32_t> 1) << (tok & 31)



cdef int trie_from_arrays(TrieC* t, tuple arrs) except -1


cdef class TokenTrie:
    cdef TrieC c
    cdef readonly object node_byte, node_end, tok_off, tok_ids, node_depth, node_big, child_tab
    cdef readonly int32_t n_words, vocab_size
    cdef readonly object eos_ids
    cdef readonly object tokens
    cdef object _slices
    cdef object _plain_len
    cdef object _slice_sizes
    cdef object _suffix_memo
    cdef object _ws_split
    cdef object _prune
    cdef object _ascii
    cdef object _class_slices
    cdef object _plain_chars
    cdef int32_t _longest_chars
    cdef object _char_slices
    cdef object _char_all
    cdef object _string_rest
