"""llamay_choice_logprobs: decision points found and probed during constrained decoding.

A decision is a scalar value of the output where the grammar allows a finite set of complete
values (`cengine.value_alternatives`: an enum, a boolean, a const-discriminated branch, a
tool name).
Its *decision state* is the token boundary of the first sampled token that writes a byte at
or after the value's first byte: the KV cache and the matcher as they were when the decoder
sampled that token. Every alternative a is spelled from there as the bytes the output has
from the decision state up to the value's start (what the decoder wrote there: `": "`, a
space) followed by a's own bytes (or, when the value's first bytes were forced, the rest of
a's bytes). Those bytes are tokenised as the decoder would spell them (see `probe`: the most
probable prefix token while several alternatives are possible, the fast-forward's spelling
once one is left). log P(a) is the sum over those tokens of the model's log-softmax of its
raw logits (before the mask, the repeat penalty and temperature), each conditioned on the
decision state and the tokens before it. The first token is read from the logits the decoder
computed for its own step. The probe waits until the decoder has written the value: where an
alternative's tokens are the ones the decoder took, the logits the decoder computed after
them are used (it keeps them while a probe waits); everything else is evaluated on branches of
the KV cache forked from the decoder's sequence where a path leaves it (sharing the cells of
the tokens they share), one batch per level of the alternatives' token tree. The decoder's
sequence is never touched and the prompt never evaluated again. docs/server.md has the exact
definitions.

Reported (types.Decision): the posterior is softmax(log P) over the alternatives, the probed
mass sum(P): how much of the model's probability went to the legal alternatives along these
tokenisations. `chosen` is the alternative whose value the output then holds at that pointer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import cengine
from cengine import Alternative

from .pointer import PointerTracker, ValueEnd, ValueStart
from .schema_order import in_listed_order, listed_values
from .types import NAME_MARKED, ChoiceScope, Decision


def _logsumexp(row: np.ndarray) -> float:
    x = row.astype(np.float64)
    m = float(np.max(x))
    return m + math.log(float(np.exp(x - m).sum()))


# `model` below is server.runtime.model.Model (not imported: it imports this module)


def probe(model, logits: np.ndarray, spellings: Sequence[bytes], base: Optional[int] = None,
          known: Optional[Dict[int, np.ndarray]] = None, rt=None
          ) -> List[Tuple[Optional[float], List[int]]]:
    """(log P, its tokens) of each byte string from the decision state: the decoder's first
    `base` cached tokens (all of them by default) and `logits`, the raw logits the model gave
    there. The strings are legal continuations, so every token spelling a prefix of one is
    allowed by the mask (the mask is exact over bytes). None: no token spells a prefix, or it
    does not fit what the context has free.

    Tokenisation, as the decoder would: while the bytes so far are a prefix of more than one
    string, the next token is the most probable token (raw logits) spelling a prefix of the
    rest of this string (the greedy choice among the tokens the mask allows on the way to it);
    once only one string is still possible, the decoder's mask forces the rest and its
    fast-forward spells it: `tokens_for_bytes` (the tokenizer's own split, then longest
    matches).

    Evaluation: the strings form a tree of token paths from the decision state, walked level
    by level. Where a path is the one the decoder itself went on to take (the decoder's cached
    tokens after `base`) and `known` holds the raw logits the decoder computed after that token
    (by absolute position), those are used: the decoder already evaluated it. Every other
    string gets a branch of the KV cache (LlamaRuntime.fork) where its path leaves the
    decoder's, and all of a level's evaluations go in one batch: a token shared by several
    strings is one cell in all their branches, and a string's forced rest goes whole into the
    same batch. The decoder's sequence is never touched and the prompt never evaluated again;
    the branches are removed afterwards. More strings than branches, or more bytes than the
    context has free cells, are probed in several rounds. `rt`: the request's decoder
    (llama_backend.Decoder; the runtime's decoder 0 by default)."""
    rt = model.runtime if rt is None else rt
    base = len(rt.tokens) if base is None else base
    out: List[Tuple[Optional[float], List[int]]] = [(None, []) for _ in spellings]
    members = [i for i, s in enumerate(spellings) if s]
    if members and rt.n_branches < 1:
        raise RuntimeError("the model's context has no branch sequences, which probing the "
                           "alternatives of a decision needs")
    lse = _logsumexp(logits)
    # a round's strings fit the free cells: each token spells at least one byte
    free = rt.n_ctx - len(rt.tokens)
    rounds: List[List[int]] = []
    for i in members:
        if rounds and len(rounds[-1]) < rt.n_branches and \
                sum(len(spellings[j]) for j in rounds[-1]) + len(spellings[i]) <= free:
            rounds[-1].append(i)
        else:
            rounds.append([i])
    n_tokens = len(rt.tokens)
    for group in rounds:
        _probe_round(model, rt, logits, lse, spellings, group, out, base, known or {})
    if len(rt.tokens) != n_tokens:
        raise RuntimeError("probing moved the decoder's sequence")
    return out


def _probe_round(model, rt, logits: np.ndarray, lse: float, spellings: Sequence[bytes],
                 members: List[int], out: List[Tuple[Optional[float], List[int]]], base: int,
                 known: Dict[int, np.ndarray]) -> None:
    taken = rt.tokens[base:]        # the decoder's own path from the decision state

    def known_rows(path: List[int], first: int) -> int:
        """How many of path[first:] have the decoder's logits after them (path on its way)."""
        n = 0
        while first + n < len(path) and first + n < len(taken) \
                and path[first + n] == taken[first + n] and base + first + n in known:
            n += 1
        return n if path[:first] == taken[:first] else 0

    with rt.branches(len(members)) as seqs:
        seq_of = dict(zip(members, seqs))
        forked = set()

        def branch_of(going: List[int], at: int) -> List[int]:
            # a string's path leaves the decoder's at `at` tokens: fork its branch there
            for i in going:
                if i not in forked:
                    rt.fork(seq_of[i], base + at)
                    forked.add(i)
            return [seq_of[i] for i in going]

        # (tokens from the decision state, bytes they spell, the strings they start, the
        # logits after them, their log-sum-exp, the log P of the tokens)
        frontier: List[Tuple[List[int], int, List[int], np.ndarray, float, float]] = \
            [([], 0, members, logits, lse, 0.0)]
        while frontier:
            # (strings, path, bytes, log P, logits if known)
            steps: List[Tuple[List[int], List[int], int, float, Optional[np.ndarray]]] = []
            # (string, path, log P so far, forced rest, known logits)
            rests: List[Tuple[int, List[int], float, List[int], List[np.ndarray]]] = []
            for path, pos, group, row, row_lse, acc in frontier:
                picks: Dict[int, List[int]] = {}
                for i in group:
                    cands = model.prefix_tokens(spellings[i][pos:])
                    if cands:
                        best = max(cands, key=lambda t: (float(row[t]), -t))
                        picks.setdefault(best, []).append(i)
                for t, picked in picks.items():
                    lp = acc + float(row[t]) - row_lse
                    here = path + [t]
                    npos = pos + len(model.token_bytes(t))
                    going = []
                    for i in picked:
                        if len(spellings[i]) == npos:
                            out[i] = (lp, here)
                        else:
                            going.append(i)
                    if not going:
                        continue
                    written = spellings[going[0]][:npos]
                    alive = sum(1 for s in spellings if len(s) > npos and s.startswith(written))
                    if alive == 1:
                        [i] = going
                        ids, covered = model.tokens_for_bytes(spellings[i][npos:])
                        if covered != len(spellings[i]) - npos or not ids \
                                or len(rt.tokens) + len(here) + len(ids) > rt.n_ctx:
                            continue
                        full = here + ids[:-1]
                        m = known_rows(full, len(here) - 1)
                        rests.append((i, here, lp, ids,
                                      [known[base + len(here) - 1 + k] for k in range(m)]))
                    elif len(rt.tokens) + len(here) + 1 <= rt.n_ctx:
                        m = known_rows(here, len(here) - 1)
                        steps.append((going, here, npos, lp,
                                      known[base + len(here) - 1] if m else None))
            if not steps and not rests:
                break
            # the branches to evaluate (eval_branches' items), and each step's and rest's
            # index among them (None: nothing to evaluate)
            items: List[Tuple[List[int], List[int], bool]] = []
            slots: List[Optional[int]] = []
            for going, here, _, _, known_row in steps:
                if known_row is None:
                    slots.append(len(items))
                    items.append((branch_of(going, len(here) - 1), [here[-1]], False))
                else:
                    slots.append(None)
            for i, here, _, ids, rows in rests:
                full = here + ids[:-1]
                first = len(here) - 1 + len(rows)
                if first < len(full):
                    slots.append(len(items))
                    items.append((branch_of([i], first), full[first:], True))
                else:
                    slots.append(None)
            got = rt.eval_branches(items) if items else []
            frontier = []
            for (going, here, npos, lp, known_row), slot in zip(steps, slots):
                if slot is not None:
                    [row] = got[slot]
                else:
                    assert known_row is not None    # no slot: its logits were known
                    row = known_row
                frontier.append((here, npos, going, row, _logsumexp(row), lp))
            for (i, here, lp, ids, rows), slot in zip(rests, slots[len(steps):]):
                each = rows + (got[slot] if slot is not None else [])
                total = lp
                for k, tok in enumerate(ids):
                    total += float(each[k][tok]) - _logsumexp(each[k])
                out[i] = (total, here + ids)


@dataclass
class _Pending:
    """A value whose first byte was forced: decided at the next sampled token, if any."""
    start: int
    pointer: str
    document: int
    alternatives: List[Alternative]


@dataclass
class _Record:
    start: int
    pointer: str
    document: int
    alternatives: List[Alternative]
    logprobs: List[Optional[float]]
    sequences: List[List[int]] = field(default_factory=list)
    state: List[int] = field(default_factory=list)
    chosen: Optional[bytes] = None


@dataclass
class _Deferred:
    """A probe waiting for the decoder: its chosen alternative's tokens are the ones the
    decoder goes on to evaluate, so it runs once their logits are in (see probe)."""
    base: int                   # the decoder's cached tokens at the decision state
    logits: np.ndarray          # the raw logits there
    spellings: List[bytes]
    records: List[_Record]
    open: set                   # start offsets of its values that have not ended yet
    end: int = 0                # output offset where the last of them ended
    need: int = 0               # no path is longer: positions past base + need are not needed


class _NameScanner:
    """Tool names written outside JSON: a value starts where the text before a name ends
    and ends after the first of the texts that may follow the name. `chosen` keeps each
    name written (by its start offset)."""

    def __init__(self, before: str, after):
        self.before = before.encode("utf-8")
        self.afters = [a.encode("utf-8") for a in ((after,) if isinstance(after, str)
                                                    else after)]
        self.buf = bytearray()
        self.calls = 0
        self.open: Optional[int] = None      # the start of a name not yet ended
        self.chosen: Dict[int, str] = {}

    def feed(self, data: bytes) -> list:
        base = len(self.buf)
        self.buf += data
        out: list = []
        pos = max(0, base - len(self.before) + 1)
        while True:
            if self.open is None:
                i = self.buf.find(self.before, pos)
                if i < 0:
                    return out
                self.open = i + len(self.before)
                out.append(ValueStart(self.open, self.calls, NAME_MARKED))
                self.calls += 1
                pos = self.open
            found = [(j, a) for a in self.afters
                     for j in [self.buf.find(a, self.open)] if j >= 0]
            if not found:
                return out
            j, a = min(found)
            self.chosen[self.open] = self.buf[self.open:j].decode("utf-8", "replace")
            out.append(ValueEnd(j + len(a), self.open))
            pos, self.open = j + len(a), None


class DecisionRecorder:
    """Follows one constrained generation and probes its decision points (driven by the
    decode loop in model.py: forced(), sampled(), closer(), then decisions())."""

    def __init__(self, model, scope: ChoiceScope):
        if scope.kind not in ("json", "calls", "words"):
            raise ValueError(f"unknown choice scope {scope.kind!r}")
        self.model = model
        # the request's decoder sequence (model.py binds it once acquired)
        self.rt = model.runtime
        self.scope = scope
        # "calls" with an answer schema: the output is either that schema's document or the
        # calls; its first byte tells (the call region opens with scope.call_open)
        self.answer: Optional[bool] = (None if scope.kind == "calls" and scope.schema is not None
                                       and scope.call_open else False)
        self.tracker = (None if scope.kind == "words" or self.answer is None
                        or not scope.arguments_json else
                        PointerTracker("objects" if scope.kind == "calls" else "single"))
        self.names = (_NameScanner(*scope.name_marks)
                      if scope.kind == "calls" and scope.name_marks else None)
        # the answer's framing before its document: the tracker reads it as whitespace, so
        # its offsets stay those of the output
        self.prefix_left = len(scope.answer_prefix.encode("utf-8")) if scope.kind == "json" \
            else 0
        self.out = bytearray()
        self.pending: List[_Pending] = []
        self.records: List[_Record] = []
        self.deferred: List[_Deferred] = []
        self.known: Dict[int, np.ndarray] = {}  # position -> the decoder's raw logits after it
        if scope.kind == "words":
            words = list(dict.fromkeys(scope.words))
            self.pending.append(_Pending(0, "", 0, [Alternative(w.encode("utf-8"), w)
                                                    for w in words]))

    # --- driven by the decode loop ----------------------------------------------------------
    def forced(self, matcher, n_steps: int, data: bytes) -> None:
        """The matcher accepted `data` in `n_steps` steps without sampling."""
        base = len(self.out)
        events = self._feed(data)
        self.out += data
        before = None
        for ev in events:
            if isinstance(ev, ValueStart):
                if before is None:
                    before = matcher.copy()
                    before.rollback(n_steps)
                alts = self._alternatives(before, bytes(self.out[base:ev.offset]), ev)
                if alts is not None:
                    self.pending.append(_Pending(ev.offset, ev.pointer, ev.document, alts))
            else:
                self._ended(ev)

    def sampled(self, matcher, data: bytes, logits: np.ndarray) -> None:
        """The matcher accepted the sampled token `data`; the KV cache is still at the token
        boundary before it and `logits` are the raw logits the token was sampled from."""
        b = len(self.out)
        self._resolve(lambda d: not d.open and d.end <= b)
        events = self._feed(data)
        self.out += data
        starts = [ev for ev in events if isinstance(ev, ValueStart)]
        if not self.pending and not starts:
            for ev in events:
                self._ended(ev)
            return
        at_b = matcher.copy()
        at_b.rollback(1)
        jobs: List[Tuple[int, str, int, List[Alternative], List[bytes]]] = []
        alts: Optional[List[Alternative]]
        for p in self.pending:
            written = bytes(self.out[p.start:b])
            alts = [a for a in p.alternatives if a.text.startswith(written)]
            if len(alts) >= 2:
                jobs.append((p.start, p.pointer, p.document, alts,
                             [a.text[len(written):] for a in alts]))
        self.pending = []
        for ev in starts:
            prefix = bytes(self.out[b:ev.offset])
            alts = self._alternatives(at_b, prefix, ev)
            if alts is not None:
                jobs.append((ev.offset, ev.pointer, ev.document, alts,
                             [prefix + a.text for a in alts]))
        if jobs:
            # probed once the decoder has evaluated the value it goes on to write (_resolve)
            state = list(self.rt.tokens)
            records = [_Record(start, pointer, document, alts, [None] * len(alts),
                               [[] for _ in alts], state)
                       for start, pointer, document, alts, _ in jobs]
            self.records.extend(records)
            spellings = [s for job in jobs for s in job[4]]
            self.deferred.append(_Deferred(len(state), logits, spellings, records,
                                           {job[0] for job in jobs},
                                           need=max(len(x) for x in spellings)))
        for ev in events:
            if isinstance(ev, ValueEnd):
                self._ended(ev)

    def closer(self, data: bytes) -> None:
        """Bytes the closer appended: values end, none is decided."""
        events = self._feed(data)
        self.out += data
        for ev in events:
            if isinstance(ev, ValueEnd):
                self._ended(ev)

    def rows_wanted(self, tokens: Sequence[int]) -> int:
        """How many of the decoder's next `tokens` (already fed here, about to be evaluated)
        a waiting probe needs the logits after: those up to where its values end."""
        if not self.deferred:
            return 0
        pos = len(self.rt.tokens)
        cap = max(d.base + d.need for d in self.deferred) - pos
        if any(d.open for d in self.deferred):
            return max(0, min(len(tokens), cap))
        limit = max(d.end for d in self.deferred)
        off = len(self.out) - sum(len(self.model.token_bytes(t)) for t in tokens)
        n = 0
        for t in tokens:
            if off >= limit or n >= cap:
                break
            off += len(self.model.token_bytes(t))
            n += 1
        return n

    def decoder_rows(self, pos: int, rows: Sequence[np.ndarray]) -> None:
        """The decoder's raw logits after its tokens at positions pos, pos + 1, ..."""
        for k, row in enumerate(rows):
            self.known[pos + k] = row

    def decisions(self) -> List[Decision]:
        if self.tracker is not None:
            for ev in self.tracker.close():
                assert isinstance(ev, ValueEnd)     # closing only ends values
                self._ended(ev)
        elif self.records:      # words: the whole output is the value
            self.records[0].chosen = bytes(self.out).strip()
        self._resolve(lambda d: True)
        self.records.sort(key=lambda r: r.start)
        return [self._decision(r) for r in self.records]

    # --- helpers ----------------------------------------------------------------------------
    def _feed(self, data: bytes) -> list:
        if self.answer is None and data:
            self.answer = data[:1] != self.scope.call_open.encode("utf-8")[:1]
            self.tracker = (PointerTracker("single" if self.answer else "objects")
                            if self.answer or self.scope.arguments_json else None)
        if self.prefix_left:
            n = min(len(data), self.prefix_left)
            self.prefix_left -= n
            data = b" " * n + data[n:]
        events = self.tracker.feed(data) if self.tracker is not None else []
        if self.names is not None and not self.answer:
            events = sorted(events + self.names.feed(data),
                            key=lambda e: (e.offset, isinstance(e, ValueStart)))
        return events

    def _alternatives(self, matcher, prefix: bytes, ev: Optional[ValueStart] = None
                      ) -> Optional[List[Alternative]]:
        if ev is not None and ev.pointer == NAME_MARKED:
            # a name outside JSON: each offered tool's name and the (first) text after it
            assert self.names is not None   # NAME_MARKED values come from the name scanner
            after = self.names.afters[0]
            alts: Optional[List[Alternative]]
            alts = [Alternative(name.encode("utf-8") + after, name)
                    for name, _ in self.scope.tools]
            return alts if len(alts) >= 2 else None
        m = matcher.copy()
        if prefix and not m.accept_bytes(prefix):
            raise RuntimeError("the matcher refused bytes it had accepted")
        alts = cengine.value_alternatives(m)
        return alts if alts is not None and len(alts) >= 2 else None

    def _resolve(self, ready) -> None:
        """Probe the waiting decisions that are ready, with the decoder's logits so far."""
        now = [d for d in self.deferred if ready(d)]
        if not now:
            return
        self.deferred = [d for d in self.deferred if not ready(d)]
        for d in now:
            results = iter(probe(self.model, d.logits, d.spellings, base=d.base, rt=self.rt,
                                 known=self.known))
            for r in d.records:
                got = [next(results) for _ in r.alternatives]
                r.logprobs = [lp for lp, _ in got]
                r.sequences = [q for _, q in got]
        keep = min((d.base for d in self.deferred), default=None)
        self.known = {} if keep is None else {p: v for p, v in self.known.items() if p >= keep}

    def _ended(self, ev: ValueEnd) -> None:
        self.pending = [p for p in self.pending if p.start != ev.start]
        for d in self.deferred:
            if ev.start in d.open:
                d.open.discard(ev.start)
                d.end = max(d.end, ev.offset)
        for r in self.records:
            if r.start == ev.start:
                r.chosen = bytes(self.out[ev.start:ev.offset])

    def _listed(self, r: _Record, pointer: str) -> List[object]:
        """The values the request lists for this decision, in its order (schema_order.py)."""
        scope = self.scope
        if scope.kind == "json" or self.answer:
            return [] if scope.schema is None else listed_values(scope.schema, r.pointer)
        if scope.kind != "calls" or not scope.tools:
            return []
        if pointer == "tool":
            return [name for name, _ in scope.tools]
        if not r.pointer.startswith(scope.arguments_pointer):
            return []
        # the call's tool: the name it chose, or the only one offered
        names = [self._chosen(x) for x in self.records
                 if x.document == r.document and x.pointer == scope.name_pointer]
        name = (names[0] if names else scope.tools[0][0] if len(scope.tools) == 1 else None)
        params = [schema for n, schema in scope.tools if n == name]
        return listed_values(params[0], pointer) if params else []

    def _decision(self, r: _Record) -> Decision:
        finite = [lp for lp in r.logprobs if lp is not None]
        top = max(finite) if finite else None
        if top is None or top == -math.inf:
            posterior = [1.0 / len(r.logprobs)] * len(r.logprobs) if not finite else \
                [0.0 if lp is None else 1.0 / len(finite) for lp in r.logprobs]
            mass = 0.0
        else:
            ws = [0.0 if lp is None else math.exp(lp - top) for lp in r.logprobs]
            z = sum(ws)
            posterior = [w / z for w in ws]
            mass = sum(math.exp(lp) for lp in finite)
        pointer, call = r.pointer, None
        if self.scope.kind == "calls" and not self.answer:
            call = r.document
            if pointer in (self.scope.name_pointer, NAME_MARKED):
                pointer = "tool"
            elif pointer.startswith(self.scope.arguments_pointer + "/"):
                pointer = pointer[len(self.scope.arguments_pointer):]
            elif pointer == self.scope.arguments_pointer:
                pointer = ""
        order = in_listed_order(r.alternatives, self._listed(r, pointer))
        return Decision(pointer, [r.alternatives[k].value for k in order],
                        [r.logprobs[k] for k in order], [posterior[k] for k in order], mass,
                        self._chosen(r), call, [r.sequences[k] for k in order], r.state)

    def _chosen(self, r: _Record):
        if r.pointer == NAME_MARKED and self.names is not None:
            name = self.names.chosen.get(r.start)
            return name if any(a.value == name for a in r.alternatives) else None
        if r.chosen is None:
            return None
        if self.scope.kind == "words":
            text = r.chosen.decode("utf-8", "replace")
            return text if any(a.value == text for a in r.alternatives) else None
        for a in r.alternatives:
            if a.text == r.chosen:
                return a.value
        key = cengine.value_key(r.chosen)
        if key is None:
            return None
        for a in r.alternatives:
            if cengine.value_key(a.text) == key:
                return a.value
        return None
