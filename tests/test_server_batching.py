"""A live server decoding several requests at once (`--parallel`): every request is served
and parses, a client that leaves mid-batch frees its sequence, and the queue counts only
requests beyond the running ones."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import jsonschema
import pytest

from server.api.errors import QueueFull
from server.api.scheduler import Scheduler

MSGS = [{"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                           "days": {"type": "integer"}},
          "required": ["city", "days"], "additionalProperties": False}
PARALLEL = 4


@pytest.fixture(scope="module")
def live():
    from server_harness import LiveServer
    s = LiveServer(parallel=PARALLEL, max_queue=8)
    yield s
    s.stop()


def chat(live, body, timeout=120):
    return httpx.post(live.base + "/v1/chat/completions", timeout=timeout,
                      json={"model": live.model_name, "messages": MSGS, **body})


def test_health_says_how_many_run_at_once(live):
    h = httpx.get(live.base + "/health").json()
    assert h["parallel"] == PARALLEL and h["running"] == 0
    assert live.state.model.n_parallel == PARALLEL


def test_eight_requests_at_once_are_all_served_and_parse(live):
    rt = live.state.model.runtime
    before = rt.step_counts()
    bodies = [{"max_tokens": 6 + i, "temperature": 1.0, "seed": i,
               "response_format": {"type": "json_schema",
                                   "json_schema": {"name": "t", "schema": SCHEMA}}}
              if i % 2 else {"max_tokens": 12, "seed": i} for i in range(8)]
    out = [None] * len(bodies)

    def one(i):
        out[i] = chat(live, bodies[i])
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for i, r in enumerate(out):
        assert r is not None and r.status_code == 200, r and r.text
        if i % 2:
            # closed at the budget or finished: a document of the schema either way
            jsonschema.validate(json.loads(r.json()["choices"][0]["message"]["content"]),
                                SCHEMA)
    after = rt.step_counts()
    # they shared forward passes
    assert after["works"] - before["works"] > after["calls"] - before["calls"]
    assert rt.in_use() == 0


def test_a_client_leaving_mid_batch_frees_its_sequence(live):
    rt = live.state.model.runtime
    others = [None] * 3

    def one(i):
        others[i] = chat(live, {"max_tokens": 40, "seed": i})
    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    with httpx.Client(timeout=60) as c:
        with c.stream("POST", live.base + "/v1/chat/completions",
                      json={"model": live.model_name, "messages": MSGS, "stream": True,
                            "max_tokens": 1500, "llamay_regex": "[a-z]{4000}"}) as r:
            assert r.status_code == 200
            next(r.iter_lines())
    for t in threads:
        t.join(300)
    assert all(r is not None and r.status_code == 200 for r in others)
    for _ in range(600):
        if rt.in_use() == 0:
            break
        time.sleep(0.05)
    assert rt.in_use() == 0


def test_the_queue_holds_only_what_waits_beyond_the_running_jobs():
    async def main():
        sched = Scheduler(model=None, max_queue=2, parallel=3)
        gate = threading.Event()
        started = threading.Semaphore(0)

        def hold(model, cancel):
            started.release()
            gate.wait(30)
            return iter(["done"])
        running = []
        for _ in range(3):      # each taken by a worker before the next arrives
            running.append(sched.submit(hold))
            assert await asyncio.get_running_loop().run_in_executor(None, started.acquire,
                                                                     True, 30)
        assert len(sched.jobs_running) == 3
        waiting = [sched.submit(hold) for _ in range(2)]
        with pytest.raises(QueueFull):
            sched.submit(hold)
        gate.set()
        got = [await j.collect() for j in running + waiting]
        sched.close()
        return got
    assert asyncio.run(main()) == [["done"]] * 5
