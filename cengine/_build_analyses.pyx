# distutils: language = c++
# Design: the analyses over the minimised positions, before packing: nullable rules, the
# first left-recursive cycle (the error the builder raises), and the shortest completion of
# every position (Bellman-Ford sweeps in the frozen oracle's order, the rules that cannot
# change skipped). Read the Builder's position tables (_build_positions); shortest fills its
# short_* tables.
"""Analyses of the automaton builder's positions: nullable rules, left recursion, shortest
completions (cengine._build's kernels)."""
from libc.stdint cimport int64_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free
from libcpp.vector cimport vector
from libcpp.algorithm cimport sort as cpp_sort, unique as cpp_unique

cimport cengine._automaton as _a
from cengine._build_positions cimport Positions


cdef list nullable(Positions pos):
    """Rules whose start reaches a final position through nullable calls only (fixpoint)."""
    cdef int R = <int>pos.starts.size()
    cdef int P = <int>pos.finals.size()
    cdef vector[int] nul, seen, stack
    cdef int r, p, k, cr, t, ok, st = 0
    cdef bint changed = True
    nul.assign(R, 0)
    seen.assign(P, 0)
    while changed:
        changed = False
        for r in range(R):
            if nul[r]:
                continue
            st += 1
            stack.clear()
            stack.push_back(pos.starts[r])
            seen[pos.starts[r]] = st
            ok = 0
            while stack.size() and not ok:
                p = stack.back()
                stack.pop_back()
                if pos.finals[p]:
                    ok = 1
                    break
                for k in range(pos.c_off[p], pos.c_off[p + 1]):
                    cr = pos.c_rule[k]
                    t = pos.c_to[k]
                    if nul[cr] and seen[t] != st:
                        seen[t] = st
                        stack.push_back(t)
            if ok:
                nul[r] = 1
                changed = True
    return [bool(x) for x in nul]


cdef object left_cycle(Positions pos):
    """The first left-recursive cycle of rules, [r, ..., r], or None: the rules called
    before any byte is consumed (through nullable callees) form the graph, searched depth
    first from each rule in turn, callees ascending (the order the Python check had, so
    the error names the same cycle)."""
    cdef int R = <int>pos.starts.size()
    cdef int P = <int>pos.finals.size()
    cdef vector[int] nul, seen, stack, l_off, l_to, colour, path, it, row
    cdef int r, p, k, cr, t, st = 0, r0, top, nxt, i, j, flag
    for x in nullable(pos):
        flag = 1 if x else 0      # (a typed local: Cython binds a conditional to a dangling ref)
        nul.push_back(flag)
    seen.assign(P, 0)
    l_off.push_back(0)
    for r in range(R):
        st += 1
        row.clear()
        stack.clear()
        stack.push_back(pos.starts[r])
        seen[pos.starts[r]] = st
        while stack.size():
            p = stack.back()
            stack.pop_back()
            for k in range(pos.c_off[p], pos.c_off[p + 1]):
                cr = pos.c_rule[k]
                t = pos.c_to[k]
                row.push_back(cr)
                if nul[cr] and seen[t] != st:
                    seen[t] = st
                    stack.push_back(t)
        cpp_sort(row.begin(), row.end())
        row.erase(cpp_unique(row.begin(), row.end()), row.end())
        l_to.insert(l_to.end(), row.begin(), row.end())
        l_off.push_back(<int>l_to.size())
    colour.assign(R, 0)
    for r0 in range(R):
        if colour[r0]:
            continue
        path.clear()
        it.clear()
        path.push_back(r0)
        it.push_back(l_off[r0])
        colour[r0] = 1
        while path.size():
            top = <int>path.size() - 1
            r = path[top]
            if it[top] == l_off[r + 1]:
                colour[r] = 2
                path.pop_back()
                it.pop_back()
                continue
            nxt = l_to[it[top]]
            it[top] += 1
            if colour[nxt] == 1:
                for i in range(<int>path.size()):
                    if path[i] == nxt:
                        break
                return [path[j] for j in range(i, <int>path.size())] + [nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                path.push_back(nxt)
                it.push_back(l_off[nxt])
    return None


cdef list shortest(Positions pos):
    """Shortest completion per position: Bellman-Ford sweeps from the last position down
    with strict improvement (the reference's tie-breaking). Returns short_len[] of the starts.

    A sweep looks again only at the rules (runs of positions) whose evaluation could change
    something: a position changes only when a value it reads went down, and a rule's
    positions read their own values and the starts of their callees. So a rule is skipped
    when no callee's start went down since its last look, and that look changed nothing or
    the rule leads forward only (each edge and call return to the same or a later position:
    one descending look is its fixpoint for the same callee starts). The skipped looks
    would have changed nothing: the same updates in the same order as whole sweeps."""
    cdef int P = <int>pos.finals.size()
    cdef int R = <int>pos.starts.size()
    cdef int p, k, t, r, b, e, nb, bi, j, clock = 0, st
    cdef int64_t best, v
    cdef bint changed = True, fwd, any_changed
    pos.short_len.assign(P, _a.INF)
    pos.short_kind.assign(P, 0)
    pos.short_byte.assign(P, 0)
    pos.short_rule.assign(P, 0)
    pos.short_to.assign(P, 0)
    cdef int64_t* L = pos.short_len.data()
    cdef int* s_kind = pos.short_kind.data()
    cdef int* s_byte = pos.short_byte.data()
    cdef int* s_rule = pos.short_rule.data()
    cdef int* s_to = pos.short_to.data()
    cdef const int* fin = pos.finals.data()
    cdef const int* e_off = pos.e_off.data()
    cdef const int* e_to = pos.e_to.data()
    cdef const int* e_lo = pos.e_lo.data()
    cdef const int* c_off = pos.c_off.data()
    cdef const int* c_rule = pos.c_rule.data()
    cdef const int* c_to = pos.c_to.data()
    cdef const int* starts = pos.starts.data()
    cdef const int* prule = pos.pos_rule.data()
    for p in range(P):
        if fin[p]:
            L[p] = 0
    # what a look reads, per position: the first byte edge to each target other than the
    # position itself, then its calls but those returning to the position itself. A later
    # edge to the same target offers the same 1 + L[t], a self loop 1 + L[p] and a call
    # back to p L[start] + L[p], none strictly less than what the look holds by then, so
    # none can be the recorded one: the same updates from fewer reads (a string's
    # character class is many ranges to a few targets). Each record is (the position
    # whose value it adds: P for a byte edge, whose slot holds 1, or the callee's start;
    # target; byte or rule), so one loop prices both kinds.
    cdef size_t ne = pos.e_to.size() + pos.c_to.size(), nq = 0
    cdef int* qo = <int*>malloc((P + 1) * sizeof(int))
    cdef int* qa = <int*>malloc((ne + 1) * sizeof(int))
    cdef int* qt = <int*>malloc((ne + 1) * sizeof(int))
    cdef int* ql = <int*>malloc((ne + 1) * sizeof(int))
    cdef int* sa = <int*>malloc((P + 1) * sizeof(int))
    if qo == NULL or qa == NULL or qt == NULL or ql == NULL or sa == NULL:
        free(qo); free(qa); free(qt); free(ql); free(sa)
        raise MemoryError()
    memset(sa, 0xff, (P + 1) * sizeof(int))
    for p in range(P):
        qo[p] = <int>nq
        sa[p] = p
        for k in range(e_off[p], e_off[p + 1]):
            t = e_to[k]
            if sa[t] != p:
                sa[t] = p
                qa[nq] = P
                qt[nq] = t
                ql[nq] = e_lo[k]
                nq += 1
        for k in range(c_off[p], c_off[p + 1]):
            t = c_to[k]
            if t != p:
                qa[nq] = starts[c_rule[k]]
                qt[nq] = t
                ql[nq] = c_rule[k]
                nq += 1
    qo[P] = <int>nq
    free(sa)
    pos.short_len.push_back(1)     # the slot P a byte edge adds (popped at the end)
    L = pos.short_len.data()
    # the runs of positions of one rule (blocks, descending as the sweeps go), each with
    # its distinct callees (CSR), whether it leads forward only, and whether its targets
    # stay inside it (else: whole sweeps)
    cdef vector[int] blk_b, blk_e, blk_fwd, cal_off, cal, mark, start_of, start_time
    cdef vector[int] eval_time, blk_changed
    cdef bint local = True
    mark.assign(R, -1)
    start_of.assign(P, -1)
    for r in range(R):
        if starts[r] < 0 or starts[r] >= P or start_of[starts[r]] >= 0:
            local = False
            break
        start_of[starts[r]] = r
    cal_off.push_back(0)
    e = P
    while e > 0 and local:
        b = e - 1
        while b > 0 and prule[b - 1] == prule[e - 1]:
            b -= 1
        nb = <int>blk_b.size()
        fwd = True
        for p in range(b, e):
            for k in range(e_off[p], e_off[p + 1]):
                t = e_to[k]
                if t < p:
                    fwd = False
                    if t < b:
                        local = False
                elif t >= e:
                    local = False
            for k in range(c_off[p], c_off[p + 1]):
                t = c_to[k]
                if t < p:
                    fwd = False
                    if t < b:
                        local = False
                elif t >= e:
                    local = False
                r = c_rule[k]
                if mark[r] != nb:
                    mark[r] = nb
                    cal.push_back(r)
        blk_b.push_back(b)
        blk_e.push_back(e)
        blk_fwd.push_back(<int>fwd)
        cal_off.push_back(<int>cal.size())
        e = b
    nb = <int>blk_b.size()
    start_time.assign(R, 0)         # clock of the look that last lowered the rule's start
    eval_time.assign(nb, 0)         # clock of the block's last look (0: none yet)
    blk_changed.assign(nb, 0)
    while changed:
        changed = False
        for bi in range(nb if local else 1):
            if local:
                if eval_time[bi]:
                    any_changed = blk_changed[bi] and not blk_fwd[bi]
                    j = cal_off[bi]
                    while not any_changed and j < cal_off[bi + 1]:
                        any_changed = start_time[cal[j]] >= eval_time[bi]
                        j += 1
                    if not any_changed:
                        continue
                clock += 1
                eval_time[bi] = clock
                b = blk_b[bi]
                e = blk_e[bi]
            else:
                b = 0
                e = P
            any_changed = False
            for p in range(e - 1, b - 1, -1):
                best = L[p]
                for k in range(qo[p], qo[p + 1]):
                    t = qt[k]
                    v = L[qa[k]] + L[t]
                    if v < best:
                        best = v
                        s_to[p] = t
                        if qa[k] == P:
                            s_kind[p] = 1
                            s_byte[p] = ql[k]
                        else:
                            s_kind[p] = 2
                            s_rule[p] = ql[k]
                if best < L[p]:
                    L[p] = best
                    any_changed = True
                    if local and start_of[p] >= 0:
                        start_time[start_of[p]] = clock
            if local:
                blk_changed[bi] = <int>any_changed
            if any_changed:
                changed = True
    free(qo); free(qa); free(qt); free(ql)
    pos.short_len.pop_back()
    return [L[starts[r]] for r in range(R)]
