# distutils: language = c++
# Design: the automaton builder, one module per phase, in the order a build runs them:
#   _build_inline     the inlining pass (small rules substituted into their callers)
#   _build_nfa        Thompson construction of a rule (RuleNfa), over _build_utf8's UTF-8
#                     sequences and _build_ir's slot access to the IR
#   _build_dfa        subset construction (Determinizer), appending positions
#   _build_minimize   merging the positions of each rule that behave alike
#   _build_analyses   nullable rules, left recursion, shortest completions
#   _build_pack       pruning, closure chains, the numpy tables
# The Builder here is the position tables (_build_positions.Positions, whose fields every
# phase reads and writes) and the sequence of those phases; _build_hash holds the hash tables
# the phases share. Hot lookups are inline in the .pxd files, so no inner loop calls across
# modules. The automaton's constants come from _automaton.pxd, the one place they are defined.
"""The automaton builder (cengine.automaton.build): Builder, over the C++ kernels of its phases.

The Python side hands the rules to a `Builder`, which builds each rule's Thompson NFA, does
the subset construction and every per-position pass (minimisation, nullable rules, left
callees, shortest completion, pruning, closure chains) over C++ vectors, then packs the numpy
tables.

Everything here must reproduce the frozen pure-Python builder, the test oracle
tests/oracles/automaton_reference.py, exactly: the same DFA numbering
(discovery order: byte partitions ascending, then calls by rule), the same Bellman-Ford sweep
order (tie-breaking of the completion pointers), the same DFS order for closure chains, the
same compile-work units spent at the same moments, and the same error messages.
"""
from libc.stdint cimport int64_t
cimport cython

cimport cengine._automaton as _a
cimport cengine._build_analyses as _analyses
cimport cengine._build_minimize as _minimize
cimport cengine._build_pack as _pack
from cengine._build_dfa cimport Determinizer
from cengine._build_ir cimport _made_elsewhere
from cengine._build_nfa cimport RuleNfa
from cengine._build_positions cimport GIL_YIELD_UNITS, Positions

# the automaton's constants for Python (cengine.automaton re-exports them), defined once in
# _automaton.pxd; the kernels use the C constants as _a.X
FLAG_FINAL = _a.FLAG_FINAL
FLAG_WS = _a.FLAG_WS
FLAG_CONTAINER = _a.FLAG_CONTAINER
INF = _a.INF


@cython.final
cdef class Builder(Positions):
    """The positions of a grammar's rules, built phase by phase: add_rules (or add_rule and
    add_positions, a rule at a time), minimize, nullable / left_cycle, shortest, finish."""
    cdef public int failed_rule     # add_rules: the rule being built when one raised
    cdef public int failed_phase
    cdef Determinizer dfa

    def __init__(self, int64_t limit, int max_positions, int64_t max_growth=0,
                 str limit_name="MAX_COMPILE_WORK"):
        self.used = 0
        self.failed_rule = -1
        self.failed_phase = -1
        self.next_yield = GIL_YIELD_UNITS
        self.limit = limit
        self.max_positions = max_positions
        self.limit_name = limit_name
        self.e_off.push_back(0)
        self.c_off.push_back(0)
        self.dfa = Determinizer(max_growth)

    @property
    def n_positions(self):
        return <int>self.finals.size()

    def add_rules(self, list names, dict exprs, list whitespace, dict rule_index, ws_type,
                  bint share, int max_nfa_states, any_order, any_order_positions,
                  list kept_keys=None, dict kept=None):
        """The DFA of every rule in turn, names[i] being rule i (what add_rule and
        add_positions do one call at a time, without a Python round per rule): an any_order
        expression's positions from any_order_positions(expression, rule_index), every other
        expression's Thompson NFA (RuleNfa(rule_index, name, whitespace[i], max_nfa_states,
        ws_type, share), one reused) determinized. When one raises, failed_rule is the rule's
        index and failed_phase what was running: 0 the any-order positions, 1 the NFA, 2 the
        subset construction.

        kept_keys[i], when not None, is a key of kept (a dict the caller keeps across builds)
        under which rule i's determinized positions are stored: (the packed positions, the
        work units their construction spent). A rule found there is added from them and
        spends the same units, so a build refuses, or not, whatever was kept before. Only a
        rule without calls is stored (its positions name no other rule)."""
        cdef RuleNfa nfa = None
        cdef int ri, s, t, base
        cdef int64_t used0
        for ri in range(len(names)):
            name = names[ri]
            e = exprs[name]
            self.failed_rule = ri
            if _made_elsewhere(e, any_order):
                self.failed_phase = 0
                self.add_positions(ri, any_order_positions(e, rule_index))
                continue
            key = kept_keys[ri] if kept_keys is not None else None
            if key is not None:
                got = kept.get(key)
                if got is not None:
                    self.failed_phase = 2
                    self.add_packed(ri, got[0], got[1])
                    continue
            self.failed_phase = 1
            if nfa is None:
                nfa = RuleNfa(rule_index, name, whitespace[ri], max_nfa_states, ws_type, share)
            else:
                nfa.reset(name, whitespace[ri])
            s = nfa.new()
            t = nfa.new()
            nfa.emit(e, s, t, 0)
            self.failed_phase = 2
            base = <int>self.finals.size()
            used0 = self.used
            self.dfa.add_rule(self, ri, nfa, s, t)
            if key is not None:
                packed = self.packed_since(base)
                if packed is not None:
                    kept[key] = (packed, self.used - used0)
        self.failed_rule = -1
        self.failed_phase = -1

    def add_rule(self, int rule, RuleNfa nfa, int start, int accept):
        """Determinize one rule's NFA and append its DFA states as positions."""
        self.dfa.add_rule(self, rule, nfa, start, accept)

    # --- positions made elsewhere (cengine._anyorder: the states of an any-order object) ----
    def add_positions(self, int rule, const int[::1] packed):
        """Append one rule's ready positions, numbered from 0 (its start) within the rule, as
        cengine._anyorder.positions packs them into one int32 array (one array per table cost
        more to make and read than the object's positions): P, E, C, then finals[P],
        e_off[P+1], e_lo[E], e_hi[E], e_to[E], e_ws[E], c_off[P+1], c_rule[C], c_to[C]; per
        position p, byte edges e_*[e_off[p]:e_off[p+1]] (ascending, disjoint) and calls
        c_*[c_off[p]:c_off[p+1]] (one per callee, ascending). Spends a unit of work per
        position, edge and call."""
        self.add_packed(rule, packed, -1)

    def minimize(self, int max_rounds, list kept_keys=None, dict kept=None,
                 dict minimal=None):
        """Merge the positions of each rule that behave alike (_build_minimize.minimize, which
        says how and what kept_keys, kept and minimal do). Returns (positions before,
        positions after)."""
        return _minimize.minimize(self, max_rounds, kept_keys, kept, minimal)

    def nullable(self):
        """Rules whose start reaches a final position through nullable calls only (fixpoint)."""
        return _analyses.nullable(self)

    def left_cycle(self):
        """The first left-recursive cycle of rules, [r, ..., r], or None
        (_build_analyses.left_cycle)."""
        return _analyses.left_cycle(self)

    def shortest(self):
        """Shortest completion per position (_build_analyses.shortest). Returns short_len[] of
        the starts."""
        return _analyses.shortest(self)

    def finish(self, list rule_ws, list rule_container, list names):
        """Prune dead edges, compute flags and closure chains, pack the tables (a dict)."""
        return _pack.finish(self, rule_ws, rule_container, names)
