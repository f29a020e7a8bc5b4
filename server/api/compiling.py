"""Constraints compile off the event loop, within a time budget.

A compile (schema, GBNF, regex, lexicon) runs on one of `compile_threads` threads; the
request waits at most `compile_timeout_seconds` for it. Past that the request is answered
(400 `compile_timeout`, or 503 `compile_busy` when no compile thread became free in time)
while the compile, which cannot be interrupted inside the engine, runs on to its end and is
dropped. The size limits (limits.py) bound how long that can be; the engine's own compile
work cap (docs/limits.md) bounds the rest.

One caveat measured in docs/reliability.md: the engine's subset construction holds the GIL,
so a compile that spends long there delays the event loop for that long even on a thread.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from typing import Any, Callable, Dict

from .errors import APIError, InvalidRequest


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


class CompilePool:
    def __init__(self, threads: int, timeout: float):
        self.timeout = timeout
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="llamay-compile")

    async def run(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        started = threading.Event()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)

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
    """Run `fn(*args, **kwargs)` (a compile: structured.build) on the app's compile pool."""
    return await request.app.state.llamay.compiles.run(fn, *args, **kwargs)
