"""The request queue: FIFO on one worker thread, bounded, cancellable, errors handed over."""
from __future__ import annotations

import asyncio
import threading

import pytest

from server.api.errors import QueueFull
from server.api.scheduler import Scheduler


def _blocking_job(gate: threading.Event, started: threading.Event):
    def run(model, cancel):
        started.set()
        gate.wait(30)
        yield "unblocked"
    return run


def test_fifo_order_and_events():
    async def main():
        sched = Scheduler(model="M", max_queue=8)
        order = []

        def job(i):
            def run(model, cancel):
                order.append(i)
                yield (model, i)
                yield (model, i * 10)
            return run
        jobs = [sched.submit(job(i)) for i in range(5)]
        results = [await j.collect() for j in jobs]
        sched.close()
        return order, results
    order, results = asyncio.run(main())
    assert order == [0, 1, 2, 3, 4]
    assert results == [[("M", i), ("M", i * 10)] for i in range(5)]


def test_full_queue_refuses_then_recovers():
    async def main():
        sched = Scheduler(model=None, max_queue=2)
        gate, started = threading.Event(), threading.Event()
        running = sched.submit(_blocking_job(gate, started))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        waiting = [sched.submit(lambda m, c: iter(["w"])) for _ in range(2)]
        with pytest.raises(QueueFull) as exc:
            sched.submit(lambda m, c: iter(["x"]))
        assert exc.value.status_for("openai") == 429 and exc.value.status_for("ollama") == 503
        assert exc.value.headers("anthropic") == {"Retry-After": "1"}
        gate.set()
        got = [await running.collect()] + [await w.collect() for w in waiting]
        later = await sched.submit(lambda m, c: iter(["later"])).collect()
        sched.close()
        return got, later
    got, later = asyncio.run(main())
    assert got == [["unblocked"], ["w"], ["w"]]
    assert later == ["later"]


def test_cancel_stops_generation_at_next_event():
    async def main():
        sched = Scheduler(model=None, max_queue=2)
        produced = []
        stopped = threading.Event()

        def endless(model, cancel):
            i = 0
            try:
                while not cancel.is_set():
                    produced.append(i)
                    yield i
                    i += 1
            finally:
                stopped.set()
        job = sched.submit(endless)
        seen = []
        async for ev in job.events():
            seen.append(ev)
            if len(seen) == 3:
                break           # the consumer leaves, as a disconnected client does
        await asyncio.get_running_loop().run_in_executor(None, stopped.wait, 30)
        sched.close()
        return seen, stopped.is_set()
    seen, stopped = asyncio.run(main())
    assert seen == [0, 1, 2]
    assert stopped


def test_job_exception_reaches_the_request_and_worker_survives():
    async def main():
        sched = Scheduler(model=None, max_queue=2)

        def bad(model, cancel):
            yield 1
            raise ValueError("prompt too long")
        with pytest.raises(ValueError, match="prompt too long"):
            await sched.submit(bad).collect()
        ok = await sched.submit(lambda m, c: iter([2])).collect()
        sched.close()
        return ok
    assert asyncio.run(main()) == [2]


def test_cancelled_waiting_jobs_free_their_place():
    async def main():
        sched = Scheduler(model=None, max_queue=1)
        gate, started = threading.Event(), threading.Event()
        running = sched.submit(_blocking_job(gate, started))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        w = sched.submit(lambda m, c: iter(["never"]))
        w.cancel.set()
        w2 = sched.submit(lambda m, c: iter(["w2"]))
        gate.set()
        r = await running.collect()
        out = await w2.collect()
        sched.close()
        return r, out
    assert asyncio.run(main()) == (["unblocked"], ["w2"])
