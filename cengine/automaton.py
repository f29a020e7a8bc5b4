"""Grammar IR -> one byte-level pushdown automaton (flat numpy tables).

Design: every rule becomes a DFA whose edges are byte ranges or *calls* of other rules (an
ir.AnyOrder rule's DFA is made directly, cengine._anyorder, and so are an ir.FreeKey rule's
and an ir.KeyEscape rule's, cengine._keytrie; every other rule's by Thompson and subset
construction).
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

Before those passes the positions of each rule that behave alike are merged (hash-consing
from the rules' last positions, Builder.minimize): front ends copy expressions, so the
subset construction's positions repeat the same futures many times; fewer positions are
less to build and fewer mask tables to fill.

Left recursion (direct, indirect, behind nullable prefixes) is refused here, naming the rule.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field, fields
from typing import ContextManager, Dict, Optional, Tuple

import numpy as np

from . import ir
from .errors import CompileError
from ._build import FLAG_CONTAINER, FLAG_FINAL, FLAG_WS, INF  # noqa: F401  (defined in _automaton.pxd)
from ._build_dfa import DFA_GROWTH_SLACK  # noqa: F401  (re-exported beside MAX_DFA_GROWTH)
from ._build import Builder
from ._build_inline import inline_small_rules
from ._anyorder import positions as any_order_positions
from ._keytrie import escape_positions as key_escape_positions
from ._keytrie import positions as free_key_positions
from .errors import LimitError

# documented limits
MAX_NFA_STATES = 400_000
MAX_POSITIONS = 400_000


# Deterministic cap on compile work (DFA construction), so no request can tie up a core for
# seconds: the count is of NFA states touched, independent of machine speed (spent in _build).
MAX_COMPILE_WORK = 30_000_000
# A rule's DFA may have at most this many states per NFA state it has reached so far (plus
# DFA_GROWTH_SLACK, 4,096): determinisation that explodes is refused after a few thousand
# states, in milliseconds, where the work cap takes about a second. Real grammars stay far
# below it: the maskbench corpus, the llama.cpp grammars and the JSON-Schema-Test-Suite all
# compile even at a growth of 1 (docs/limits.md).
MAX_DFA_GROWTH = 8


@dataclass(frozen=True)
class CompileBudget:
    """What one automaton build may spend in its subset construction; None takes the
    module's default at build time (MAX_COMPILE_WORK, MAX_DFA_GROWTH).

    max_work: work units (NFA states touched), for the whole grammar.
    max_dfa_growth: DFA states a rule may have per NFA state its DFA states contain so far
    (plus DFA_GROWTH_SLACK); 0 turns the check off.
    Exceeding either raises LimitError whose .limit is "max_compile_work" or "max_dfa_growth"."""
    max_work: Optional[int] = None
    max_dfa_growth: Optional[int] = None

    def __post_init__(self):
        for name, v, least in (("max_work", self.max_work, 1),
                               ("max_dfa_growth", self.max_dfa_growth, 0)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < least):
                raise ValueError(f"CompileBudget.{name} must be None or an integer >= {least}, "
                                 f"not {v!r}")


# the budget of the compile running in this context: a compile function sets it around its
# build, so the builds it makes on the way (a schema's pattern checks) spend under it too
_BUDGET: contextvars.ContextVar[Optional[CompileBudget]] = contextvars.ContextVar(
    "cengine_compile_budget", default=None)


class _BudgetScope:
    __slots__ = ("budget", "token")

    def __init__(self, budget):
        self.budget = budget

    def __enter__(self) -> None:
        if not isinstance(self.budget, CompileBudget):
            raise TypeError(f"budget must be a cengine.CompileBudget, not "
                            f"{type(self.budget).__name__}")
        self.token = _BUDGET.set(self.budget)

    def __exit__(self, *exc) -> None:
        _BUDGET.reset(self.token)


# what budget_scope(None) returns: nothing to set, one reusable object (every compile enters
# a scope, most with no budget; a generator-based context manager cost a few µs each time)
_NO_SCOPE: ContextManager[None] = contextlib.nullcontext()


def budget_scope(budget: Optional[CompileBudget]) -> ContextManager[None]:
    """Builds inside the block use `budget` (None: the surrounding one, else the defaults)."""
    if budget is None:
        return _NO_SCOPE
    return _BudgetScope(budget)


_DEFAULT_BUDGET = CompileBudget()


def _builder() -> Builder:
    budget = _BUDGET.get() or _DEFAULT_BUDGET
    if budget.max_work is None:
        work, name = MAX_COMPILE_WORK, "MAX_COMPILE_WORK"
    else:
        work, name = budget.max_work, f"max_work={budget.max_work:,}"
    growth = MAX_DFA_GROWTH if budget.max_dfa_growth is None else budget.max_dfa_growth
    return Builder(work, MAX_POSITIONS, growth, name)


def _table(dtype, kernel: bool):
    """A table field of Automaton: its dtype, and whether the C kernels read it (Prog)."""
    return field(metadata={"dtype": np.dtype(dtype), "kernel": kernel})


@dataclass(frozen=True)
class Automaton:
    """Flat, immutable tables of the pushdown automaton (see module docstring).

    The table fields are the one declaration of the tables: TABLES and KERNEL_TABLES below
    are read off them, and the C struct Prog (_automaton.pxd) is checked against
    KERNEL_TABLES when _matcher is imported."""
    rule_names: Tuple[str, ...]
    rule_start: np.ndarray = _table(np.int32, True)     # [R]   position of each rule's start state
    root_rule: int
    pos_rule: np.ndarray = _table(np.int32, False)      # [P]
    pos_flags: np.ndarray = _table(np.uint8, True)      # [P]   FLAG_*
    edge_off: np.ndarray = _table(np.int32, True)       # [P+1] byte edges of p: [p]:[p+1]
    edge_lo: np.ndarray = _table(np.uint8, True)        # [E]
    edge_hi: np.ndarray = _table(np.uint8, True)        # [E]
    edge_to: np.ndarray = _table(np.int32, True)        # [E]
    edge_ws: np.ndarray = _table(np.uint8, True)        # [E]   1: the byte spends whitespace budget
    call_off: np.ndarray = _table(np.int32, False)      # [P+1] call edges (rule, return position)
    call_rule: np.ndarray = _table(np.int32, False)     # [C]
    call_to: np.ndarray = _table(np.int32, False)       # [C]
    clo_off: np.ndarray = _table(np.int32, True)        # [P+1] closure chains of p: [p]:[p+1]
    clo_chain: np.ndarray = _table(np.int32, True)      # [K]
    chain_off: np.ndarray = _table(np.int32, True)      # [N+1] frames of chain c, top first
    chain_pos: np.ndarray = _table(np.int32, True)      # [M]
    clo_pop: np.ndarray = _table(np.uint8, True)        # [P]   1 if p's rule may end at p (pop)
    short_len: np.ndarray = _table(np.int64, True)      # [P]   shortest bytes to the rule's end
                                                        #       (INF: none)
    short_kind: np.ndarray = _table(np.uint8, True)     # [P]   0 end here, 1 byte, 2 call
    short_byte: np.ndarray = _table(np.uint8, True)     # [P]
    short_rule: np.ndarray = _table(np.int32, True)     # [P]
    short_to: np.ndarray = _table(np.int32, True)       # [P]
    root_start: int             # position the document starts at (a "return position")
    max_depth: int              # container nesting limit (large when unlimited)
    whitespace_budget: int      # -1 = unbounded

    @property
    def n_positions(self) -> int:
        return int(self.pos_rule.shape[0])

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name, _ in TABLES)


# (name, dtype) of every table, and of those the C kernels read, in declaration order
TABLES: Tuple[Tuple[str, np.dtype], ...] = tuple(
    (f.name, f.metadata["dtype"]) for f in fields(Automaton) if "dtype" in f.metadata)
KERNEL_TABLES: Tuple[Tuple[str, np.dtype], ...] = tuple(
    (f.name, f.metadata["dtype"]) for f in fields(Automaton)
    if "dtype" in f.metadata and f.metadata["kernel"])


INLINE_MAX_SIZE = 256


@dataclass(frozen=True)
class _Whitespace:
    """An inlined whitespace rule: the bytes it matches spend the whitespace budget."""
    item: object


INLINE_MAX_MATCH = 16


def _inline_small_rules(grammar: ir.GrammarIR, root_uses: bool = False):
    """Rule expressions with small, non-recursive, flag-free rules substituted into callers.

    Why: a rule that matches one character and is called in a loop (`char*`) pops after
    every byte, which makes nearly every token cross a rule end: the mask tables then can
    decide little ahead of time. Inlined, the loop is one DFA. Recursive rules, rules with
    container/whitespace semantics and the root keep their frames.
    Returns (rule -> expression, rule -> rules its expression calls).

    An ir.AnyOrder rule (a whole object whose positions cengine._anyorder makes directly; an
    ir.FreeKey rule likewise, cengine._keytrie) comes back as it is, calling its members:
    the pass sees it as an alternative of calls of its members, so they count as called
    (recursion through the object, rules in use), and they stay rules whatever their size,
    since the node's positions call them.
    root_uses=True: (rule -> expression for the rules in use, the rules in use in the
    grammar's order: those the root reaches, the rules all inlined dropped), what build takes.
    """
    return inline_small_rules(grammar, _Whitespace, INLINE_MAX_MATCH, INLINE_MAX_SIZE,
                              _MADE_ELSEWHERE, root_uses)


# the rules whose positions are made directly (so never inlined, never determinized): their
# nodes' types, and the function that makes them
_MADE_ELSEWHERE = (ir.AnyOrder, ir.FreeKey, ir.KeyEscape)


def _positions_made_elsewhere(e, rule_index: Dict[str, int]):
    if type(e) is ir.FreeKey:
        return free_key_positions(e, rule_index)
    if type(e) is ir.KeyEscape:
        return key_escape_positions(e, rule_index)
    return any_order_positions(e, rule_index)


# Rule expressions whose language the compiler itself fixes, the same object in every compile
# (an enforced format's JSON string, strings.format_string): their subset construction (a few
# ms for a hostname or an email address, the bulk of such a compile) is done once per process
# and its positions kept, keyed also by everything else that shapes them (the rule's
# whitespace flag, sharing, the NFA and DFA-growth limits). Bounded: one entry per format
# and key. An expression with a call is never kept: what a call matches, and what the inline
# pass puts in its place, depends on the grammar.
_KEPT_EXPRS: Dict[int, ir.Expr] = {}
_KEPT_POSITIONS: Dict[tuple, tuple] = {}
# the same rules' positions once merged (Builder.minimize): their merging reads only their own
# positions and the number of rounds, so it is done once per kept array and rounds, stored
# under (key, rounds) beside the array it was made from
_KEPT_MERGED: Dict[tuple, tuple] = {}


def _calls_nothing(e) -> bool:
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is ir.Seq or t is ir.Alt:
            stack.extend(x.items)
        elif t is ir.Repeat:
            stack.append(x.item)
        elif t not in (ir.Bytes, ir.ByteSet, ir.CharSet, ir.Dfa, ir.Nothing):
            return False
    return True


def keep_positions(expr: ir.Expr) -> ir.Expr:
    """Mark expr, a rule expression the compiler makes once per process and reuses as the
    same object, as fixed: a rule whose expression it is gets its determinized positions
    from the ones kept by an earlier build. Returns expr."""
    if _calls_nothing(expr):
        _KEPT_EXPRS[id(expr)] = expr
    return expr


def _kept_keys(rules, share: bool):
    # add_rules' kept_keys (rules: the build's, by number): None where the rule's expression
    # is not fixed, None for all when none is
    if not _KEPT_EXPRS:
        return None
    kept = _KEPT_EXPRS
    hits = [i for i, r in enumerate(rules) if id(r.expr) in kept]
    if not hits:
        return None
    growth = (_BUDGET.get() or _DEFAULT_BUDGET).max_dfa_growth
    if growth is None:
        growth = MAX_DFA_GROWTH
    keys: list = [None] * len(rules)
    for i in hits:
        r = rules[i]
        keys[i] = (id(r.expr), r.whitespace, share, MAX_NFA_STATES, growth)
    return keys


# Builder.add_rules' failed_phase: building the rule's NFA, determinizing it
_NFA_PHASE = 1
_DFA_PHASE = 2

# passes of merging equal positions over one cycle's positions (Builder.minimize; each pass
# keeps the language; merges that need more passes around a cycle are left undone). A pass
# over a cycle costs its positions only, so the bound is loose: the corpus converges below it
MINIMIZE_MAX_ROUNDS = 64


def build(grammar: ir.GrammarIR, *, minimize: bool = True) -> Automaton:
    """The automaton of `grammar`. minimize=False keeps the positions exactly as the subset
    construction numbers them (the frozen reference builder's tables, which tests compare;
    an ir.AnyOrder rule's as cengine._anyorder numbers them)."""
    if grammar.root not in grammar.rules:
        raise CompileError(f"root rule '{grammar.root}' is not defined", rule=grammar.root)
    # rules nobody calls any more (all inlined) are dropped; the root always stays
    exprs, names = _inline_small_rules(grammar, True)
    rule_index = {n: i for i, n in enumerate(names)}
    rules = [grammar.rules[n] for n in names]
    whitespace = [r.whitespace for r in rules]

    def origin(name: str):
        # (line, column) of rule `name` in its GBNF source, or (None, None)
        return grammar.rules[name].origin or (None, None)

    def where(name: str) -> dict:
        # what an error met while building rule `name` names: the rule, its GBNF line and
        # column, or the schema keyword and pointer it was compiled from
        line, col = origin(name)
        keyword, pointer = grammar.sources.get(name) or (None, None)
        return dict(rule=name, line=line, column=col, keyword=keyword, pointer=pointer)

    # per rule DFA, concatenated into one position space: an ir.AnyOrder rule's positions
    # made directly (cengine._anyorder), every other rule by Thompson construction of its
    # expression over bytes and calls and subset construction (C++); when the positions are
    # merged anyway, equal suffixes are shared already in the NFA (fewer subset states to
    # make and merge)
    builder = _builder()
    kept_keys = _kept_keys(rules, minimize)
    try:
        builder.add_rules(names, exprs, whitespace,
                          rule_index, _Whitespace, minimize, MAX_NFA_STATES, _MADE_ELSEWHERE,
                          _positions_made_elsewhere, kept_keys, _KEPT_POSITIONS)
    except CompileError as e:
        name = names[builder.failed_rule]
        if builder.failed_phase == _NFA_PHASE:
            if e.rule is None or e.line is None:
                extra = {"limit": e.limit} if isinstance(e, LimitError) else {}
                raise type(e)(e.reason, **where(name), **extra) from None
        elif builder.failed_phase == _DFA_PHASE and isinstance(e, LimitError):
            at = where(name)
            # the grammar-wide caps (work, positions) name a rule only when it has a schema
            # location to report; a determinisation blowup is the rule's own
            if e.limit == "max_dfa_growth" or at["pointer"] is not None:
                raise LimitError(e.reason, limit=e.limit, **at) from None
        raise
    if minimize:
        builder.minimize(MINIMIZE_MAX_ROUNDS, kept_keys, _KEPT_POSITIONS, _KEPT_MERGED)

    cyc = builder.left_cycle()
    if cyc is not None:
        rule = names[cyc[-1]]
        line, col = origin(rule)
        raise CompileError("left recursion: " + " -> ".join(names[c] for c in cyc),
                           rule=rule, line=line, column=col)

    # shortest completion per position (Bellman-Ford with strict improvement: the chosen
    # pointers form no cycle, so the closer's walk terminates)
    start_len = builder.shortest()
    root = rule_index[grammar.root]
    if start_len[root] >= INF:
        line, col = origin(grammar.root)
        raise CompileError("the grammar matches no document at all", rule=grammar.root,
                           line=line, column=col)

    # prune edges that lead nowhere (the closer then always finds a way out of any state),
    # flags, closure chains, packed tables
    t = builder.finish(whitespace, [r.container for r in rules], names)
    # the document itself: a virtual frame calling root; start from a return-less root start
    return Automaton(
        rule_names=tuple(names),
        root_rule=root,
        root_start=int(t["rule_start"][root]),
        max_depth=grammar.max_depth if grammar.max_depth is not None else (1 << 30),
        whitespace_budget=-1 if grammar.whitespace_budget is None else grammar.whitespace_budget,
        **t,
    )
