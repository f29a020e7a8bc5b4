"""One model, `parallel` worker threads, a bounded FIFO of requests.

Every use of the model (tokenising, generating, scoring) runs as a job on a worker thread,
in arrival order; as many jobs run at once as the model decodes sequences at once
(`model.n_parallel`, `--parallel`), and their forward passes are batched by the runtime
(server/runtime/batching.py). Jobs hand their events to the asyncio side through the event
loop; a job whose client went away has its cancel event set and stops at the next token,
freeing its sequence. When `max_queue` jobs are already waiting, `submit` refuses with
QueueFull.
"""
from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Any, AsyncIterator, Callable, Iterable, List, Optional

from ..runtime.types import FinishEvent, GenerationModel
from .errors import QueueFull, ShuttingDown

# job body: (model, cancel event) -> iterable of events
JobFn = Callable[[GenerationModel, threading.Event], Iterable[Any]]

_DONE = object()


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


class RequestStats:
    """What the finished jobs reported, for GET /metrics: a count per finish reason, prompt
    tokens evaluated and taken from the cache, completion tokens; jobs that failed and
    requests refused for a full queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.finished: "collections.Counter[str]" = collections.Counter()
        self.prompt_tokens = 0          # evaluated (the prompt less its cached prefix)
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.failed = 0
        self.refused = 0

    def finish(self, ev: FinishEvent) -> None:
        with self._lock:
            self.finished[ev.reason] += 1
            self.prompt_tokens += max(0, ev.prompt_tokens - ev.cached_tokens)
            self.cached_tokens += ev.cached_tokens
            self.completion_tokens += ev.completion_tokens

    def fail(self) -> None:
        with self._lock:
            self.failed += 1

    def refuse(self) -> None:
        with self._lock:
            self.refused += 1

    def snapshot(self) -> dict:
        with self._lock:
            return {"finished": dict(self.finished), "prompt_tokens": self.prompt_tokens,
                    "cached_tokens": self.cached_tokens,
                    "completion_tokens": self.completion_tokens, "failed": self.failed,
                    "refused": self.refused}


class Job:
    def __init__(self, fn: JobFn, loop: asyncio.AbstractEventLoop):
        self.fn = fn
        self.loop = loop
        self.cancel = threading.Event()
        self._events: asyncio.Queue = asyncio.Queue()
        self.started = threading.Event()
        self.submitted = time.monotonic()

    # worker side ---------------------------------------------------------------------
    def _post(self, item) -> bool:
        try:
            self.loop.call_soon_threadsafe(self._events.put_nowait, item)
            return True
        except RuntimeError:        # the loop is closed: nobody listens any more
            self.cancel.set()
            return False

    def _run(self, model: GenerationModel, stats: Optional[RequestStats] = None) -> None:
        self.started.set()
        try:
            if not self.cancel.is_set():
                it = iter(self.fn(model, self.cancel))
                try:
                    # a cancelled job is not cut off here: generate() sees the cancel event at
                    # its next step and finishes cleanly (reason "cancelled")
                    for ev in it:
                        if stats is not None and type(ev) is FinishEvent:
                            stats.finish(ev)
                        if not self._post(ev):
                            break
                finally:
                    close = getattr(it, "close", None)
                    if close is not None:
                        close()
        except BaseException as exc:    # handed to the request, which maps it to a 4xx/5xx
            if stats is not None:
                stats.fail()
            self._post(_Failure(exc))
        finally:
            self._post(_DONE)

    # request side --------------------------------------------------------------------
    async def events(self) -> AsyncIterator[Any]:
        """The job's events in order; re-raises the job's exception. Cancels the job when
        the consumer stops early (client disconnect closes the generator)."""
        try:
            while True:
                item = await self._events.get()
                if item is _DONE:
                    return
                if isinstance(item, _Failure):
                    raise item.exc
                yield item
        finally:
            self.cancel.set()

    async def collect(self) -> list:
        return [ev async for ev in self.events()]


class Scheduler:
    def __init__(self, model: GenerationModel, max_queue: int = 16, retry_after: int = 1,
                 parallel: Optional[int] = None):
        self.model = model
        # None: as many as the model decodes at once (one for models that do not say)
        self.parallel = max(1, int(parallel if parallel is not None
                                   else getattr(model, "n_parallel", 1) or 1))
        self.max_queue = max_queue
        self.retry_after = retry_after
        self._pending: "collections.deque[Job]" = collections.deque()
        self._cv = threading.Condition()
        self._closed = False
        self._draining = False
        # seconds each of the last jobs waited in the queue before the worker took it
        self.waits: "collections.deque[float]" = collections.deque(maxlen=1000)
        self.jobs_running: List[Job] = []
        self.stats = RequestStats()
        self._threads = [threading.Thread(target=self._worker, name=f"llamay-generation-{i}",
                                          daemon=True) for i in range(self.parallel)]
        for t in self._threads:
            t.start()

    @property
    def running(self) -> Optional[Job]:
        """The oldest running job, or None when none runs."""
        with self._cv:
            return self.jobs_running[0] if self.jobs_running else None

    def submit(self, fn: JobFn, loop: Optional[asyncio.AbstractEventLoop] = None) -> Job:
        job = Job(fn, loop or asyncio.get_running_loop())
        with self._cv:
            if self._draining:
                raise ShuttingDown(self.retry_after)
            if self._closed:
                raise QueueFull(self.retry_after)
            # cancelled jobs still waiting do not hold a place
            self._pending = collections.deque(j for j in self._pending if not j.cancel.is_set())
            if len(self._pending) >= self.max_queue:
                self.stats.refuse()
                raise QueueFull(self.retry_after)
            self._pending.append(job)
            self._cv.notify()
        return job

    def queued(self) -> int:
        """Requests waiting (cancelled ones no longer count)."""
        with self._cv:
            return sum(1 for j in self._pending if not j.cancel.is_set())

    def _worker(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                job = self._pending.popleft()
                self.jobs_running.append(job)
                self.waits.append(time.monotonic() - job.submitted)
            try:
                job._run(self.model, self.stats)
            finally:
                with self._cv:
                    self.jobs_running.remove(job)

    def recent_waits(self) -> List[float]:
        """Seconds each of the last (up to 1,000) jobs waited in the queue, oldest first."""
        with self._cv:
            return list(self.waits)

    def wait_percentiles(self) -> dict:
        """Queue wait of the last (up to 1,000) jobs, in milliseconds."""
        w = sorted(self.recent_waits())
        if not w:
            return {"n": 0, "p50_ms": None, "p99_ms": None}
        pick = lambda q: round(1000 * w[min(len(w) - 1, int(q * len(w)))], 1)  # noqa: E731
        return {"n": len(w), "p50_ms": pick(0.50), "p99_ms": pick(0.99)}

    def begin_shutdown(self) -> None:
        """SIGTERM: the running jobs finish; waiting ones get ShuttingDown (a 503 with
        Retry-After, in their API's shape), and so does every later submit."""
        with self._cv:
            self._draining = True
            for j in self._pending:
                j.cancel.set()
                j._post(_Failure(ShuttingDown(self.retry_after)))
                j._post(_DONE)
            self._pending.clear()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for j in self._pending:
                j.cancel.set()
                j._post(_DONE)
            self._pending.clear()
            for j in self.jobs_running:
                j.cancel.set()
            self._cv.notify_all()
