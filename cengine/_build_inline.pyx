# distutils: language = c++
# Design: the inlining pass (automaton._inline_small_rules) over C++ vectors.
# One walk over the rules' Python expressions flattens them into a DAG of int-indexed nodes
# (composite subtrees deduplicated by identity: front ends share them, an object's chains of
# optional members above all). Every question the pass asks (which rules a rule calls, which
# are recursive, how long a rule's match is, how big an inlined body is, which subtrees
# change) is then answered over C++ vectors, and only the subtrees that change are rebuilt as
# Python objects. The answers are exactly those of the frozen pure-Python pass,
# tests/oracles/inline_reference.py (which documents them): the same expressions, sharing
# included (one result object per shared subtree), the same callees, the same errors.
"""The automaton builder's inlining pass (cengine.automaton._inline_small_rules): small rules
substituted into their callers, and the recursion test it rests on."""
from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t, uintptr_t
from libcpp.vector cimport vector
from cpython.ref cimport PyObject, Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from . import ir as _ir
from .errors import CompileError

from cengine._build_ir cimport (MAX_EXPR_DEPTH, _Bytes, _ByteSet, _CharSet, _Seq, _Alt,
                                _Repeat, _Ref, _Dfa, _field, _make, _made_elsewhere,
                                _SEQ_ITEMS, _ALT_ITEMS, _REPEAT_ITEM, _REPEAT_LO, _REPEAT_HI,
                                _REF_NAME, _BYTES_DATA, _CHARSET_RANGES)


# node kinds
cdef enum:
    N_LEAF          # Bytes, ByteSet, CharSet, Nothing, anything else: no calls, no children
    N_DFA
    N_REF
    N_SEQ
    N_ALT
    N_REPEAT
    N_WS            # the whitespace wrapper (ws_type): walked, never substituted into

# ir.UNROLL_INLINE_MAX, read once into a C global (the frozen oracle,
# tests/oracles/automaton_reference.py, keeps its own copy of the value)
cdef long UNROLL_MAX = _ir.UNROLL_INLINE_MAX
UNROLL_INLINE_MAX = UNROLL_MAX

cdef double _PINF = float("inf")
cdef double _NAN = float("nan")
cdef int64_t _NO_WEIGHT = -1        # a repeat count that is no C integer (sized the slow way)
cdef double _UNMEASURED = -2        # (no longest match is negative)


cdef inline int64_t _wrap_add(int64_t a, int64_t b) noexcept nogil:
    # the node counts of the Python pass were C long longs: keep their wraparound
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef inline int64_t _wrap_mul(int64_t a, int64_t b) noexcept nogil:
    return <int64_t>(<uint64_t>a * <uint64_t>b)


cdef struct ExprNode:
    PyObject* obj       # the expression (borrowed: the grammar's rules keep it alive)
    double maxv         # N_LEAF: longest match; N_REPEAT: hi (NaN: unbounded)
    int64_t weight      # N_LEAF, N_DFA: node count (-1: not yet); N_REPEAT: count weight
    int32_t first       # children: kids[first .. first + nkids)
    int32_t nkids
    int32_t callee      # N_REF: the rule called (-1: undefined)
    int32_t height      # longest path down to a leaf (what the depth guard measures)
    uint8_t kind
    uint8_t long_ref    # N_REPEAT: the item is a call, counted past UNROLL_MAX
    uint8_t calls       # some call below (the walks for calls skip subtrees without)



cdef class _InlinePass:
    """The flattened grammar and the pass's answers over it (one compile)."""
    cdef vector[ExprNode] nodes     # children before parents
    cdef vector[int32_t] kids
    # composite / Dfa object -> node: open addressing on the address (0 = free slot)
    cdef vector[uintptr_t] seen_key
    cdef vector[int32_t] seen_node
    cdef size_t seen_count
    cdef int seen_bits
    cdef dict rule_index
    cdef object ws_type
    cdef list exprs                 # rule -> its expression (keeps the nodes alive)
    cdef bint undefined
    # rules
    cdef int32_t n_rules
    cdef vector[int32_t] root
    cdef vector[uint8_t] container, whitespace
    cdef vector[uint8_t] stand_in           # an any-order object rule (stand_in_node)
    cdef vector[uint8_t] keep_frame         # ir.Rule.frame: never inlined
    cdef vector[int32_t] refs_first, refs   # distinct callees per rule (CSR)
    cdef vector[int32_t] long_first, longs  # rules called from long counted runs (CSR)

    def __cinit__(self):
        self.seen_bits = 10
        self.seen_key.resize(1 << 10, 0)
        self.seen_node.resize(1 << 10, 0)
        self.seen_count = 0
        self.nodes.reserve(512)         # (a median grammar has a few hundred nodes)
        self.kids.reserve(1024)

    cdef inline size_t _slot(self, uintptr_t key) noexcept nogil:
        cdef size_t mask = (<size_t>1 << self.seen_bits) - 1
        cdef size_t h = <size_t>((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15ULL)
                                 >> (64 - self.seen_bits))
        while self.seen_key[h] != 0 and self.seen_key[h] != key:
            h = (h + 1) & mask
        return h

    cdef void _remember(self, uintptr_t key, int32_t i) noexcept nogil:
        cdef vector[uintptr_t] keys
        cdef vector[int32_t] vals
        cdef size_t j, h
        if 2 * (self.seen_count + 1) > self.seen_key.size():     # grow: half full at most
            keys.swap(self.seen_key)
            vals.swap(self.seen_node)
            self.seen_bits += 1
            self.seen_key.resize(<size_t>1 << self.seen_bits, 0)
            self.seen_node.resize(<size_t>1 << self.seen_bits, 0)
            for j in range(keys.size()):
                if keys[j] != 0:
                    h = self._slot(keys[j])
                    self.seen_key[h] = keys[j]
                    self.seen_node[h] = vals[j]
        h = self._slot(key)
        self.seen_key[h] = key
        self.seen_node[h] = i
        self.seen_count += 1

    cdef inline int32_t _add(self, e, int kind, int32_t first, int32_t n, int32_t h) noexcept:
        cdef ExprNode x
        x.obj = <PyObject*>e
        x.maxv = 0
        x.weight = 1
        x.first = first
        x.nkids = n
        x.callee = -1
        x.height = h
        x.kind = kind
        x.long_ref = 0
        x.calls = kind == N_REF
        self.nodes.push_back(x)
        return <int32_t>self.nodes.size() - 1

    cdef int32_t node(self, e, int depth) except -1:
        """The node of e (flattened on first sight). Raises the Python pass's RecursionError
        when some occurrence nests deeper than MAX_EXPR_DEPTH."""
        cdef uintptr_t key = <uintptr_t><PyObject*>e
        cdef size_t h
        cdef int32_t i, c, height, first, n, j
        cdef uint8_t calls
        k = type(e)
        if k is _Seq or k is _Alt or k is _Repeat or k is _Dfa or k is self.ws_type:
            h = self._slot(key)
            if self.seen_key[h] == key:
                i = self.seen_node[h]
                if depth + self.nodes[i].height > MAX_EXPR_DEPTH:
                    raise RecursionError("grammar expressions nest too deeply")
                return i
        if depth > MAX_EXPR_DEPTH:
            raise RecursionError("grammar expressions nest too deeply")
        if k is _Ref:
            i = self._add(e, N_REF, 0, 0, 0)
            r = self.rule_index.get(_field(e, _REF_NAME, "name"))
            if r is None:
                self.undefined = True
            else:
                self.nodes[i].callee = <int32_t>r
            return i
        if k is _Seq or k is _Alt:
            items = _field(e, _SEQ_ITEMS if k is _Seq else _ALT_ITEMS, "items")
            n = len(items)
            first = <int32_t>self.kids.size()
            self.kids.resize(first + n)
            height = 0
            calls = 0
            j = 0
            for it in items:
                c = self.node(it, depth + 1)
                self.kids[first + j] = c
                j += 1
                if self.nodes[c].height + 1 > height:
                    height = self.nodes[c].height + 1
                calls |= self.nodes[c].calls
            i = self._add(e, N_SEQ if k is _Seq else N_ALT, first, n, height)
            self.nodes[i].calls = calls
        elif k is _Repeat or k is self.ws_type:
            c = self.node(_field(e, _REPEAT_ITEM, "item") if k is _Repeat else e.item,
                          depth + 1)
            first = <int32_t>self.kids.size()
            self.kids.push_back(c)
            i = self._add(e, N_REPEAT if k is _Repeat else N_WS, first, 1,
                          self.nodes[c].height + 1)
            self.nodes[i].calls = self.nodes[c].calls
            if k is _Repeat:
                self._repeat_numbers(i, e, c)
        elif k is _Dfa:
            i = self._add(e, N_DFA, 0, 0, 0)
            self.nodes[i].weight = -1           # (measured when first asked)
        else:
            i = self._add(e, N_LEAF, 0, 0, 0)
            if k is _Bytes:
                n = len(_field(e, _BYTES_DATA, "data"))
                self.nodes[i].maxv = n
                self.nodes[i].weight = n if n > 1 else 1
            elif k is _ByteSet:
                self.nodes[i].maxv = 1
            elif k is _CharSet:
                ranges = _field(e, _CHARSET_RANGES, "ranges")
                top = ranges[len(ranges) - 1][1] if ranges else 0
                self.nodes[i].maxv = 1 if top < 0x80 else 2 if top < 0x800 else \
                    3 if top < 0x10000 else 4
            return i        # (leaves are not deduplicated: equal answers either way)
        self._remember(key, i)
        return i

    cdef int _repeat_numbers(self, int32_t i, e, int32_t item) except -1:
        cdef int64_t w
        hi = _field(e, _REPEAT_HI, "hi")
        lo = _field(e, _REPEAT_LO, "lo")
        if self.nodes[item].kind == N_REF:
            self.nodes[i].long_ref = (hi if hi is not None else lo) > UNROLL_MAX
        if hi is None:
            self.nodes[i].maxv = _NAN
        else:
            try:
                self.nodes[i].maxv = float(hi)
            except OverflowError:
                self.nodes[i].maxv = _PINF
        try:
            w = hi if hi is not None else lo + 1
            self.nodes[i].weight = max(1, min(w, 64))
        except Exception:
            self.nodes[i].weight = _NO_WEIGHT   # the Python pass's error, raised if sized
        return 0

    cdef int flatten(self, grammar, any_order) except -1:
        rules = grammar.rules
        self.rule_index = {n: i for i, n in enumerate(rules)}
        self.n_rules = len(rules)
        self.undefined = False
        self.exprs = []
        cdef uint8_t container, whitespace, stand_in, keep_frame
        for r in rules.values():
            e = r.expr
            self.exprs.append(e)
            # (typed first: Cython hands push_back a dangling reference to a conditional)
            container = 1 if r.container else 0
            whitespace = 1 if r.whitespace else 0
            keep_frame = 1 if r.frame else 0
            stand_in = 1 if any_order is not None and _made_elsewhere(e, any_order) else 0
            self.container.push_back(container)
            self.whitespace.push_back(whitespace)
            self.keep_frame.push_back(keep_frame)
            self.stand_in.push_back(stand_in)
            self.root.push_back(self.stand_in_node(e) if stand_in else self.node(e, 0))
        return 0

    cdef int32_t stand_in_node(self, e) except -1:
        """The node an any-order object rule stands as: an alternative of calls of the rules
        it calls, each once (one call: that call; none: the empty string). Made as nodes
        directly, without IR objects: a call node's object is the callee's name (the node
        keeps it alive), read only when the call is undefined (raise_undefined); the stand-in
        is never rebuilt (its rule is never inlined, and its expression stays the node)."""
        cdef int32_t first, c, i
        names = list(dict.fromkeys(e.refs()))
        if not names:
            return self.node(_ir.EMPTY, 0)
        first = <int32_t>self.kids.size()
        for name in names:
            c = self._add(name, N_REF, 0, 0, 0)
            r = self.rule_index.get(name)
            if r is None:
                self.undefined = True
            else:
                self.nodes[c].callee = <int32_t>r
            self.kids.push_back(c)
        if len(names) == 1:
            self.kids.pop_back()
            return c
        i = self._add(None, N_ALT, first, <int32_t>len(names), 1)
        self.nodes[i].calls = 1
        return i

    cdef void collect_refs(self) noexcept nogil:
        """Per rule, the distinct rules it calls and those it calls from long counted runs."""
        cdef vector[int32_t] mark, seen_rule, seen_long, stack
        cdef int32_t r, i, c, j, t
        mark.resize(self.nodes.size(), -1)
        seen_rule.resize(self.n_rules, -1)
        seen_long.resize(self.n_rules, -1)
        for r in range(self.n_rules):
            self.refs_first.push_back(<int32_t>self.refs.size())
            self.long_first.push_back(<int32_t>self.longs.size())
            stack.push_back(self.root[r])
            mark[self.root[r]] = r
            while stack.size():
                i = stack.back()
                stack.pop_back()
                if self.nodes[i].kind == N_REF:
                    t = self.nodes[i].callee
                    if t >= 0 and seen_rule[t] != r:
                        seen_rule[t] = r
                        self.refs.push_back(t)
                    continue
                if self.nodes[i].long_ref:
                    t = self.nodes[self.kids[self.nodes[i].first]].callee
                    if t >= 0 and seen_long[t] != r:
                        seen_long[t] = r
                        self.longs.push_back(t)
                for j in range(self.nodes[i].first, self.nodes[i].first + self.nodes[i].nkids):
                    c = self.kids[j]
                    if self.nodes[c].calls and mark[c] != r:
                        mark[c] = r
                        stack.push_back(c)
        self.refs_first.push_back(<int32_t>self.refs.size())
        self.long_first.push_back(<int32_t>self.longs.size())

    cdef int raise_undefined(self, grammar) except -1:
        """The Python pass's error for a call of an undefined rule: the first rule (in order)
        with one, and of its callees the first in the iteration order of the set of names
        the Python pass collected (filled in the same order: pre-order, first occurrences)."""
        rules = grammar.rules
        cdef vector[int32_t] mark
        cdef vector[int32_t] stack
        cdef int32_t r, i, j
        mark.resize(self.nodes.size(), -1)
        for r, (n, rule) in enumerate(rules.items()):
            names = set()
            stack.push_back(self.root[r])
            missing = False
            while stack.size():
                i = stack.back()
                stack.pop_back()
                if mark[i] == r:
                    continue
                mark[i] = r             # (marked when visited: a true pre-order)
                if self.nodes[i].kind == N_REF:
                    o = <object>self.nodes[i].obj
                    names.add(o if type(o) is str else o.name)     # (str: a stand-in's call)
                    missing = missing or self.nodes[i].callee < 0
                    continue
                j = self.nodes[i].first + self.nodes[i].nkids - 1
                while j >= self.nodes[i].first:     # pushed last first: popped in pre-order
                    stack.push_back(self.kids[j])
                    j -= 1
            if missing:
                for m in names:
                    if m not in rules:
                        line, col = (rule.origin or (None, None))
                        raise CompileError(f"rule '{m}' is used but never defined", rule=m,
                                           line=line, column=col)
        return 0

    cdef void tarjan(self, vector[uint8_t]& recursive, vector[int32_t]& order) noexcept nogil:
        """Rules that reach themselves (in a strongly connected component of more than one
        rule, or calling themselves), and every rule in an order where a rule's callees
        outside its component come before it (Tarjan's emission order). Iterative: rule
        chains are thousands deep."""
        cdef int32_t n = self.n_rules, counter = 0, root, v, w, e
        cdef size_t top
        cdef vector[int32_t] index, low, stack, work_v, work_e
        cdef vector[uint8_t] on_stack
        index.resize(n, -1)
        low.resize(n, 0)
        on_stack.resize(n, 0)
        recursive.resize(n, 0)
        for root in range(n):
            if index[root] >= 0:
                continue
            index[root] = low[root] = counter
            counter += 1
            stack.push_back(root)
            on_stack[root] = 1
            work_v.push_back(root)
            work_e.push_back(self.refs_first[root])
            while work_v.size():
                v = work_v.back()
                e = work_e.back()
                if e < self.refs_first[v + 1]:
                    work_e[work_e.size() - 1] = e + 1
                    w = self.refs[e]
                    if index[w] < 0:
                        index[w] = low[w] = counter
                        counter += 1
                        stack.push_back(w)
                        on_stack[w] = 1
                        work_v.push_back(w)
                        work_e.push_back(self.refs_first[w])
                    elif on_stack[w] and index[w] < low[v]:
                        low[v] = index[w]
                    continue
                work_v.pop_back()
                work_e.pop_back()
                if work_v.size() and low[v] < low[work_v.back()]:
                    low[work_v.back()] = low[v]
                if low[v] == index[v]:
                    top = order.size()
                    while True:
                        w = stack.back()
                        stack.pop_back()
                        on_stack[w] = 0
                        order.push_back(w)
                        if w == v:
                            break
                    if order.size() - top > 1 or self._calls(v, v):
                        while top < order.size():
                            recursive[order[top]] = 1
                            top += 1

    cdef inline bint _calls(self, int32_t r, int32_t t) noexcept nogil:
        cdef int32_t e
        for e in range(self.refs_first[r], self.refs_first[r + 1]):
            if self.refs[e] == t:
                return True
        return False

    cdef double max_match(self, int32_t i, vector[double]& memo, vector[double]& rule_max,
                          double cap) except? -3:
        """Longest match of node i, exactly as the Python pass measured it: past cap the
        walk stops and answers inf (so the nodes it measures, and so the errors it can meet,
        are the same). memo: composite and Dfa nodes (_UNMEASURED: not yet)."""
        cdef ExprNode* x = &self.nodes[i]
        cdef int kd = x.kind
        cdef int32_t j, n = x.nkids, f = x.first
        cdef double v, best, m, hi
        if kd == N_LEAF:
            return x.maxv
        if kd == N_REF:
            return rule_max[x.callee]
        if kd == N_WS:
            return self.max_match(self.kids[f], memo, rule_max, cap)
        if memo[i] != _UNMEASURED:
            return memo[i]
        if kd == N_DFA:
            v = _ir.dfa_max_match(<object>x.obj)
        elif kd == N_SEQ:
            v = 0
            for j in range(n):
                v = v + self.max_match(self.kids[f + j], memo, rule_max, cap)
                if v > cap:
                    v = _PINF
                    break
        elif kd == N_ALT:
            if n == 0:
                max(())                 # the Python pass's ValueError
            best = self.max_match(self.kids[f], memo, rule_max, cap)
            for j in range(1, n):
                if best > cap:
                    break
                v = self.max_match(self.kids[f + j], memo, rule_max, cap)
                if v > best:
                    best = v
            v = _PINF if best > cap else best
        else:                           # N_REPEAT
            m = self.max_match(self.kids[f], memo, rule_max, cap)
            hi = self.nodes[i].maxv
            if m == 0:
                v = 0
            elif hi != hi or hi * m > cap:      # (hi NaN: unbounded)
                v = _PINF
            else:
                v = hi * m
        memo[i] = v
        return v

    cdef int64_t body_size(self, int32_t i, vector[int64_t]& memo, vector[uint8_t]& sized,
                           vector[int64_t]& inlined_size, bint plain) except? -1:
        """Node count of node i's substituted expression (plain: as it is, which is what
        is under a whitespace wrapper, never substituted into); a call of a rule inlined
        counts its body's size (inlined_size >= 0)."""
        cdef int kd = self.nodes[i].kind
        cdef int32_t j, f = self.nodes[i].first, n = self.nodes[i].nkids, t
        cdef int64_t total, w
        if kd == N_LEAF:
            return self.nodes[i].weight
        if kd == N_REF:
            t = self.nodes[i].callee
            if not plain and inlined_size[t] >= 0:
                return inlined_size[t]
            return 1
        if kd == N_DFA:
            if self.nodes[i].weight < 0:
                self.nodes[i].weight = _ir.dfa_size(<object>self.nodes[i].obj)
            return self.nodes[i].weight
        if kd == N_WS:
            return self.body_size(self.kids[f], memo, sized, inlined_size, True)
        if not plain and sized[i]:
            return memo[i]
        if kd == N_REPEAT:
            w = self.nodes[i].weight
            if w == _NO_WEIGHT:
                e = <object>self.nodes[i].obj
                w = e.hi if e.hi is not None else e.lo + 1     # raises as it did
            if self.nodes[i].long_ref:
                total = _wrap_add(1, w)             # kept as a call: one node
            else:
                total = _wrap_add(1, _wrap_mul(
                    self.body_size(self.kids[f], memo, sized, inlined_size, plain), w))
        else:
            total = 1
            for j in range(n):
                total = _wrap_add(total, self.body_size(self.kids[f + j], memo, sized,
                                                        inlined_size, plain))
        if not plain:
            memo[i] = total
            sized[i] = 1
        return total

    cdef object rebuild(self, int32_t i, vector[uint8_t]& changed, list made, list bodies):
        """Node i's expression with the inlined calls substituted (i changed)."""
        cdef int kd = self.nodes[i].kind
        cdef int32_t j, f = self.nodes[i].first, n = self.nodes[i].nkids, c
        if kd == N_REF:
            return bodies[self.nodes[i].callee]
        x = made[i]
        if x is not None:
            return x
        e = <object>self.nodes[i].obj
        if kd == N_REPEAT:
            x = _make(_Repeat, _REPEAT_ITEM, "item",
                      self.rebuild(self.kids[f], changed, made, bodies),
                      _REPEAT_LO, "lo", _field(e, _REPEAT_LO, "lo"),
                      _REPEAT_HI, "hi", _field(e, _REPEAT_HI, "hi"))
        else:
            items = PyTuple_New(n)
            for j in range(n):
                c = self.kids[f + j]
                y = self.rebuild(c, changed, made, bodies) if changed[c] \
                    else <object>self.nodes[c].obj
                Py_INCREF(y)
                PyTuple_SET_ITEM(items, j, y)
            x = _make(_Seq, _SEQ_ITEMS, "items", items) if kd == N_SEQ \
                else _make(_Alt, _ALT_ITEMS, "items", items)
        made[i] = x
        return x


def _recursive_rules(refs):
    """The rules that reach themselves (members of a strongly connected component of more
    than one rule, or calling themselves), of a call graph given as rule -> set of callees:
    the pass's Tarjan over int arrays, for names (tests/test_automaton_recursive_rules.py)."""
    cdef _InlinePass p = _InlinePass()
    names = list(refs)
    index = {n: i for i, n in enumerate(names)}
    p.n_rules = len(names)
    for n in names:
        p.refs_first.push_back(<int32_t>p.refs.size())
        for m in refs[n]:
            p.refs.push_back(<int32_t>index[m])
    p.refs_first.push_back(<int32_t>p.refs.size())
    cdef vector[uint8_t] recursive
    cdef vector[int32_t] order
    p.tarjan(recursive, order)
    return {names[i] for i in range(len(names)) if recursive[i]}


# the whole inlining pass (see automaton._inline_small_rules for the why)
def inline_small_rules(grammar, ws_type, inline_max_match, inline_max_size, any_order=None,
                       bint root_uses=False):
    """automaton._inline_small_rules: (rule -> expression with small rules inlined,
    rule -> rules that expression calls).

    root_uses: return instead (rule -> expression, for the rules in use only; the rules in
    use: those the root reaches through the substituted expressions, the root included, in
    the grammar's order), what the build needs, without a set of names per rule.

    any_order: the type of the rules whose positions are made elsewhere (ir.AnyOrder), a
    tuple of such types (with ir.FreeKey), or None. Such a rule is
    seen as an alternative of calls of the rules it calls (so they count as called: recursion
    through the object, rules in use), is never inlined, and comes back as it is, calling
    those rules; its callees stay rules whatever their size, since its positions call them."""
    cdef _InlinePass p = _InlinePass()
    p.ws_type = ws_type
    p.flatten(grammar, any_order)
    rules = grammar.rules
    if p.undefined:
        p.raise_undefined(grammar)
    p.collect_refs()
    cdef vector[uint8_t] recursive
    cdef vector[int32_t] order
    p.tarjan(recursive, order)

    cdef int32_t nr = p.n_rules, r, e, i, m, s, nn = <int32_t>p.nodes.size()
    cdef int kd
    cdef double cap = inline_max_match
    cdef int64_t max_size = inline_max_size, k
    # longest match per rule, callees first (recursive rules: inf)
    cdef vector[double] rule_max, mm_memo
    rule_max.resize(nr, _PINF)
    mm_memo.resize(nn, _UNMEASURED)
    for r in order:
        if not recursive[r]:
            rule_max[r] = p.max_match(p.root[r], mm_memo, rule_max, cap)

    # only rules matching short strings (a character, an escape): long or unbounded ones
    # (string bodies, numbers) keep their frames so their mask tables are shared.
    # Whitespace rules inline too (wrapped, so their bytes still spend the budget): a separate
    # whitespace frame would make every token that starts with a space cross a rule end.
    cdef int32_t root_rule = p.rule_index.get(grammar.root, -1)
    cdef vector[uint8_t] inlinable
    inlinable.resize(nr, 0)
    for r in range(nr):
        inlinable[r] = (r != root_rule and not recursive[r] and not p.container[r]
                        and not p.stand_in[r] and not p.keep_frame[r]
                        and (p.whitespace[r] or rule_max[r] <= cap))

    # the calls a substitution reaches (not those of long counted runs, nor under a
    # whitespace wrapper): only those rules' bodies are ever made
    cdef vector[uint8_t] reach, reached
    reach.resize(nn, 0)
    reached.resize(nr, 0)
    for r in range(nr):
        reach[p.root[r]] = 1
    cdef ExprNode* x
    i = nn - 1
    while i >= 0:                       # parents after their children: one sweep down
        if reach[i]:
            x = &p.nodes[i]
            kd = x.kind
            if kd == N_REF:
                if x.callee >= 0:
                    reached[x.callee] = 1
            elif kd == N_SEQ or kd == N_ALT or (kd == N_REPEAT and not x.long_ref):
                for e in range(x.first, x.first + x.nkids):
                    reach[p.kids[e]] = 1
        i -= 1

    # which rules are inlined: reached, inlinable, and a substituted body of at most
    # inline_max_size nodes (callees first, so a body's calls are decided before it)
    cdef vector[int64_t] inlined_size, size_memo
    cdef vector[uint8_t] sized
    inlined_size.resize(nr, -1)
    size_memo.resize(nn, 0)
    sized.resize(nn, 0)
    cdef bint any_inlined = False
    for r in order:
        if inlinable[r] and reached[r]:
            k = p.body_size(p.root[r], size_memo, sized, inlined_size, False)
            if k <= max_size:
                inlined_size[r] = k
                any_inlined = True

    # the nodes that change: calls of inlined rules, and what contains one (children
    # first, so one sweep up)
    cdef vector[uint8_t] changed
    changed.resize(nn, 0)
    if any_inlined:
        for i in range(nn):
            x = &p.nodes[i]
            kd = x.kind
            if kd == N_REF:
                changed[i] = x.callee >= 0 and inlined_size[x.callee] >= 0
            elif kd == N_SEQ or kd == N_ALT:
                for e in range(x.first, x.first + x.nkids):
                    if changed[p.kids[e]]:
                        changed[i] = 1
                        break
            elif kd == N_REPEAT and not x.long_ref:
                changed[i] = changed[p.kids[x.first]]

    # inlined bodies, callees first, then every rule's expression; unchanged subtrees stay
    # the same objects (the builder shares by identity)
    made = [None] * nn if any_inlined else None
    bodies = [None] * nr
    if any_inlined:
        for r in order:
            if inlined_size[r] >= 0:
                i = p.root[r]
                y = p.rebuild(i, changed, made, bodies) if changed[i] \
                    else <object>p.nodes[i].obj
                bodies[r] = ws_type(y) if p.whitespace[r] else y
    # rules each substituted expression calls: its own calls, with inlined rules replaced by
    # what their bodies call (and kept where a long counted run still calls them)
    cdef vector[int32_t] mark, long_mark
    cdef vector[vector[int32_t]] per_rule
    per_rule.resize(nr)
    mark.resize(nr, -1)
    long_mark.resize(nr, -1)
    for r in order:
        for e in range(p.long_first[r], p.long_first[r + 1]):
            long_mark[p.longs[e]] = r
        for e in range(p.refs_first[r], p.refs_first[r + 1]):
            m = p.refs[e]
            if inlined_size[m] >= 0:
                for s in per_rule[m]:
                    if mark[s] != r:
                        mark[s] = r
                        per_rule[r].push_back(s)
                if long_mark[m] != r:
                    continue
            if mark[m] != r:
                mark[m] = r
                per_rule[r].push_back(m)
    cdef list names = list(rules)
    cdef vector[uint8_t] used
    cdef vector[int32_t] todo
    if root_uses:
        # the rules in use: reached from the root through the calls of the substituted
        # expressions (an any-order rule's: its members, each still a rule)
        used.resize(nr, 0)
        if root_rule >= 0:
            used[root_rule] = 1
            todo.push_back(root_rule)
        while todo.size():
            r = todo.back()
            todo.pop_back()
            if p.stand_in[r]:
                for e in range(p.refs_first[r], p.refs_first[r + 1]):
                    m = p.refs[e]
                    if not used[m]:
                        used[m] = 1
                        todo.push_back(m)
            else:
                for m in per_rule[r]:
                    if not used[m]:
                        used[m] = 1
                        todo.push_back(m)
        exprs = {}
        in_use = []
        for r in range(nr):
            if used[r]:
                n = names[r]
                in_use.append(n)
                i = p.root[r]
                exprs[n] = p.rebuild(i, changed, made, bodies) \
                    if changed[i] and not p.stand_in[r] else p.exprs[r]
        return exprs, in_use
    exprs = {}
    r = 0
    for n in rules:
        i = p.root[r]
        exprs[n] = p.rebuild(i, changed, made, bodies) if changed[i] and not p.stand_in[r] \
            else p.exprs[r]
        r += 1

    cdef dict out_calls = {}
    cdef set called
    r = 0
    for n in rules:
        if p.stand_in[r]:
            out_calls[n] = set(p.exprs[r].refs())
        else:
            called = set()
            for s in per_rule[r]:
                called.add(names[s])
            out_calls[n] = called
        r += 1
    return exprs, out_calls
