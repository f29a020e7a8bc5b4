# distutils: language = c++
# Design: the last pass of the builder: dead edges pruned (those into positions that cannot
# complete), the flags, the closure chains (the frames a position reaches without consuming a
# byte, interned as stack nodes in a _StackedNodes, inline from _build_hash.pxd), and every
# table packed into the numpy arrays cengine.automaton.Automaton holds.
"""Pruning, closure chains and packing of the automaton builder's tables (cengine._build's
kernels)."""
from libc.stdint cimport int64_t, int32_t, uint8_t, uint32_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_C_CONTIGUOUS

import numpy as np

from .errors import LimitError

cimport cengine._automaton as _a
from cengine._build_hash cimport _I64Map, _NodeSlot, _StackedNodes
from cengine._build_positions cimport Positions

cdef int MAX_CHAIN_DEPTH = 256


# The tables are made with np.empty and filled through the buffer protocol: a typed
# memoryview per table (its format parsed and checked each time) cost more than the copy,
# and a build makes twenty of them.
cdef object _np_empty = np.empty
cdef object _DT_I32 = np.dtype(np.int32)
cdef object _DT_U8 = np.dtype(np.uint8)
cdef object _DT_I64 = np.dtype(np.int64)


cdef object _new_array(size_t n, dtype, void** data):
    """A new C-contiguous array of n items of dtype; data: where its items start (valid
    while the array lives: numpy arrays made here are never resized)."""
    cdef Py_buffer view
    a = _np_empty(n, dtype)
    PyObject_GetBuffer(a, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
    data[0] = view.buf
    PyBuffer_Release(&view)
    return a


cdef object _i32(vector[int]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_I32, &d)
    if v.size():
        memcpy(d, v.data(), v.size() * sizeof(int))
    return a


cdef object _u8(vector[int]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_U8, &d)
    cdef uint8_t* m = <uint8_t*>d
    # the source through a pointer and its length in a local: a byte store may alias the
    # vector's own pointers (-fno-strict-aliasing), which kept the loop from vectorizing
    cdef const int* src = v.data()
    cdef size_t i, n = v.size()
    for i in range(n):
        m[i] = <uint8_t>src[i]
    return a


cdef object _i64(vector[int64_t]& v):
    cdef void* d
    a = _new_array(v.size(), _DT_I64, &d)
    if v.size():
        memcpy(d, v.data(), v.size() * sizeof(int64_t))
    return a


cdef struct _ChainNode:
    # finish's closure-chain node: the frame head over the stack node tail (0: the empty
    # stack), its depth, its chain number (-1: none yet), the last walk that met it as a chain
    int32_t head, tail, depth, chain, seen


cdef inline int _intern(_StackedNodes index, vector[int]& top, vector[_ChainNode]& nodes,
                        int q, int below) noexcept:
    """finish's node (q, below), made when new: (q, empty stack), the walks' top frames, are
    found by position in top, the others in the hash table."""
    cdef int node
    cdef _NodeSlot* at = NULL
    cdef _ChainNode x
    if below == 0:
        if top[q] >= 0:
            return top[q]
    else:
        at = index.find(q, below)
        if at.node >= 0:
            return at.node
    node = <int>nodes.size()
    if below == 0:
        top[q] = node
    else:
        index.fill(at, q, below, node)
    x.head = q
    x.tail = below
    x.depth = nodes[below].depth + 1
    x.chain = -1
    x.seen = -1
    nodes.push_back(x)
    return node


cdef dict finish(Positions pos, list rule_ws, list rule_container, list names):
    """Prune dead edges, compute flags and closure chains, pack the tables (a dict)."""
    cdef int P = <int>pos.finals.size()
    cdef int p, k, q, t, r, below, nb, node, j, n_live_e = 0, n_live_c = 0
    cdef int64_t key
    cdef vector[int] e_off, e_lo, e_hi, e_to, e_ws, c_off, c_rule, c_to
    cdef vector[uint8_t] rws, rcont, trivial
    cdef int flag
    for x in rule_ws:
        flag = 1 if x else 0      # (a typed local: Cython binds a conditional to a dangling ref)
        rws.push_back(flag)
    for x in rule_container:
        flag = 1 if x else 0
        rcont.push_back(flag)
    cdef const int64_t* L = pos.short_len.data()
    cdef const int* starts = pos.starts.data()
    cdef const int* fin = pos.finals.data()
    cdef const int* prule = pos.pos_rule.data()
    # drop what leads nowhere; most builds have nothing to drop, and then the tables are
    # the builder's own (no copy)
    cdef int NE = <int>pos.e_to.size(), NC = <int>pos.c_rule.size()
    for k in range(NE):
        if L[pos.e_to[k]] < _a.INF:
            n_live_e += 1
    for k in range(NC):
        if L[starts[pos.c_rule[k]]] < _a.INF and L[pos.c_to[k]] < _a.INF:
            n_live_c += 1
    cdef vector[int]* pe_off = &pos.e_off
    cdef vector[int]* pe_lo = &pos.e_lo
    cdef vector[int]* pe_hi = &pos.e_hi
    cdef vector[int]* pe_to = &pos.e_to
    cdef vector[int]* pe_ws = &pos.e_ws
    cdef vector[int]* pc_off = &pos.c_off
    cdef vector[int]* pc_rule = &pos.c_rule
    cdef vector[int]* pc_to = &pos.c_to
    if n_live_e < NE or n_live_c < NC:
        e_off.reserve(P + 1)
        c_off.reserve(P + 1)
        e_lo.reserve(n_live_e)
        e_hi.reserve(n_live_e)
        e_to.reserve(n_live_e)
        e_ws.reserve(n_live_e)
        c_rule.reserve(n_live_c)
        c_to.reserve(n_live_c)
        e_off.push_back(0)
        c_off.push_back(0)
        for p in range(P):
            for k in range(pos.e_off[p], pos.e_off[p + 1]):
                if L[pos.e_to[k]] < _a.INF:
                    e_lo.push_back(pos.e_lo[k])
                    e_hi.push_back(pos.e_hi[k])
                    e_to.push_back(pos.e_to[k])
                    e_ws.push_back(pos.e_ws[k])
            e_off.push_back(<int>e_lo.size())
            for k in range(pos.c_off[p], pos.c_off[p + 1]):
                if L[starts[pos.c_rule[k]]] < _a.INF and L[pos.c_to[k]] < _a.INF:
                    c_rule.push_back(pos.c_rule[k])
                    c_to.push_back(pos.c_to[k])
            c_off.push_back(<int>c_rule.size())
        pe_off = &e_off
        pe_lo = &e_lo
        pe_hi = &e_hi
        pe_to = &e_to
        pe_ws = &e_ws
        pc_off = &c_off
        pc_rule = &c_rule
        pc_to = &c_to
    cdef const int* eoff = deref(pe_off).data()
    cdef const int* coff = deref(pc_off).data()
    cdef const int* crule = deref(pc_rule).data()
    cdef const int* cto = deref(pc_to).data()
    # flags and clo_pop straight into their arrays
    cdef void* d
    pos_flags = _new_array(P, _DT_U8, &d)
    cdef uint8_t* flags = <uint8_t*>d
    clo_pop_a = _new_array(P, _DT_U8, &d)
    cdef uint8_t* clo_pop = <uint8_t*>d
    trivial.resize(P)
    for p in range(P):
        flag = fin[p] != 0 and eoff[p] == eoff[p + 1] and coff[p] == coff[p + 1]
        trivial[p] = <uint8_t>flag    # (through a local: see above)
        r = prule[p]
        flags[p] = (_a.FLAG_FINAL * (fin[p] != 0)) | (_a.FLAG_WS * (rws[r] != 0)) \
            | (_a.FLAG_CONTAINER * (rcont[r] != 0))

    # closure chains. A stack below the top frame is an interned node (head, tail);
    # node 0 is the empty stack. A chain is the node (q, below).
    cdef vector[_ChainNode] nodes
    cdef _ChainNode* nd
    cdef _StackedNodes node_index = _StackedNodes()
    cdef _I64Map visited = None     # made for the first walk that outgrows walk_keys
    node_index.reset(P // 2)
    cdef vector[int64_t] work, walk_keys
    cdef vector[int] clo_chain, chain_nodes
    # (room reserved is not touched: a generous guess costs no page faults, growing
    # copies; the corpus stays below 4 chains per position, about P + calls)
    nodes.reserve(2 * P + NC + 1)
    clo_chain.reserve(2 * P + NC + 1)
    chain_nodes.reserve(P + 1)
    cdef _ChainNode empty
    empty.head = -1
    empty.tail = 0
    empty.depth = 0
    empty.chain = -1
    empty.seen = -1
    nodes.push_back(empty)
    clo_off_a = _new_array(P + 1, _DT_I32, &d)
    cdef int32_t* clo_off = <int32_t*>d
    clo_off[0] = 0
    cdef bint pop, big
    cdef size_t i
    # the node of (q, empty stack), once interned: most walks are that one frame
    cdef vector[int] top_node
    top_node.assign(P, -1)
    for p in range(P):
        pop = False
        work.clear()
        work.push_back((<int64_t>p) << 32)
        # the frames this walk has met: a short list (most walks stop at their first
        # frame), in a hash set stamped with p once the list is long
        walk_keys.clear()
        big = False
        while work.size():
            key = work.back()
            work.pop_back()
            q = <int>(key >> 32)
            below = <int>(<uint32_t>key)
            if big:
                if visited.get(key) == p:
                    continue
                visited.put(key, p)
            else:
                for i in range(walk_keys.size()):
                    if walk_keys[i] == key:
                        break
                else:
                    i = walk_keys.size()
                if i < walk_keys.size():
                    continue
                walk_keys.push_back(key)
                if walk_keys.size() > 16:
                    big = True
                    if visited is None:
                        # (grows with the frames of the long walks: a few walks are)
                        visited = _I64Map()
                    for i in range(walk_keys.size()):
                        visited.put(walk_keys[i], p)
            if eoff[q] != eoff[q + 1]:
                if below == 0 and top_node[q] >= 0:
                    node = top_node[q]
                else:
                    node = _intern(node_index, top_node, nodes, q, below)
                nd = &nodes[node]
                if nd.seen != p:
                    nd.seen = p
                    j = nd.chain
                    if j < 0:
                        j = nd.chain = <int>chain_nodes.size()
                        chain_nodes.push_back(node)
                    clo_chain.push_back(j)
            if fin[q]:
                if below:
                    work.push_back(((<int64_t>nodes[below].head) << 32) | nodes[below].tail)
                else:
                    pop = True
            for k in range(coff[q], coff[q + 1]):
                r = crule[k]
                t = cto[k]
                if trivial[t]:
                    nb = below
                else:
                    if nodes[below].depth + 1 > MAX_CHAIN_DEPTH:
                        raise LimitError("rule calls nest more than 256 deep without consuming a byte",
                                         rule=names[r])
                    if below == 0 and top_node[t] >= 0:
                        nb = top_node[t]
                    else:
                        nb = _intern(node_index, top_node, nodes, t, below)
                work.push_back(((<int64_t>starts[r]) << 32) | nb)
        clo_off[p + 1] = <int32_t>clo_chain.size()
        clo_pop[p] = pop
    # the chains' frames, top first, straight into their arrays (sizes known: one frame
    # per level of each chain's node)
    cdef int n_chains = <int>chain_nodes.size(), n_frames = 0
    for j in range(n_chains):
        n_frames += nodes[chain_nodes[j]].depth
    chain_off_a = _new_array(n_chains + 1, _DT_I32, &d)
    cdef int32_t* chain_off = <int32_t*>d
    chain_pos_a = _new_array(n_frames, _DT_I32, &d)
    cdef int32_t* chain_pos = <int32_t*>d
    chain_off[0] = 0
    k = 0
    for j in range(n_chains):
        node = chain_nodes[j]
        while node:
            chain_pos[k] = nodes[node].head
            k += 1
            node = nodes[node].tail
        chain_off[j + 1] = k

    short_len = _i64(pos.short_len)
    return dict(
        rule_start=_i32(pos.starts), pos_rule=_i32(pos.pos_rule), pos_flags=pos_flags,
        edge_off=_i32(deref(pe_off)), edge_lo=_u8(deref(pe_lo)), edge_hi=_u8(deref(pe_hi)),
        edge_to=_i32(deref(pe_to)), edge_ws=_u8(deref(pe_ws)), call_off=_i32(deref(pc_off)),
        call_rule=_i32(deref(pc_rule)), call_to=_i32(deref(pc_to)),
        clo_off=clo_off_a, clo_chain=_i32(clo_chain), chain_off=chain_off_a,
        chain_pos=chain_pos_a, clo_pop=clo_pop_a, short_len=short_len,
        short_kind=_u8(pos.short_kind), short_byte=_u8(pos.short_byte),
        short_rule=_i32(pos.short_rule), short_to=_i32(pos.short_to))
