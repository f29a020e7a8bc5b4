"""Constraints compile off the event loop, within a time budget.

Every compile of a request (its output constraint: schema, GBNF, regex, lexicon; its tool-call
grammar) runs on one of `compile_threads` threads under the engine budget the server's limits
set (`max_compile_work`, `max_dfa_growth`: cengine.CompileBudget, applied with
cengine.budget_scope around the call); the request waits at most `compile_timeout_seconds`
for it. Past that the request is answered (400 `compile_timeout`, or 503 `compile_busy` when
no compile thread became free in time) while the compile, which cannot be interrupted inside
the engine, runs on to its end and is dropped. The size limits (limits.py) and the engine
budget bound how long that can be. A compile over the engine budget is a 400 naming the
server's limit (`limit_exceeded`).

The engine's subset construction holds the GIL but hands it over every few thousand work
units (docs/reliability.md), so other requests are served meanwhile.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from typing import Any, Callable, Dict, Optional

import cengine

from .errors import APIError, InvalidRequest
from .limits import LimitExceeded
from .settings import Limits


class CompileTimeout(InvalidRequest):
    def __init__(self, seconds: float):
        super().__init__(f"the output constraint took longer than {seconds:g} s to compile; "
                         f"the server's limit compile_timeout_seconds is {seconds:g}",
                         code="compile_timeout")


class CompileBusy(APIError):
    """Every compile thread is busy (with compiles past their budget): retry later."""
    status = 503
    openai_type = "server_error"
    anthropic_type = "overloaded_error"

    def __init__(self, seconds: float, retry_after: int = 1):
        super().__init__(f"no compile thread became free within {seconds:g} s (the server's "
                         f"limit compile_timeout_seconds); retry later", code="compile_busy")
        self.retry_after = retry_after

    def headers(self, api: str) -> Dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def _over_budget(exc: cengine.LimitError, limits: Limits) -> Optional[LimitExceeded]:
    """The engine refused a compile over the budget the server set: name the server's limit."""
    if exc.limit not in ("max_compile_work", "max_dfa_growth"):
        return None
    return LimitExceeded(exc.limit, getattr(limits, exc.limit),
                         f"cannot enforce the requested output format: {exc}",
                         param=exc.keyword or exc.rule or exc.pointer)


class CompilePool:
    def __init__(self, threads: int, timeout: float, limits: Optional[Limits] = None):
        self.timeout = timeout
        self.limits = limits or Limits()
        self.budget = self.limits.compile_budget()
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="llamay-compile")

    def _budgeted(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        try:
            with cengine.budget_scope(self.budget):
                return fn(*args, **kwargs)
        except cengine.LimitError as e:
            over = _over_budget(e, self.limits)
            if over is None:
                raise
            raise over from None

    async def run(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        started = threading.Event()
        call = functools.partial(contextvars.copy_context().run, self._budgeted, fn,
                                 *args, **kwargs)

        def work():
            started.set()
            return call()
        fut = asyncio.get_running_loop().run_in_executor(self.executor, work)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.timeout)
        except asyncio.TimeoutError:
            # the late result (or error) is dropped; retrieving it keeps asyncio quiet
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
            if not started.is_set() and fut.cancel():
                raise CompileBusy(self.timeout) from None
            raise CompileTimeout(self.timeout) from None

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


async def compile_off_loop(request, fn: Callable[..., Any], *args, **kwargs) -> Any:
    """Run `fn(*args, **kwargs)` (a compile: Turn.compile_grammars) on the app's compile pool,
    under its budget."""
    return await request.app.state.llamay.compiles.run(fn, *args, **kwargs)


async def compile_turn(request, turn) -> None:
    """A turn's grammars (runner.Turn.compile_grammars: its constraint, its tool-call grammar)
    on the compile pool; a turn without either has nothing to compile and does not wait for a
    thread."""
    if turn.needs_compile():
        await compile_off_loop(request, turn.compile_grammars)
