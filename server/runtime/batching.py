"""Continuous batching: the evaluations of every active sequence in one llama_decode a step.

Each request decodes on its own thread (the server runs up to `--parallel` at once), with its
own matcher, sampler, stops and probes; only the forward pass is shared. A thread that needs
logits submits a `Work` (the tokens to evaluate, each with its position and sequence ids) and
waits. A step runs as soon as no active sequence is still busy computing its next tokens
(masking, sampling, fast-forward, probing): every small waiting work (a decoding sequence's
next token or its forced run, a probe's level) then goes into one llama_decode, and the
oldest long one (a prompt) gets its next chunk of up to `n_batch` tokens in a call of its
own (SHARED_BATCH says why), so a prompt arriving mid-generation costs the others one
chunk's time a token, not the whole prompt's. Sequences join and leave between steps.

No thread of its own: whichever waiting thread first sees the step ready runs it (the
"leader") and hands every finished work back. A request alone runs its own steps, as before.

Busy accounting: a sequence counts as busy from `join` until it waits (in `run` or
`wait_for`), and again from the moment its work is done; the leader marks it busy when it
hands the result back, so that the next step waits for its next token instead of firing
without it.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

# Works share a llama_decode only up to this many entries. From 64 query rows on, llama.cpp's
# CPU flash attention takes its tiled path, which walks the KV cache in tiles of 64 cells: a
# row's logits then depend on where its sequence's cells lie against the tile edges (moved by
# up to 0.8 on SmolLM2 Q4_1, enough to change a greedy token); below 64 rows a token's logits
# do not depend on the other rows of its batch or on where the cells lie. So small works (a
# sequence's next token, a forced run, a probe level) go together in calls under that size,
# and a long prompt's chunk goes alone, as it would be evaluated alone: decoding steps give
# the logits of unbatched decoding (measured bit for bit on SmolLM2; docs/batching.md), at
# the cost of a second pass only while a prompt is being evaluated or when many sequences
# fast-forward long runs at once. (A prompt of 64 tokens or more is not covered: where its
# cells start depends on what the cache holds, batched or not.)
SHARED_BATCH = 63

# an entry: (token, position, sequence ids, whether its logits are wanted)
Entry = Tuple[int, int, Sequence[int], bool]
# one step's share of a work: (work, first entry, end)
Slice = Tuple["Work", int, int]


class Work:
    """Entries decoded in order, possibly over several steps. `after_chunk(start, end)` runs
    (under the context lock) once entries [start, end) are in the cache; `on_fail(exc)` once
    a step that held part of it failed, to take back what it left."""
    __slots__ = ("entries", "done", "rows", "after_chunk", "on_fail", "error", "finished")

    def __init__(self, entries: List[Entry], after_chunk: Optional[Callable[[int, int], None]]
                 = None, on_fail: Optional[Callable[[BaseException], None]] = None):
        self.entries = entries
        self.done = 0
        self.rows: List[np.ndarray] = []     # logits after each wanted entry, in order
        self.after_chunk = after_chunk
        self.on_fail = on_fail
        self.error: Optional[BaseException] = None
        self.finished = False


class Stepper:
    """The step schedule over one context. `decode(entries) -> rows` is the runtime's
    llama_decode of one batch (at most `n_batch` entries): it returns the logits of the wanted
    entries, or raises."""

    def __init__(self, decode: Callable[[List[Entry]], List[np.ndarray]], n_batch: int,
                 shared: int = SHARED_BATCH):
        self._decode = decode
        self.n_batch = n_batch
        self.shared = max(1, min(shared, n_batch))
        self.cv = threading.Condition()
        self.active = 0             # sequences joined
        self.busy = 0               # of those, not waiting
        self.queue: List[Work] = []
        self.stepping = False
        # counters for the benchmarks: steps run, llama_decode calls, and the entries and
        # works they carried
        self.steps = 0
        self.calls = 0
        self.decode_s = 0.0         # seconds inside llama_decode
        self.entries = 0
        self.batched = 0

    # --- sequences -------------------------------------------------------------------------
    def join(self) -> None:
        with self.cv:
            self.active += 1
            self.busy += 1

    def leave(self) -> None:
        with self.cv:
            self.active -= 1
            self.busy -= 1
            self.cv.notify_all()

    def run(self, work: Work) -> Work:
        """Evaluate `work` with whatever the other sequences submit; returns it done (its
        rows filled) or raises the step's error."""
        if not work.entries:
            raise ValueError("nothing to evaluate")
        with self.cv:
            self.queue.append(work)
            # busy again once done: the leader that finishes the work counts it (module doc)
            self._stand_by(lambda: work.finished)
        if work.error is not None:
            raise work.error
        return work

    def wait_for(self, ready: Callable[[], bool]) -> None:
        """Wait (not busy: steps may run meanwhile, led by this thread too) until `ready()`,
        evaluated under the condition; whoever changes what it reads notifies `cv`."""
        with self.cv:
            if ready():
                return
            self._stand_by(ready)
            self.busy += 1

    def _stand_by(self, done: Callable[[], bool]) -> None:
        """Not busy until `done()` (the condition held): lead the steps that become ready
        meanwhile, else sleep."""
        self.busy -= 1
        self.cv.notify_all()
        while not done():
            if self._ready():
                self._step()
            else:
                self.cv.wait()

    # --- the step ---------------------------------------------------------------------------
    def _ready(self) -> bool:
        return bool(self.queue) and self.busy <= 0 and not self.stepping

    def _pack(self) -> List[List[Slice]]:
        """The next step's llama_decode calls: the small works (at most `shared` entries
        left) whole, together in calls of at most `shared` entries, in arrival order; then the
        first large work's next chunk (up to n_batch) in a call of its own, as it would be
        evaluated alone."""
        calls: List[List[Slice]] = []
        group: List[Slice] = []
        size = 0
        large: Optional[Work] = None
        for w in self.queue:
            left = len(w.entries) - w.done
            if left > self.shared:
                large = large or w
                continue
            if group and size + left > self.shared:
                calls.append(group)
                group, size = [], 0
            group.append((w, w.done, w.done + left))
            size += left
        if group:
            calls.append(group)
        if large is not None:
            take = min(len(large.entries) - large.done, self.n_batch)
            calls.append([(large, large.done, large.done + take)])
        return calls

    def _step(self) -> None:
        """Run one step's calls (called with the condition held; released during the
        decodes). A failed call fails only its own works."""
        self.stepping = True
        calls = self._pack()
        results: List[Tuple[List[Slice], List[np.ndarray], Optional[BaseException]]] = []
        self.cv.release()
        try:
            for batch in calls:
                entries: List[Entry] = [e for w, a, b in batch for e in w.entries[a:b]]
                try:
                    t0 = time.perf_counter()
                    rows = self._decode(entries)
                    self.decode_s += time.perf_counter() - t0
                    for w, a, b in batch:
                        if w.after_chunk is not None:
                            w.after_chunk(a, b)
                    results.append((batch, rows, None))
                except BaseException as exc:     # handed to every work of the call
                    for w, _, _ in batch:
                        if w.on_fail is not None:
                            try:
                                w.on_fail(exc)
                            except BaseException:
                                pass
                    results.append((batch, [], exc))
                self.entries += len(entries)
                self.batched += len(batch)
        finally:
            self.cv.acquire()
        self.steps += 1
        self.calls += len(calls)
        for batch, rows, error in results:
            it = iter(rows)
            for w, a, b in batch:
                if error is not None:
                    w.error = error
                    w.done = len(w.entries)
                else:
                    w.rows.extend(next(it) for e in w.entries[a:b] if e[3])
                    w.done = b
                if w.done >= len(w.entries):
                    w.finished = True
                    self.queue.remove(w)
                    self.busy += 1          # its thread is busy again from here (module doc)
        self.stepping = False
        self.cv.notify_all()
