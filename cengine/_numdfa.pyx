# distutils: language = c++
# Design: the bounded-number DFA of cengine.schema.numbers (_NumberDfa), explored, pruned and
# minimized with C ints. A state is 8 int32 (phase, sign, two integer-part comparators, two
# fraction comparators, remainder, fraction digits), each comparator state one int code; the
# states are numbered through an open-addressing table of their numbers, breadth first in the
# symbol order of numbers._SYMBOLS, so the raw numbering is the one the Python reference
# exploration gives (tests/oracles/number_reference.explore).
# An acyclic live part (self-loops aside) is minimized in one pass in reverse topological
# order (numbers._blocks_acyclic, the same signatures and self-loop substitution) and
# renumbered breadth first (numbers._renumbered); a live part with other cycles (multipleOf
# remainders) is handed back raw, for numbers._minimize's Moore refinement. The Python code
# in numbers.py and tests/oracles/number_reference.py stays the reference
# (tests/test_schema_numbers_native.py's _reference_automaton):
# tests/test_schema_numbers_native.py compares the two, raw state for state and minimal
# ir.Dfa table for table, and checks the tables' membership against the numbers oracle.
# The explored-state limit (max_raw) is checked after each state's successors are added: a
# count past it is refused, as the reference explore refuses it (the numbers.py caller raises the
# LimitError with the keyword and pointer).
"""The automaton of a bounded number (cengine.schema.numbers.number_expr), in C.

A comparator is given as (integer digits, fraction digits, closed, upper, negative value,
positive value), the digits as ASCII bytes (numbers._Cmp's reading of |bound|). Its state
codes: in the integer part n * 3 + c + 1 (n digits read, capped at L + 1; c the comparison
so far), in the fraction base + i * 3 + c + 1 with base = 3 * (L + 2) (numbers._Cmp's
("i", n, c) and ("f", c, i)).
"""
from libc.stdint cimport int32_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from cython.operator cimport dereference as deref
from libcpp.string cimport string
from libcpp.vector cimport vector
from libcpp.unordered_map cimport unordered_map

cdef enum:
    W = 8               # int32 per state
    NSYM = 12           # numbers._SYMBOLS: '-', '.', '0'..'9'
    DEAD = -1
    SELF = -2
    # phases (NumberDfa's "S", "-", "Z", "I", ".", "F")
    PS = 0
    PMINUS = 1
    PZ = 2
    PI = 3
    PDOT = 4
    PF = 5

cdef struct Cmp:
    const unsigned char* idig
    int L
    const unsigned char* fdig
    int M
    int base
    bint closed
    bint upper
    bint vneg
    bint vpos


cdef inline int _sgn(int a) noexcept:
    return (a > 0) - (a < 0)


cdef inline int _int_digit(const Cmp* b, int code, int d) noexcept:
    cdef int n = code // 3
    cdef int c = code % 3 - 1
    if n >= b.L:
        return (b.L + 1) * 3 + 1
    if c == 0:
        c = _sgn(d - (b.idig[n] - 48))
    return (n + 1) * 3 + c + 1


cdef inline int _int_cmp(const Cmp* b, int code) noexcept:
    cdef int n = code // 3
    if n < b.L:
        return -1
    if n > b.L:
        return 1
    return code % 3 - 1


cdef inline int _dot(const Cmp* b, int code) noexcept:
    return b.base + _int_cmp(b, code) + 1


cdef inline int _frac_digit(const Cmp* b, int code, int d) noexcept:
    cdef int x = code - b.base
    cdef int i = x // 3
    cdef int c = x % 3 - 1
    if c != 0:
        return code
    if i < b.M:
        c = _sgn(d - (b.fdig[i] - 48))
        return b.base + ((i + 1) if c == 0 else 0) * 3 + c + 1
    if d != 0:
        return b.base + 2
    return code


cdef inline bint _holds(const Cmp* b, int code, bint negative) noexcept:
    cdef int mag, x, i, c, cmp
    if code < b.base:
        mag = _int_cmp(b, code)
        if mag == 0 and b.M > 0:
            mag = -1
    else:
        x = code - b.base
        i = x // 3
        c = x % 3 - 1
        mag = c if c != 0 else (-1 if i < b.M else 0)
    if not negative:
        cmp = 1 if b.vneg else mag
    else:
        cmp = -1 if b.vpos else -mag
    if b.upper:
        return cmp < 0 or (cmp == 0 and b.closed)
    return cmp > 0 or (cmp == 0 and b.closed)


cdef int _fill(Cmp* out, tuple spec, list keep) except -1:
    cdef bytes idig = spec[0]
    cdef bytes fdig = spec[1]
    keep.append(idig)
    keep.append(fdig)
    out.idig = <const unsigned char*>idig
    out.L = len(idig)
    out.fdig = <const unsigned char*>fdig
    out.M = len(fdig)
    out.base = 3 * (out.L + 2)
    out.closed = spec[2]
    out.upper = spec[3]
    out.vneg = spec[4]
    out.vpos = spec[5]
    return 0


cdef inline uint64_t _hash(const int32_t* t) noexcept:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL
    cdef int w
    for w in range(W):
        h = (h ^ <uint32_t>t[w]) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 29
    return h


cdef struct _Index:
    # open addressing over the states' numbers (-1 empty); the states hold the keys
    vector[int32_t] slots
    uint64_t mask


cdef int32_t _find(_Index& index, vector[int32_t]& states, const int32_t* t):
    """The number of state t, a new one (appended) when unseen."""
    cdef uint64_t h, m
    cdef int32_t j, n
    cdef size_t s
    cdef int w
    if (states.size() // W + 1) * 2 > index.slots.size():
        # grow: twice the slots, every state placed again
        index.slots.assign(1024 if index.slots.size() < 512 else index.slots.size() * 2, -1)
        index.mask = index.slots.size() - 1
        for j in range(<int32_t>(states.size() // W)):
            h = _hash(&states[j * W]) & index.mask
            while index.slots[h] >= 0:
                h = (h + 1) & index.mask
            index.slots[h] = j
    m = index.mask
    h = _hash(t) & m
    while True:
        j = index.slots[h]
        if j < 0:
            break
        if memcmp(&states[j * W], t, W * sizeof(int32_t)) == 0:
            return j
        h = (h + 1) & m
    n = <int32_t>(states.size() // W)
    index.slots[h] = n
    for w in range(W):
        states.push_back(t[w])
    return n


def number_automaton(bint integer, list int_bounds, list frac_bounds, int p, int k,
                     Py_ssize_t max_raw, bint raw=False):
    """(kind, a, b): kind 0, the language is empty; 1, more than max_raw explored states
    (a limit); 2, (a, b) = the explored automaton as the reference explore returns it (raw=True,
    or a live part with cycles other than self-loops: minimize it with numbers._minimize);
    3, (a, b) = the minimal automaton as ir.Dfa's edges and accepting, numbered as
    numbers._minimize numbers it. k -1: no multipleOf."""
    cdef Cmp ib[2]
    cdef Cmp fb[2]
    cdef list keep = []
    cdef int nib = len(int_bounds), nfb = len(frac_bounds)
    cdef int j, d, sym, phase, neg, r, fd, r2, fd2, pad
    cdef int32_t st[W]
    cdef int32_t t[W]
    cdef bint ok
    if nib > 2 or nfb > 2:
        raise ValueError("at most two bounds per reading")
    for j in range(nib):
        _fill(&ib[j], int_bounds[j], keep)
    for j in range(nfb):
        _fill(&fb[j], frac_bounds[j], keep)
    cdef vector[int] pow10
    if k >= 0:
        pow10.push_back(1 % p)
        for j in range(k):
            pow10.push_back((pow10.back() * 10) % p)

    # --- exploration (tests/oracles/number_reference: NumberDfa.successors / accepting, explore)
    cdef _Index index
    index.mask = 0
    cdef vector[int32_t] states
    cdef vector[int32_t] trans
    cdef vector[char] accepting
    for j in range(W):
        t[j] = 0
    for j in range(nib):
        t[2 + j] = 1            # a comparator's start ("i", 0, 0)
    for j in range(nfb):
        t[4 + j] = 1
    _find(index, states, t)
    cdef size_t i = 0
    while i < states.size() // W:
        memcpy(st, &states[i * W], W * sizeof(int32_t))
        phase, neg, r, fd = st[0], st[1], st[6], st[7]
        for sym in range(NSYM):
            trans.push_back(-1)
        # '-'
        if phase == PS:
            memcpy(t, st, W * sizeof(int32_t))
            t[0] = PMINUS
            t[1] = 1
            trans[i * NSYM + 0] = _find(index, states, t)
        # '.'
        if (phase == PZ or phase == PI) and not (k == 0 or integer):
            memcpy(t, st, W * sizeof(int32_t))
            t[0] = PDOT
            t[2] = -1
            t[3] = -1
            for j in range(nfb):
                t[4 + j] = _dot(&fb[j], st[4 + j])
            t[7] = 0
            trans[i * NSYM + 1] = _find(index, states, t)
        # digits
        if phase == PS or phase == PMINUS or phase == PI:
            for d in range(10):
                memcpy(t, st, W * sizeof(int32_t))
                t[0] = PI if (phase == PI or d) else PZ
                for j in range(nib):
                    t[2 + j] = _int_digit(&ib[j], st[2 + j], d)
                for j in range(nfb):
                    t[4 + j] = _int_digit(&fb[j], st[4 + j], d)
                if k >= 0:
                    t[6] = (r * 10 + d) % p
                trans[i * NSYM + 2 + d] = _find(index, states, t)
        elif phase == PDOT or phase == PF:
            for d in range(10):
                if integer and d:
                    continue
                r2, fd2 = r, fd
                if k >= 0:
                    if fd < k:
                        r2, fd2 = (r * 10 + d) % p, fd + 1
                    elif d:
                        continue
                memcpy(t, st, W * sizeof(int32_t))
                t[0] = PF
                for j in range(nfb):
                    t[4 + j] = _frac_digit(&fb[j], st[4 + j], d)
                t[6] = r2
                t[7] = fd2
                trans[i * NSYM + 2 + d] = _find(index, states, t)
        if <Py_ssize_t>(states.size() // W) > max_raw:
            return (1, None, None)
        # accepting
        ok = False
        if phase == PZ or phase == PI:
            ok = True
            for j in range(nib):
                if not _holds(&ib[j], st[2 + j], neg):
                    ok = False
                    break
        elif phase == PF:
            ok = True
            for j in range(nfb):
                if not _holds(&fb[j], st[4 + j], neg):
                    ok = False
                    break
        if ok and k >= 0:
            pad = k - (fd if phase == PF else 0)
            ok = (r * pow10[pad]) % p == 0
        accepting.push_back(ok)
        i += 1
    cdef int n = <int>(states.size() // W)
    if raw:
        return (2,) + _as_python(trans, accepting, n)

    # --- live states: those that reach acceptance ---
    cdef vector[int] rev_off, rev
    cdef vector[int] fill
    cdef int q, tq, b, x
    rev_off.resize(n + 1, 0)
    for q in range(n):
        for sym in range(NSYM):
            tq = trans[q * NSYM + sym]
            if tq >= 0:
                rev_off[tq + 1] += 1
    for q in range(n):
        rev_off[q + 1] += rev_off[q]
    rev.resize(rev_off[n])
    fill.resize(n, 0)
    for q in range(n):
        for sym in range(NSYM):
            tq = trans[q * NSYM + sym]
            if tq >= 0:
                rev[rev_off[tq] + fill[tq]] = q
                fill[tq] += 1
    cdef vector[char] live
    cdef vector[int] stack
    live.resize(n, 0)
    for q in range(n):
        if accepting[q]:
            live[q] = 1
            stack.push_back(q)
    while stack.size():
        tq = stack.back()
        stack.pop_back()
        for x in range(rev_off[tq], rev_off[tq + 1]):
            q = rev[x]
            if not live[q]:
                live[q] = 1
                stack.push_back(q)
    if not live[0]:
        return (0, None, None)

    # --- postorder of a depth-first search from the start, ignoring self-loops ---
    cdef vector[char] colour
    cdef vector[int] order, dstack, dnext
    colour.resize(n, 0)
    colour[0] = 1
    dstack.push_back(0)
    dnext.push_back(0)
    cdef bint pushed
    while dstack.size():
        q = dstack.back()
        pushed = False
        while dnext.back() < NSYM:
            sym = dnext.back()
            dnext[dnext.size() - 1] = sym + 1
            tq = trans[q * NSYM + sym]
            if tq < 0 or tq == q or not live[tq]:
                continue
            if colour[tq] == 0:
                colour[tq] = 1
                dstack.push_back(tq)
                dnext.push_back(0)
                pushed = True
                break
            if colour[tq] == 1:
                return (2,) + _as_python(trans, accepting, n)     # a cycle: Moore
        if not pushed:
            dstack.pop_back()
            dnext.pop_back()
            colour[q] = 2
            order.push_back(q)

    # --- classes by signature (accepting, class per symbol; self-loops SELF) ---
    cdef vector[int] block
    block.resize(n, -1)
    cdef unordered_map[string, int] by_signature
    cdef unordered_map[string, int].iterator found
    cdef vector[char] looping
    cdef int32_t row[NSYM + 1]
    cdef int32_t cand[NSYM + 1]
    cdef string key
    cdef int nclass = 0, y, s2
    for x in range(<int>order.size()):
        q = order[x]
        row[0] = accepting[q]
        for sym in range(NSYM):
            tq = trans[q * NSYM + sym]
            row[1 + sym] = DEAD if (tq < 0 or not live[tq]) else (SELF if tq == q else block[tq])
        key = string(<char*>row, (NSYM + 1) * sizeof(int32_t))
        found = by_signature.find(key)
        b = -1
        if found != by_signature.end():
            b = deref(found).second
        else:
            for sym in range(NSYM):
                y = row[1 + sym]
                if y < 0 or not looping[y]:
                    continue
                cand[0] = row[0]
                for s2 in range(NSYM):
                    cand[1 + s2] = SELF if row[1 + s2] == y else row[1 + s2]
                found = by_signature.find(string(<char*>cand, (NSYM + 1) * sizeof(int32_t)))
                if found != by_signature.end() and deref(found).second == y:
                    b = y
                    break
        if b < 0:
            b = nclass
            nclass += 1
            by_signature[key] = b
            looping.push_back(0)
            for sym in range(NSYM):
                if row[1 + sym] == SELF:
                    looping[b] = 1
        block[q] = b

    # --- the quotient, numbered breadth first from the start (numbers._renumbered) ---
    cdef vector[int] rep, ids, border
    rep.resize(nclass, -1)
    ids.resize(nclass, -1)
    for q in range(n):
        if live[q] and rep[block[q]] < 0:
            rep[block[q]] = q
    ids[block[0]] = 0
    border.push_back(0)
    cdef size_t kk = 0
    cdef list edges = []
    cdef list acc = []
    cdef list ranges
    cdef int lo, hi, to, byte
    while kk < border.size():
        q = border[kk]
        ranges = []
        lo = hi = to = -1
        for sym in range(NSYM):
            tq = trans[q * NSYM + sym]
            if tq < 0 or not live[tq]:
                continue
            b = block[tq]
            if ids[b] < 0:
                ids[b] = <int>border.size()
                border.push_back(rep[b])
            byte = 45 + sym if sym < 2 else 46 + sym       # '-' '.' then '0'..'9'
            if to == ids[b] and hi == byte - 1:
                hi = byte
            else:
                if to >= 0:
                    ranges.append((lo, hi, to))
                lo, hi, to = byte, byte, ids[b]
        if to >= 0:
            ranges.append((lo, hi, to))
        edges.append(tuple(ranges))
        acc.append(bool(accepting[q]))
        kk += 1
    return (3, tuple(edges), tuple(acc))


cdef tuple _as_python(vector[int32_t]& trans, vector[char]& accepting, int n):
    """The explored automaton as the reference explore returns it: ([{symbol: target}], [bool])."""
    cdef list out = []
    cdef dict row
    cdef int q, sym, tq
    symbols = "-.0123456789"
    for q in range(n):
        row = {}
        for sym in range(NSYM):
            tq = trans[q * NSYM + sym]
            if tq >= 0:
                row[symbols[sym]] = tq
        out.append(row)
    return out, [bool(accepting[q]) for q in range(n)]
