"""Compiled grammars: immutable, cached, shared between threads and matchers.

Design (xgrammar's split): compiling returns an immutable `Grammar` holding the automaton
tables; `Grammar.matcher()` makes a `Matcher` that holds only one document's state. Compiled
grammars are cached by (front end, source, options); per-vocabulary token tables hang off
the grammar, keyed by the vocabulary fingerprint.
"""
from __future__ import annotations

import gc
import sys
import threading
from typing import Any, Callable, Hashable

from . import automaton as _automaton
from . import ir
from ._mask import TokenTables
from ._matcher import Matcher, program_of
from .errors import LimitError
from .lru import ByteLRU


class Grammar:
    """An immutable compiled grammar. Make matchers with `.matcher(vocab)`."""

    __slots__ = ("automaton", "kind", "source", "ignored_keywords", "_token_tables", "_lock",
                 "_program", "__weakref__")

    def __init__(self, automaton: _automaton.Automaton, kind: str = "ir", source: Any = None):
        self.automaton = automaton
        self.kind = kind
        self.source = source
        # JSON Schema: keywords that changed nothing (unknown to the schema's draft), a tuple
        # of cengine.schema.drafts.IgnoredKeyword(keyword, pointer, why); () otherwise
        self.ignored_keywords: tuple = ()
        self._token_tables = {}     # vocabulary fingerprint -> mask tables (see _mask.pyx)
        self._lock = threading.Lock()
        self._program = None        # the Cython view of the tables, made on first use

    @classmethod
    def from_ir(cls, g: ir.GrammarIR, kind: str = "ir", source: Any = None) -> "Grammar":
        out = cls(_automaton.build(g), kind, source)
        out.ignored_keywords = tuple(g.ignored_keywords)
        return out

    def matcher(self, vocab=None):
        return Matcher(self, vocab)

    def token_tables(self, vocab):
        """Per-vocabulary mask tables, built once per (grammar, vocabulary) and shared."""
        key = vocab.fingerprint
        t = self._token_tables.get(key)
        if t is None:
            with self._lock:
                t = self._token_tables.get(key)
                if t is None:
                    # the matchers' C program, not a second one: it is on the path to the
                    # first mask
                    t = TokenTables(self.automaton, vocab, program_of(self))
                    self._token_tables[key] = t
        return t

    def nbytes(self) -> int:
        return self.automaton.nbytes()

    def __repr__(self) -> str:
        return f"<cengine.Grammar {self.kind}: {self.automaton.n_positions} positions>"


class _CollectorPause:
    """The cyclic garbage collector paused while any thread compiles.

    Why: a compile allocates hundreds of thousands of small immutable IR objects that live
    until it ends; each allocation burst triggers collections that walk them all again (on
    maskbench-dev's large schemas a quarter of compile time went to the collector). The IR
    holds few cycles, and those are collected once collection resumes. The first compile
    to enter disables collection if it was enabled, the last to leave enables it again."""

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._resume = False
        self.freeze_after = False     # freeze_after_compiles()

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._resume:
                if self.freeze_after:
                    # under the lock with no compile running, so no compile's half-built IR
                    # is frozen: the collection frees this compile's cycles (its IR, in the
                    # compiling thread rather than wherever the next allocation lands) and
                    # whatever became garbage since the last freeze; the survivors (this
                    # grammar, the compilers' caches) leave the collector's generations
                    gc.collect()
                    gc.freeze()
                gc.enable()
        return False


COLLECTOR_PAUSE = _CollectorPause()


def freeze_after_compiles(enabled: bool = True) -> None:
    """After every compile (when no other is running): collect, then `gc.freeze()` what
    survives. For a server whose long-lived heap (vocabulary, caches, compiled grammars)
    would otherwise be walked again by every full collection, each one a pause of 100 ms and
    more that lands on whatever allocates next, a mask included (docs/benchmarks.md). A
    process-wide choice for the application to make: objects alive at a freeze that later
    become cyclic garbage are not collected (`gc.unfreeze()` returns them). Off by default."""
    COLLECTOR_PAUSE.freeze_after = bool(enabled)


class GrammarCache(ByteLRU):
    """LRU of compiled grammars bounded by the bytes their tables hold."""

    def __init__(self, max_bytes: int = 256 << 20):
        super().__init__(max_bytes)

    def get_or_compile(self, key: Hashable, compile_fn: Callable[[], Grammar]) -> Grammar:
        def compile_paused():
            with COLLECTOR_PAUSE:
                try:
                    return compile_fn()
                except RecursionError:
                    # a schema (or a $ref chain) nested past what the front end's recursion
                    # can follow: a refusal like any limit, not a crash of the caller
                    raise LimitError(f"the grammar nests too deeply to compile (past Python's "
                                     f"recursion limit, {sys.getrecursionlimit()})") from None
        return self.get_or_make(key, compile_paused)


CACHE = GrammarCache()
