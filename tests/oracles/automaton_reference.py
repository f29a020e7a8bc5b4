"""Frozen pure-Python copy of the automaton builder, kept as the reference (a test oracle)
that the fast builder (cengine.automaton) must match table for table; see
tests/test_automaton_build_equivalence.py. It builds cengine's own Automaton (whose fields are
the one declaration of the tables) with cengine's constants.

Grammar IR -> one byte-level pushdown automaton (flat numpy tables).

Design: every rule becomes a DFA whose edges are byte ranges or *calls* of other rules.
All DFA states of all rules are numbered into one space of "positions". A matcher state is
a set of stacks; a stack is a chain of frames, the top frame a position that consumes bytes,
the frames below it return positions. Three things are precomputed per position so the
runtime never searches:

* closure chains: after a byte moves the top frame to position q, q is replaced by the
  chains of frames it expands to (calls pushed, nullable callees skipped) plus a "pop" flag
  when q's rule may end there. A call whose return position is final and has no edges is a
  tail call: no return frame is pushed, so right recursion (x*, lists) keeps the stack flat.
* shortest completion: the length of the shortest bytes from q to the end of q's rule and
  the first step of one such string (a byte, or a call then a position), by a Bellman-Ford
  fixpoint; the closer follows these pointers frame by frame.
* flags: final, whitespace (bytes spend the document's whitespace budget), container
  (frames of this rule count toward max_depth).

Left recursion (direct, indirect, behind nullable prefixes) is refused here, naming the rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from cengine import ir
from cengine.automaton import FLAG_CONTAINER, FLAG_FINAL, FLAG_WS, INF, Automaton
from cengine.errors import CompileError, LimitError
from cengine.utf8 import sequences

from .inline_reference import _recursive_rules

# documented limits
MAX_NFA_STATES = 400_000
MAX_POSITIONS = 400_000


class _NFA:
    __slots__ = ("eps", "bytes_", "calls")

    def __init__(self):
        self.eps: List[List[int]] = []
        self.bytes_: List[List[Tuple[int, int, int, int]]] = []   # (lo, hi, to, whitespace)
        self.calls: List[List[Tuple[int, int]]] = []

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise LimitError(f"grammar needs more than {MAX_NFA_STATES} automaton states")
        self.eps.append([])
        self.bytes_.append([])
        self.calls.append([])
        return len(self.eps) - 1


class _RuleCompiler:
    """Thompson construction of one rule's expression over bytes and calls."""

    def __init__(self, rule_index: Dict[str, int], rule_name: str, whitespace: bool = False):
        self.nfa = _NFA()
        self.ws = 1 if whitespace else 0    # bytes emitted now spend the whitespace budget
        self.rule_index = rule_index
        self.rule_name = rule_name
        self._charset_cache: Dict[ir.Ranges, List[List[Tuple[int, int]]]] = {}

    def build(self, e: ir.Expr) -> Tuple[int, int]:
        s = self.nfa.new()
        t = self.nfa.new()
        self._emit(e, s, t)
        return s, t

    def _emit(self, e, s: int, t: int) -> None:
        nfa = self.nfa
        if isinstance(e, ir.Bytes):
            cur = s
            for i, b in enumerate(e.data):
                nxt = t if i == len(e.data) - 1 else nfa.new()
                nfa.bytes_[cur].append((b, b, nxt, self.ws))
                cur = nxt
            if not e.data:
                nfa.eps[s].append(t)
        elif isinstance(e, ir.ByteSet):
            for lo, hi in e.ranges:
                nfa.bytes_[s].append((lo, hi, t, self.ws))
        elif isinstance(e, ir.CharSet):
            seqs = self._charset_cache.get(e.ranges)
            if seqs is None:
                seqs = [sq for lo, hi in e.ranges for sq in sequences(lo, hi)]
                self._charset_cache[e.ranges] = seqs
            # share the tails: sequences of equal length end in the same states
            for sq in seqs:
                cur = s
                for i, (lo, hi) in enumerate(sq):
                    nxt = t if i == len(sq) - 1 else nfa.new()
                    nfa.bytes_[cur].append((lo, hi, nxt, self.ws))
                    cur = nxt
        elif isinstance(e, ir.Seq):
            cur = s
            for i, it in enumerate(e.items):
                nxt = t if i == len(e.items) - 1 else nfa.new()
                self._emit(it, cur, nxt)
                cur = nxt
        elif isinstance(e, ir.Alt):
            for it in e.items:
                a = nfa.new()
                b = nfa.new()
                nfa.eps[s].append(a)
                self._emit(it, a, b)
                nfa.eps[b].append(t)
        elif isinstance(e, ir.Repeat):
            cur = s
            for _ in range(e.lo):
                nxt = nfa.new()
                self._emit(e.item, cur, nxt)
                cur = nxt
            if e.hi is None:
                # loop through a fresh head (cur may have other exits: an optional's skip)
                head = nfa.new()
                body_s = nfa.new()
                body_t = nfa.new()
                nfa.eps[cur].append(head)
                nfa.eps[head].append(body_s)
                self._emit(e.item, body_s, body_t)
                nfa.eps[body_t].append(head)
                nfa.eps[head].append(t)
            else:
                for _ in range(e.hi - e.lo):
                    nfa.eps[cur].append(t)
                    nxt = nfa.new()
                    self._emit(e.item, cur, nxt)
                    cur = nxt
                nfa.eps[cur].append(t)
        elif isinstance(e, ir.Dfa):
            states = [nfa.new() for _ in e.accepting]
            nfa.eps[s].append(states[0])
            for q, row in enumerate(e.edges):
                for lo, hi, nxt in row:
                    nfa.bytes_[states[q]].append((lo, hi, states[nxt], self.ws))
                if e.accepting[q]:
                    nfa.eps[states[q]].append(t)
        elif isinstance(e, ir.Ref):
            idx = self.rule_index.get(e.name)
            if idx is None:
                raise CompileError(f"rule '{e.name}' is used but never defined",
                                   rule=self.rule_name)
            nfa.calls[s].append((idx, t))
        elif isinstance(e, _Whitespace):
            saved = self.ws
            self.ws = 1
            self._emit(e.item, s, t)
            self.ws = saved
        elif isinstance(e, ir.Nothing):
            pass
        else:  # pragma: no cover - a front end produced something unknown
            raise TypeError(f"not a grammar expression: {e!r}")


class _Budget:
    """Deterministic cap on compile work (DFA construction), so no request can tie up a core
    for seconds: the count is of NFA states touched, independent of machine speed."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise LimitError(f"grammar too costly to compile: more than {self.limit:,} units "
                             "of automaton construction work (MAX_COMPILE_WORK)")


MAX_COMPILE_WORK = 30_000_000


def _determinize(nfa: _NFA, start: int, accept: int, budget: "_Budget"):
    """Subset construction. Returns (final flags, byte edges, call edges) per DFA state."""

    def closure(states):
        stack = list(states)
        seen = set(states)
        budget.spend(8 + len(seen))
        while stack:
            q = stack.pop()
            for r in nfa.eps[q]:
                if r not in seen:
                    seen.add(r)
                    stack.append(r)
        return frozenset(seen)

    start_set = closure([start])
    index = {start_set: 0}
    order = [start_set]
    finals: List[bool] = []
    byte_edges: List[List[Tuple[int, int, int]]] = []
    call_edges: List[List[Tuple[int, int]]] = []
    i = 0
    while i < len(order):
        cur = order[i]
        i += 1
        finals.append(accept in cur)
        # byte edges: partition [0, 255] by range boundaries
        ranges = [e for q in cur for e in nfa.bytes_[q]]
        budget.spend(len(cur) + len(ranges))
        edges: List[Tuple[int, int, int, int]] = []
        if ranges:
            bounds = sorted({e[0] for e in ranges} | {e[1] + 1 for e in ranges})
            budget.spend(len(bounds) * len(ranges))
            for a, b in zip(bounds, bounds[1:]):
                hits = [(t, w) for lo, hi, t, w in ranges if lo <= a and b - 1 <= hi]
                if not hits:
                    continue
                wsflags = {w for _, w in hits}
                if len(wsflags) > 1:
                    raise CompileError(f"byte 0x{a:02x} is whitespace on one path and content on "
                                       "another: the whitespace budget would be ambiguous")
                ws = wsflags.pop()
                tset = closure([t for t, _ in hits])
                j = index.get(tset)
                if j is None:
                    j = index[tset] = len(order)
                    order.append(tset)
                    if len(order) > MAX_POSITIONS:
                        raise LimitError(f"grammar needs more than {MAX_POSITIONS} positions")
                if edges and edges[-1][2] == j and edges[-1][1] == a - 1 and edges[-1][3] == ws:
                    edges[-1] = (edges[-1][0], b - 1, j, ws)
                else:
                    edges.append((a, b - 1, j, ws))
        byte_edges.append(edges)
        calls: Dict[int, List[int]] = {}
        for q in cur:
            for r, t in nfa.calls[q]:
                calls.setdefault(r, []).append(t)
        cedges = []
        for r in sorted(calls):
            tset = closure(calls[r])
            j = index.get(tset)
            if j is None:
                j = index[tset] = len(order)
                order.append(tset)
            cedges.append((r, j))
        call_edges.append(cedges)
    return finals, byte_edges, call_edges


def _check_left_recursion(names, starts, finals, bedges, cedges, nullable, origins):
    # left callees of rule r: rules called at positions reachable from r's start without
    # consuming a byte (through nullable callees)
    left: List[set] = []
    for r, s in enumerate(starts):
        seen = {s}
        stack = [s]
        callees = set()
        while stack:
            p = stack.pop()
            for cr, t in cedges[p]:
                callees.add(cr)
                if nullable[cr] and t not in seen:
                    seen.add(t)
                    stack.append(t)
        left.append(callees)
    # cycle detection (iterative DFS, colours)
    colour = [0] * len(names)
    for r0 in range(len(names)):
        if colour[r0]:
            continue
        path = [r0]
        iters = [iter(sorted(left[r0]))]
        colour[r0] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
                continue
            if colour[nxt] == 1:
                cyc = path[path.index(nxt):] + [nxt]
                rule = names[nxt]
                line, col = origins.get(rule) or (None, None)
                raise CompileError("left recursion: " + " -> ".join(names[c] for c in cyc),
                                   rule=rule, line=line, column=col)
            if colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(left[nxt])))


INLINE_MAX_SIZE = 256


@dataclass(frozen=True)
class _Whitespace:
    """An inlined whitespace rule: the bytes it matches spend the whitespace budget."""
    item: object


def _expr_refs(e, out: set) -> None:
    if isinstance(e, ir.Ref):
        out.add(e.name)
    elif isinstance(e, (ir.Seq, ir.Alt)):
        for it in e.items:
            _expr_refs(it, out)
    elif isinstance(e, (ir.Repeat, _Whitespace)):
        _expr_refs(e.item, out)


def _expr_size(e) -> int:
    if isinstance(e, (ir.Seq, ir.Alt)):
        return 1 + sum(_expr_size(it) for it in e.items)
    if isinstance(e, ir.Repeat):
        return 1 + _expr_size(e.item) * max(1, min(e.hi if e.hi is not None else e.lo + 1, 64))
    if isinstance(e, _Whitespace):
        return _expr_size(e.item)
    if isinstance(e, ir.Bytes):
        return max(1, len(e.data))
    if isinstance(e, ir.Dfa):
        return ir.dfa_size(e)
    return 1


INLINE_MAX_MATCH = 16
UNROLL_INLINE_MAX = 32      # repeats counted above this call their item instead of inlining it


def _max_match(e, rule_max) -> float:
    """Longest byte string the expression can match (inf when unbounded)."""
    if isinstance(e, ir.Bytes):
        return len(e.data)
    if isinstance(e, ir.ByteSet):
        return 1
    if isinstance(e, ir.CharSet):
        top = e.ranges[-1][1] if e.ranges else 0
        return 1 if top < 0x80 else 2 if top < 0x800 else 3 if top < 0x10000 else 4
    if isinstance(e, ir.Seq):
        return sum(_max_match(it, rule_max) for it in e.items)
    if isinstance(e, ir.Alt):
        return max(_max_match(it, rule_max) for it in e.items)
    if isinstance(e, ir.Repeat):
        m = _max_match(e.item, rule_max)
        if m == 0:
            return 0
        return float("inf") if e.hi is None else e.hi * m
    if isinstance(e, ir.Ref):
        return rule_max(e.name)
    if isinstance(e, _Whitespace):
        return _max_match(e.item, rule_max)
    if isinstance(e, ir.Dfa):
        return ir.dfa_max_match(e)
    return 0


def _inline_small_rules(grammar: ir.GrammarIR) -> Dict[str, ir.Expr]:
    """Rule expressions with small, non-recursive, flag-free rules substituted into callers.

    Why: a rule that matches one character and is called in a loop (`char*`) pops after
    every byte, which makes nearly every token cross a rule end: the mask tables then can
    decide little ahead of time. Inlined, the loop is one DFA. Recursive rules, rules with
    container/whitespace semantics and the root keep their frames.
    """
    rules = grammar.rules
    refs = {}
    for n, r in rules.items():
        s: set = set()
        _expr_refs(r.expr, s)
        refs[n] = s
    for n, rs in refs.items():
        for m in rs:
            if m not in rules:
                line, col = (rules[n].origin or (None, None))
                raise CompileError(f"rule '{m}' is used but never defined", rule=m,
                                   line=line, column=col)
    recursive = _recursive_rules(refs)
    maxlen: Dict[str, float] = {n: float("inf") for n in recursive}

    def rule_max(n):
        return maxlen[n]

    # callees first (an explicit post-order: chains of rules, such as the states of a
    # number automaton, are thousands deep)
    for n0 in rules:
        if n0 in maxlen:
            continue
        todo = [(n0, False)]
        while todo:
            n, ready = todo.pop()
            if n in maxlen:
                continue
            if ready:
                maxlen[n] = _max_match(rules[n].expr, rule_max)
                continue
            todo.append((n, True))
            todo.extend((m, False) for m in refs[n] if m not in maxlen)

    # only rules matching short strings (a character, an escape): long or unbounded ones
    # (string bodies, numbers) keep their frames so their mask tables are shared
    # Whitespace rules inline too (wrapped, so their bytes still spend the budget): a separate
    # whitespace frame would make every token that starts with a space cross a rule end.
    inlinable = {n for n, r in rules.items()
                 if n != grammar.root and n not in recursive and not r.container
                 and not getattr(r, "frame", False)
                 and (r.whitespace or rule_max(n) <= INLINE_MAX_MATCH)}
    done: Dict[str, ir.Expr] = {}

    def subst(e):
        if isinstance(e, ir.Ref):
            if e.name in inlinable:
                x = resolved(e.name)
                if x is not None:
                    return x
            return e
        if isinstance(e, ir.Seq):
            return ir.Seq(tuple(subst(it) for it in e.items))
        if isinstance(e, ir.Alt):
            return ir.Alt(tuple(subst(it) for it in e.items))
        if isinstance(e, ir.Repeat):
            count = e.hi if e.hi is not None else e.lo
            if isinstance(e.item, ir.Ref) and count > UNROLL_INLINE_MAX:
                return e        # a long counted run calls its item: one copy of it, not n
            return ir.Repeat(subst(e.item), e.lo, e.hi)
        return e

    def resolved(n):
        # the inlined body of an inlinable rule, or None when it is too big to copy
        if n in done:
            return done[n]
        done[n] = None          # non-recursive, so no cycle reaches here again
        x = subst(rules[n].expr)
        if rules[n].whitespace:
            x = _Whitespace(x)
        done[n] = x if _expr_size(x) <= INLINE_MAX_SIZE else None
        return done[n]

    try:
        return {n: subst(r.expr) for n, r in rules.items()}
    except RecursionError:
        raise LimitError("grammar expressions nest too deeply") from None


def build_reference(grammar: ir.GrammarIR) -> Automaton:
    if grammar.root not in grammar.rules:
        raise CompileError(f"root rule '{grammar.root}' is not defined", rule=grammar.root)
    exprs = _inline_small_rules(grammar)
    # rules nobody calls any more (all inlined) are dropped; the root always stays
    used = {grammar.root}
    stack = [grammar.root]
    while stack:
        s: set = set()
        _expr_refs(exprs[stack.pop()], s)
        for m in s - used:
            used.add(m)
            stack.append(m)
    names = [n for n in grammar.rules if n in used]
    budget = _Budget(MAX_COMPILE_WORK)
    rule_index = {n: i for i, n in enumerate(names)}
    origins = {n: r.origin for n, r in grammar.rules.items() if r.origin}

    # per rule DFA, concatenated into one position space
    starts: List[int] = []
    finals: List[bool] = []
    bedges: List[List[Tuple[int, int, int]]] = []
    cedges: List[List[Tuple[int, int]]] = []
    pos_rule: List[int] = []
    for ri, name in enumerate(names):
        rc = _RuleCompiler(rule_index, name, whitespace=grammar.rules[name].whitespace)
        try:
            s, t = rc.build(exprs[name])
        except CompileError as e:
            if e.rule is None or e.line is None:
                line, col = origins.get(name) or (None, None)
                raise type(e)(e.reason, rule=name, line=line, column=col) from None
            raise
        f, be, ce = _determinize(rc.nfa, s, t, budget)
        base = len(finals)
        if base + len(f) > MAX_POSITIONS:
            raise LimitError(f"grammar needs more than {MAX_POSITIONS} positions")
        starts.append(base)
        finals.extend(f)
        bedges.extend([(lo, hi, base + j, w) for lo, hi, j, w in es] for es in be)
        cedges.extend([(r, base + j) for r, j in es] for es in ce)
        pos_rule.extend([ri] * len(f))
    P = len(finals)

    # nullable rules: the start reaches a final state through nullable calls only
    nullable = [False] * len(names)
    changed = True
    while changed:
        changed = False
        for r, s in enumerate(starts):
            if nullable[r]:
                continue
            seen = {s}
            stack = [s]
            ok = False
            while stack and not ok:
                p = stack.pop()
                if finals[p]:
                    ok = True
                    break
                for cr, t in cedges[p]:
                    if nullable[cr] and t not in seen:
                        seen.add(t)
                        stack.append(t)
            if ok:
                nullable[r] = True
                changed = True

    _check_left_recursion(names, starts, finals, bedges, cedges, nullable, origins)

    # shortest completion per position (Bellman-Ford with strict improvement: the chosen
    # pointers form no cycle, so the closer's walk terminates)
    short_len = [0 if finals[p] else INF for p in range(P)]
    short_kind = [0] * P
    short_byte = [0] * P
    short_rule = [0] * P
    short_to = [0] * P
    changed = True
    while changed:
        changed = False
        for p in range(P - 1, -1, -1):
            best = short_len[p]
            for lo, hi, t, _ in bedges[p]:
                v = 1 + short_len[t]
                if v < best:
                    best = v
                    short_kind[p], short_byte[p], short_to[p] = 1, lo, t
            for r, t in cedges[p]:
                v = short_len[starts[r]] + short_len[t]
                if v < best:
                    best = v
                    short_kind[p], short_rule[p], short_to[p] = 2, r, t
            if best < short_len[p]:
                short_len[p] = best
                changed = True
    root = rule_index[grammar.root]
    if short_len[starts[root]] >= INF:
        line, col = origins.get(grammar.root) or (None, None)
        raise CompileError("the grammar matches no document at all", rule=grammar.root,
                           line=line, column=col)

    # drop what leads nowhere: edges into positions that can never finish their rule, calls
    # of rules that never complete. The closer then always finds a way out of any state.
    for p in range(P):
        bedges[p] = [e for e in bedges[p] if short_len[e[2]] < INF]
        cedges[p] = [e for e in cedges[p]
                     if short_len[starts[e[0]]] < INF and short_len[e[1]] < INF]

    # a position is "trivial" when its rule can only end there: returning to it = popping it
    trivial = [finals[p] and not bedges[p] and not cedges[p] for p in range(P)]

    # closure chains
    flags = [0] * P
    for p in range(P):
        rule = grammar.rules[names[pos_rule[p]]]
        flags[p] = (FLAG_FINAL if finals[p] else 0) | (FLAG_WS if rule.whitespace else 0) | \
            (FLAG_CONTAINER if rule.container else 0)
    chain_index: Dict[Tuple[int, ...], int] = {}
    chains: List[Tuple[int, ...]] = []
    clo_lists: List[List[int]] = []
    clo_pop = [0] * P
    for p in range(P):
        out: List[int] = []
        seen_chains = set()
        visited = set()
        pop = False
        work = [(p, ())]
        while work:
            q, below = work.pop()
            if (q, below) in visited:
                continue
            visited.add((q, below))
            if bedges[q]:
                ch = (q,) + below
                if ch not in seen_chains:
                    seen_chains.add(ch)
                    j = chain_index.get(ch)
                    if j is None:
                        j = chain_index[ch] = len(chains)
                        chains.append(ch)
                    out.append(j)
            if finals[q]:
                if below:
                    work.append((below[0], below[1:]))
                else:
                    pop = True
            for r, t in cedges[q]:
                nb = below if trivial[t] else (t,) + below
                if len(nb) > 256:
                    raise LimitError("rule calls nest more than 256 deep without consuming a byte",
                                     rule=names[r])
                work.append((starts[r], nb))
        clo_lists.append(out)
        clo_pop[p] = 1 if pop else 0

    def i32(x):
        return np.asarray(x, dtype=np.int32)

    edge_off = np.zeros(P + 1, np.int32)
    call_off = np.zeros(P + 1, np.int32)
    clo_off = np.zeros(P + 1, np.int32)
    for p in range(P):
        edge_off[p + 1] = edge_off[p] + len(bedges[p])
        call_off[p + 1] = call_off[p] + len(cedges[p])
        clo_off[p + 1] = clo_off[p] + len(clo_lists[p])
    flat_e = [e for es in bedges for e in es]
    flat_c = [e for es in cedges for e in es]
    chain_off = np.zeros(len(chains) + 1, np.int32)
    for i, ch in enumerate(chains):
        chain_off[i + 1] = chain_off[i] + len(ch)

    # the document itself: a virtual frame calling root; start from a return-less root start
    return Automaton(
        rule_names=tuple(names),
        rule_start=i32(starts),
        root_rule=root,
        pos_rule=i32(pos_rule),
        pos_flags=np.asarray(flags, np.uint8),
        edge_off=edge_off,
        edge_lo=np.asarray([e[0] for e in flat_e], np.uint8),
        edge_hi=np.asarray([e[1] for e in flat_e], np.uint8),
        edge_to=i32([e[2] for e in flat_e]),
        edge_ws=np.asarray([e[3] for e in flat_e], np.uint8),
        call_off=call_off,
        call_rule=i32([e[0] for e in flat_c]),
        call_to=i32([e[1] for e in flat_c]),
        clo_off=clo_off,
        clo_chain=i32([j for lst in clo_lists for j in lst]),
        chain_off=chain_off,
        chain_pos=i32([q for ch in chains for q in ch]),
        clo_pop=np.asarray(clo_pop, np.uint8),
        short_len=np.asarray(short_len, np.int64),
        short_kind=np.asarray(short_kind, np.uint8),
        short_byte=np.asarray(short_byte, np.uint8),
        short_rule=i32(short_rule),
        short_to=i32(short_to),
        root_start=starts[root],
        max_depth=grammar.max_depth if grammar.max_depth is not None else (1 << 30),
        whitespace_budget=-1 if grammar.whitespace_budget is None else grammar.whitespace_budget,
    )
