# distutils: language = c++
# Design: minimisation of each rule's positions after the subset construction: merging from
# below, by strongly connected component, signatures hashed in a _SigTable (inline from
# _build_hash.pxd); see minimize's docstring. Reads and rewrites the Builder's position
# tables (_build_positions).
"""Minimisation of the automaton builder's positions (cengine._build's kernels)."""
from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector
from libcpp.algorithm cimport sort as cpp_sort

from cengine._build_hash cimport _SigTable
from cengine._build_positions cimport GIL_YIELD_UNITS, Positions, _no_op, pack_call_free


cdef inline int _signature(int p, const int* cl, int base, const int* fin,
                           const int* e_off, const int* lo, const int* hi, const int* ws,
                           const int* to, const int* c_off, const int* c_rule,
                           const int* c_to, int* out) noexcept nogil:
    """What position p does, in classes cl (indexed from base), written to out (room for
    2 + 2 edges + 2 calls): its final flag, its edge count, its byte edges (adjacent ranges
    into one class merged), each as two ints (hi | lo << 8 | ws << 16, then the class: a
    byte range packs into one int, so the signatures to hash and compare are half as long),
    its calls (rule, class). Returns its length."""
    cdef int k, t, at = 2, prev
    out[0] = fin[p]
    for k in range(e_off[p], e_off[p + 1]):
        t = cl[to[k] - base]
        if at > 2:
            prev = out[at - 2]
            if (prev & 0xFF) == lo[k] - 1 and (prev >> 16) == ws[k] and out[at - 1] == t:
                out[at - 2] = (prev & ~0xFF) | hi[k]
                continue
        out[at] = hi[k] | (lo[k] << 8) | (ws[k] << 16)
        out[at + 1] = t
        at += 2
    out[1] = (at - 2) >> 1              # edge count
    for k in range(c_off[p], c_off[p + 1]):
        out[at] = c_rule[k]
        out[at + 1] = cl[c_to[k] - base]
        at += 2
    return at


cdef bint _loops_apart(Positions pos, int b, int e) noexcept:
    """Whether minimize would merge none of the positions [b, e) of one rule, seen from
    their shape (an any-order object's): every position between the first and the last
    loops to itself on one byte x (the second's first loop), the first and the last have
    no edge on x, and one of those two is final, the other not. Two positions looping on
    x never merge (their signatures' edges on x name their own classes, apart until they
    merge: none can be first), one that loops on x never merges with one without an edge
    on x, and the first and the last differ in their final flag."""
    cdef const int* e_off = pos.e_off.data()
    cdef const int* e_lo = pos.e_lo.data()
    cdef const int* e_hi = pos.e_hi.data()
    cdef const int* e_to = pos.e_to.data()
    cdef int p, k, x = -1
    cdef bint loops
    if e - b < 3 or (pos.finals[b] != 0) == (pos.finals[e - 1] != 0):
        return False
    for k in range(e_off[b + 1], e_off[b + 2]):
        if e_to[k] == b + 1:
            x = e_lo[k]
            break
    if x < 0:
        return False
    for p in (b, e - 1):
        for k in range(e_off[p], e_off[p + 1]):
            if e_lo[k] <= x <= e_hi[k]:
                return False
    for p in range(b + 1, e - 1):
        loops = False
        for k in range(e_off[p], e_off[p + 1]):
            if e_lo[k] <= x <= e_hi[k]:
                loops = e_to[k] == p
                break
        if not loops:
            return False
    return True


cdef bint _forward_only(Positions pos, int b, int e) noexcept:
    """Whether every byte edge and call return of the positions [b, e) of one rule leads
    to the same or a later position (the subset construction numbers a rule without
    cycles that way unless two paths meet): then the rule needs no Tarjan (_sccs)."""
    cdef const int* e_off = pos.e_off.data()
    cdef const int* e_to = pos.e_to.data()
    cdef const int* c_off = pos.c_off.data()
    cdef const int* c_to = pos.c_to.data()
    cdef int p, k
    for p in range(b, e):
        for k in range(e_off[p], e_off[p + 1]):
            if e_to[k] < p:
                return False
        for k in range(c_off[p], c_off[p + 1]):
            if c_to[k] < p:
                return False
    return True


cdef void _sccs(Positions pos, int b, int e, vector[int]& members, vector[int]& comp_off,
               vector[int]& index, vector[int]& low, vector[int]& stack,
                vector[int]& dfs_p, vector[int]& dfs_k) noexcept:
    """The strongly connected components of the positions [b, e) of one rule over byte
    edges and call returns (Tarjan, iterative), from b first: component c is
    members[comp_off[c]:comp_off[c + 1]] (in depth-first post-order), and every component
    comes after the components it reaches (its targets are final when it is visited)."""
    cdef int n = e - b, p, k, ne, nc, t, top, root, count = 0, q, at, m, finished = 0
    cdef int e0, c0, lp, x
    cdef int sp = 0, nm = 0
    cdef vector[int] fin
    cdef vector[int64_t] by_fin
    fin.assign(n, 0)
    members.assign(n, 0)
    # (comp_off filled from lvalues: a push_back of a temporary goes through
    # emplace_back, and the more of those a module has, the fewer calls GCC inlines)
    comp_off.assign(1, 0)
    index.assign(n, -1)             # discovery number; -2 once in a component
    low.assign(n, 0)
    stack.assign(n, 0)              # (each position is pushed once: room for all)
    dfs_p.assign(n, 0)
    dfs_k.assign(n, 0)
    cdef int* fn = fin.data()
    cdef int* mem = members.data()
    cdef int* idx = index.data()
    cdef int* lw = low.data()
    cdef int* stk = stack.data()
    cdef int* dp = dfs_p.data()
    cdef int* dk = dfs_k.data()
    cdef const int* e_off = pos.e_off.data()
    cdef const int* e_to = pos.e_to.data()
    cdef const int* c_off = pos.c_off.data()
    cdef const int* c_to = pos.c_to.data()
    for root in range(b, e):
        if idx[root - b] != -1:
            continue
        dp[0] = root
        dk[0] = 0
        top = 0
        idx[root - b] = count
        lw[root - b] = count
        count += 1
        stk[sp] = root
        sp += 1
        while top >= 0:
            p = dp[top]
            k = dk[top]
            e0 = e_off[p]
            ne = e_off[p + 1] - e0
            c0 = c_off[p] - ne
            nc = c_off[p + 1] - c0          # (targets k < nc: edges, then calls)
            # p's targets from the k-th on, in one loop until one is new (descend)
            lp = lw[p - b]
            t = -1
            while k < nc:
                t = e_to[e0 + k] if k < ne else c_to[c0 + k]
                k += 1
                x = idx[t - b]
                if x == -1:
                    break
                if x >= 0 and x < lp:
                    lp = x                  # t is on the stack (not yet placed)
                t = -1
            lw[p - b] = lp
            dk[top] = k
            if t >= 0:
                idx[t - b] = count
                lw[t - b] = count
                count += 1
                stk[sp] = t
                sp += 1
                top += 1
                dp[top] = t
                dk[top] = 0
                continue
            top -= 1
            fn[p - b] = finished
            finished += 1
            if top >= 0 and lw[p - b] < lw[dp[top] - b]:
                lw[dp[top] - b] = lw[p - b]
            if lw[p - b] == idx[p - b]:
                at = nm
                while True:
                    sp -= 1
                    q = stk[sp]
                    idx[q - b] = -2
                    mem[nm] = q
                    nm += 1
                    if q == p:
                        break
                if nm - at > 1:
                    # in post-order (finish order): targets before sources but along
                    # the cycle, cross edges included, so one pass merges what it can
                    by_fin.clear()
                    for m in range(at, nm):
                        q = mem[m]
                        by_fin.push_back(((<int64_t>fn[q - b]) << 32) | q)
                    cpp_sort(by_fin.begin(), by_fin.end())
                    for m in range(<int>by_fin.size()):
                        mem[at + m] = <int>(<uint32_t>by_fin[m])     # (a C cast: see above)
                comp_off.push_back(nm)


cdef tuple minimize(Positions pos, int max_rounds, list kept_keys, dict kept, dict minimal):
    """Merge the positions of each rule that behave alike: the subset construction keeps
    one position per NFA-state set, and front ends copy expressions (the trie of an open
    object's free keys carries a UTF-8 tail per node, an object of few properties a chain
    per first property), so equal futures come in many copies.

    Merging from below: two positions with the same final flag, byte edges into the same
    classes with the same whitespace bit (adjacent ranges into one class merged) and the
    same callees returning into the same classes behave alike, so each merge keeps the
    language, the stack behaviour and every flag, whenever the passes stop. The positions
    are visited by strongly connected component, each after the components it reaches,
    so a position outside a cycle is looked at once, its targets' classes final; only the
    positions of a cycle repeat passes over their own component while they merge, at most
    max_rounds (a member of a cycle can only merge with members of the same cycle: its
    edge into the cycle names a class no position outside it has). This is the same
    merging as passes over the whole rule until none merges (the merges are monotone and
    end in the same classes) for a fraction of the signatures. (Copies of a cycle are not
    merged; a long counted run costs one look per position, where refining from one class
    per flag would take a pass per count.)

    kept_keys and kept as add_rules took them, and minimal (a dict the caller keeps across
    builds): a rule added from kept positions (call-free, the same packed array each
    time) is merged once per process. A rule's merging reads nothing but its own
    positions and max_rounds, so its result for that array is fixed: it is stored under
    (key, max_rounds) beside the array it was made from, and a later build whose rule
    holds the same array takes the stored positions instead of merging again.
    Returns (positions before, positions after)."""
    cdef int R = <int>pos.starts.size()
    cdef int P = <int>pos.finals.size()
    cdef int r, b, e, n, p, c, k, t, last, rounds, count, j, base, m, ci, cb, ce, ns
    cdef int ne_out = 0, nc_out = 0, widest = 2
    cdef int64_t work = 0
    cdef bint merged
    cdef vector[int] cls, ren, sig, newpos, rep, members, comp_off, index, low, stack
    cdef vector[int] dfs_p, dfs_k
    cdef _SigTable table = _SigTable()      # signature -> class, final positions
    cdef _SigTable local = _SigTable()      # the same within one pass over a cycle
    cdef vector[int] finals, pos_rule, starts, e_off, e_lo, e_hi, e_to, e_ws
    cdef vector[int] c_off, c_rule, c_to
    cdef const int* s_fin = pos.finals.data()
    cdef const int* s_rule = pos.pos_rule.data()
    cdef const int* s_eoff = pos.e_off.data()
    cdef const int* s_lo = pos.e_lo.data()
    cdef const int* s_hi = pos.e_hi.data()
    cdef const int* s_to = pos.e_to.data()
    cdef const int* s_ws = pos.e_ws.data()
    cdef const int* s_coff = pos.c_off.data()
    cdef const int* s_crule = pos.c_rule.data()
    cdef const int* s_cto = pos.c_to.data()
    cdef int* cl
    cdef int* sg
    cdef int* np_ = NULL
    cdef const int[::1] ready
    cdef bint use_ready, store
    cdef bint reuse
    cdef vector[int] entry_of        # a cycle member's entry in the last pass's table
    newpos.assign(P, 0)
    np_ = newpos.data()
    # the longest signature: room for it once
    for p in range(P):
        k = 2 + 2 * (s_eoff[p + 1] - s_eoff[p]) + 2 * (s_coff[p + 1] - s_coff[p])
        if k > widest:
            widest = k
    sig.assign(widest, 0)
    sg = sig.data()
    # room for the tables as they are (merging only shrinks them), written through
    # pointers and cut to what they hold at the end
    finals.assign(P, 0)
    pos_rule.assign(P, 0)
    starts.reserve(R)
    e_off.assign(P + 1, 0)
    c_off.assign(P + 1, 0)
    e_lo.assign(pos.e_lo.size(), 0)
    e_hi.assign(pos.e_lo.size(), 0)
    e_to.assign(pos.e_lo.size(), 0)
    e_ws.assign(pos.e_lo.size(), 0)
    c_rule.assign(pos.c_rule.size(), 0)
    c_to.assign(pos.c_rule.size(), 0)
    cdef int* o_fin = finals.data()
    cdef int* o_rule = pos_rule.data()
    cdef int* o_eoff = e_off.data()
    cdef int* o_lo = e_lo.data()
    cdef int* o_hi = e_hi.data()
    cdef int* o_to = e_to.data()
    cdef int* o_ws = e_ws.data()
    cdef int* o_coff = c_off.data()
    cdef int* o_crule = c_rule.data()
    cdef int* o_cto = c_to.data()
    cdef int npos = 0
    o_eoff[0] = 0
    o_coff[0] = 0
    for r in range(R):
        b = pos.starts[r]
        e = pos.starts[r + 1] if r + 1 < R else P
        n = e - b
        base = npos
        starts.push_back(base)
        # a kept rule: its merged positions stored by an earlier build (or to store now)
        use_ready = store = False
        if kept_keys is not None and kept_keys[r] is not None and minimal is not None:
            got = kept.get(kept_keys[r])
            if got is not None:
                done = minimal.get((kept_keys[r], max_rounds))
                if done is not None and done[0] is got[0]:
                    ready = done[1]
                    use_ready = True
                else:
                    store = True
        if use_ready:
            # (packed as add_positions takes them, without calls: P, E, 0, finals[P],
            # e_off[P+1], e_lo[E], e_hi[E], e_to[E], e_ws[E], c_off[P+1])
            n = ready[0]
            m = ready[1]
            for p in range(n):
                o_fin[base + p] = ready[3 + p]
                o_rule[base + p] = r
                o_eoff[base + p + 1] = ne_out + ready[3 + n + p + 1]
                o_coff[base + p + 1] = nc_out
            j = 3 + 2 * n + 1
            for k in range(m):
                o_lo[ne_out + k] = ready[j + k]
                o_hi[ne_out + k] = ready[j + m + k]
                o_to[ne_out + k] = base + ready[j + 2 * m + k]
                o_ws[ne_out + k] = ready[j + 3 * m + k]
            ne_out += m
            npos += n
            continue
        cls.assign(n, 0)
        cl = cls.data()
        for p in range(n):
            cl[p] = p
        if n > 1 and not _loops_apart(pos, b, e):
            if _forward_only(pos, b, e):
                # no edge leads back: every position is its own component and the
                # positions from the last down are an order with targets first (the
                # merges, hence the classes, are those of any such order)
                members.assign(n, 0)
                comp_off.assign(n + 1, 0)
                for p in range(n):
                    members[p] = e - 1 - p
                    comp_off[p] = p
                comp_off[n] = n
            else:
                _sccs(pos, b, e, members, comp_off, index, low, stack, dfs_p, dfs_k)
            table.reset(n)
            for ci in range(<int>comp_off.size() - 1):
                cb = comp_off[ci]
                ce = comp_off[ci + 1]
                reuse = False
                if ce - cb > 1:
                    # a cycle: passes over its members, each against the others only (one
                    # position, looping to itself or not, has no other to merge with)
                    rounds = 0
                    merged = True
                    entry_of.resize(ce - cb)
                    while merged and rounds < max_rounds:
                        rounds += 1
                        merged = False
                        local.reset(ce - cb)
                        for m in range(cb, ce):
                            p = members[m]
                            ns = _signature(p, cl, b, s_fin, s_eoff, s_lo, s_hi, s_ws, s_to,
                                            s_coff, s_crule, s_cto, sg)
                            j = local.find_or_add(sg, ns, cl[p - b])
                            if j >= 0 and local.vals[j] != cl[p - b]:
                                cl[p - b] = local.vals[j]
                                merged = True
                            entry_of[m - cb] = j if j >= 0 else <int>local.vals.size() - 1
                            work += ns
                    # a pass that merged nothing read every member's signature in the
                    # classes the final pass reads: it takes them (and their hashes)
                    # from that pass, until a class changes
                    reuse = not merged
                # final now: merge with what came before (a cycle's members find only
                # their own entries), then serve the positions that reach it
                for m in range(cb, ce):
                    p = members[m]
                    if reuse:
                        j = entry_of[m - cb]
                        k = local.off[j]
                        j = table.find_or_add_hashed(&local.data[k], local.off[j + 1] - k,
                                                     cl[p - b], local.hashes[j])
                    else:
                        ns = _signature(p, cl, b, s_fin, s_eoff, s_lo, s_hi, s_ws, s_to,
                                        s_coff, s_crule, s_cto, sg)
                        j = table.find_or_add(sg, ns, cl[p - b])
                        work += ns
                    if j >= 0 and table.vals[j] != cl[p - b]:
                        cl[p - b] = table.vals[j]
                        reuse = False
                if work >= GIL_YIELD_UNITS:
                    work = 0
                    with nogil:     # a thread waiting for the GIL takes it here
                        _no_op()
        # classes numbered by first member: the start stays first
        ren.assign(n, -1)
        count = 0
        for p in range(n):
            if ren[cl[p]] < 0:
                ren[cl[p]] = count
                count += 1
        # the new positions of rule r: one per class, the first member its representative
        rep.clear()
        count = 0
        for p in range(b, e):
            c = ren[cl[p - b]]
            np_[p] = base + c
            if c == count:
                rep.push_back(p)
                count += 1
        # the representatives' edges and calls, targets renumbered (edges and call
        # returns stay within their rule, so its numbers are all known now)
        for c in range(count):
            p = rep[c]
            o_fin[npos] = s_fin[p]
            o_rule[npos] = s_rule[p]
            last = -1
            for k in range(s_eoff[p], s_eoff[p + 1]):
                t = np_[s_to[k]]
                if last >= 0 and o_to[last] == t and o_ws[last] == s_ws[k] \
                        and o_hi[last] == s_lo[k] - 1:
                    o_hi[last] = s_hi[k]
                    continue
                o_lo[ne_out] = s_lo[k]
                o_hi[ne_out] = s_hi[k]
                o_to[ne_out] = t
                o_ws[ne_out] = s_ws[k]
                last = ne_out
                ne_out += 1
            for k in range(s_coff[p], s_coff[p + 1]):
                o_crule[nc_out] = s_crule[k]
                o_cto[nc_out] = np_[s_cto[k]]
                nc_out += 1
            npos += 1
            o_eoff[npos] = ne_out
            o_coff[npos] = nc_out
        if store and o_coff[npos] == o_coff[base]:
            minimal[(kept_keys[r], max_rounds)] = (
                got[0], pack_call_free(o_fin, o_eoff, o_lo, o_hi, o_to, o_ws, base, npos))
    finals.erase(finals.begin() + (npos), finals.end())
    pos_rule.erase(pos_rule.begin() + (npos), pos_rule.end())
    e_off.erase(e_off.begin() + (npos + 1), e_off.end())
    c_off.erase(c_off.begin() + (npos + 1), c_off.end())
    e_lo.erase(e_lo.begin() + (ne_out), e_lo.end())
    e_hi.erase(e_hi.begin() + (ne_out), e_hi.end())
    e_to.erase(e_to.begin() + (ne_out), e_to.end())
    e_ws.erase(e_ws.begin() + (ne_out), e_ws.end())
    c_rule.erase(c_rule.begin() + (nc_out), c_rule.end())
    c_to.erase(c_to.begin() + (nc_out), c_to.end())
    pos.finals.swap(finals)
    pos.pos_rule.swap(pos_rule)
    pos.starts.swap(starts)
    pos.e_off.swap(e_off)
    pos.e_lo.swap(e_lo)
    pos.e_hi.swap(e_hi)
    pos.e_to.swap(e_to)
    pos.e_ws.swap(e_ws)
    pos.c_off.swap(c_off)
    pos.c_rule.swap(c_rule)
    pos.c_to.swap(c_to)
    return P, <int>pos.finals.size()
