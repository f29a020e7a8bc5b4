"""Pure-Python reference matcher and closer over the automaton tables (a test oracle).

Slow and obvious on purpose: stacks are tuples of positions (top first), the state is a
frozenset of (stack, whitespace used). The Cython matcher (`cengine/_matcher.pyx`) must agree with
it on every input; tests check that on random inputs.
"""
from __future__ import annotations

from typing import FrozenSet, List, Tuple

from cengine.automaton import FLAG_CONTAINER, Automaton

State = FrozenSet[Tuple[Tuple[int, ...], int]]


class ReferenceMatcher:
    def __init__(self, automaton: Automaton, vocab=None):
        self.a = automaton
        self.vocab = vocab
        self.state: State = frozenset(self._expand(automaton.root_start, (), 0))
        self.history: List[State] = []

    # --- automaton steps -------------------------------------------------------------
    def _depth_ok(self, stack) -> bool:
        a = self.a
        return sum(1 for q in stack if a.pos_flags[q] & FLAG_CONTAINER) <= a.max_depth

    def _expand(self, q: int, base: Tuple[int, ...], ws: int):
        """Stacks reached when a frame at position q sits on `base` (q not yet normalised)."""
        a = self.a
        out = []
        for k in range(a.clo_off[q], a.clo_off[q + 1]):
            c = a.clo_chain[k]
            chain = tuple(int(x) for x in a.chain_pos[a.chain_off[c]:a.chain_off[c + 1]])
            st = chain + base
            if self._depth_ok(st):
                out.append((st, ws))
        if a.clo_pop[q]:
            if base:
                out.extend(self._expand(base[0], base[1:], ws))
            else:
                out.append(((), ws))
        return out

    def _step(self, state: State, byte: int) -> State:
        a = self.a
        out = set()
        for stack, ws in state:
            if not stack:
                continue
            q = stack[0]
            for k in range(a.edge_off[q], a.edge_off[q + 1]):
                if a.edge_lo[k] <= byte <= a.edge_hi[k]:
                    nws = ws + int(a.edge_ws[k])
                    if a.whitespace_budget >= 0 and nws > a.whitespace_budget:
                        break
                    out.update(self._expand(int(a.edge_to[k]), stack[1:], nws))
                    break
        return frozenset(out)

    # --- public API (mirrors cengine.Matcher) ------------------------------------------
    def accept_bytes(self, data: bytes) -> bool:
        st = self.state
        for b in data:
            st = self._step(st, b)
            if not st:
                return False
        self.history.append(self.state)
        self.state = st
        return True

    def accept_token(self, token_id: int) -> bool:
        data = self.vocab.token_bytes(token_id)
        if token_id in self.vocab.eos_ids:
            if self.is_accepting():
                self.history.append(self.state)
                return True
            return False
        if not data:
            return False
        return self.accept_bytes(data)

    def is_accepting(self) -> bool:
        return any(not stack for stack, _ in self.state)

    def _stack_len(self, stack) -> int:
        return sum(int(self.a.short_len[q]) for q in stack)

    def _emit(self, q: int, out: bytearray) -> None:
        a = self.a
        while a.short_kind[q] != 0:
            if a.short_kind[q] == 1:
                out.append(int(a.short_byte[q]))
            else:
                self._emit(int(a.rule_start[a.short_rule[q]]), out)
            q = int(a.short_to[q])

    def completion(self) -> bytes:
        """Shortest bytes that complete the document; ties broken by the smallest bytes."""
        lens = [(self._stack_len(stack), stack) for stack, _ in self.state]
        if not lens:
            return b""
        best_len = min(n for n, _ in lens)
        best = None
        for n, stack in lens:
            if n != best_len:
                continue
            out = bytearray()
            for q in stack:
                self._emit(q, out)
            if best is None or bytes(out) < best:
                best = bytes(out)
        return best

    def allowed_bytes(self) -> List[int]:
        return [b for b in range(256) if self._step(self.state, b)]

    def copy(self) -> "ReferenceMatcher":
        m = ReferenceMatcher.__new__(ReferenceMatcher)
        m.a, m.vocab, m.state, m.history = self.a, self.vocab, self.state, list(self.history)
        return m

    def rollback(self, n: int) -> None:
        if n < 0 or n > len(self.history):
            raise ValueError(f"cannot roll back {n} steps, only {len(self.history)} recorded")
        for _ in range(n):
            self.state = self.history.pop()
