"""Load and faults at small scale (scripts/bench_load.py is the big run): concurrent streams
against a short queue each complete or get 429/503 with Retry-After; a client leaving
mid-stream frees the model in every API shape; SIGTERM lets the running stream finish,
answers waiting requests 503 and exits."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from server.api.errors import ShuttingDown
from server.api.scheduler import Scheduler
from server_harness import LiveServer, free_port

ROOT = Path(__file__).resolve().parent.parent
MSGS = [{"role": "user", "content": "hi"}]

# (api, path, body, how a finished stream ends)
STREAMS = [
    ("openai", "/v1/chat/completions",
     {"messages": MSGS, "max_tokens": 16, "stream": True}, "data: [DONE]"),
    ("anthropic", "/v1/messages",
     {"messages": MSGS, "max_tokens": 16, "stream": True}, "event: message_stop"),
    ("ollama", "/api/chat",
     {"messages": MSGS, "stream": True, "options": {"num_predict": 16}}, '"done": true'),
    ("openai", "/v1/responses",
     {"input": "hi", "max_output_tokens": 16, "stream": True}, "event: response.completed"),
]


@pytest.fixture(scope="module")
def live():
    # one request decodes at a time, so that the queue fills (test_server_batching.py runs many)
    s = LiveServer(max_queue=2, parallel=1)
    yield s
    s.stop()


def _stream(base, model, api, path, body, end):
    """-> ("done" | status code, Retry-After header or None)"""
    body = {**body, "model": model}
    with httpx.Client(timeout=120) as c:
        with c.stream("POST", base + path, json=body) as r:
            if r.status_code != 200:
                r.read()
                return r.status_code, r.headers.get("retry-after")
            lines = [line for line in r.iter_lines()]
    text = "\n".join(lines).replace('"done":true', '"done": true')
    if end in text or (api == "openai" and path.endswith("responses")
                       and "response.incomplete" in text):
        return "done", None
    return "torn: " + text[-200:], None


def test_concurrent_streams_complete_or_get_retry_after(live):
    results = []
    lock = threading.Lock()

    def client(i):
        api, path, body, end = STREAMS[i % len(STREAMS)]
        out = _stream(live.base, live.model_name, api, path, body, end)
        with lock:
            results.append((api, out))
    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a client never finished (deadlock?)"
    assert len(results) == 8
    for api, (outcome, retry_after) in results:
        if outcome != "done":
            assert outcome == (503 if api == "ollama" else 429), outcome
            assert retry_after == "1"
    assert any(o == "done" for _, (o, _) in results)
    h = httpx.get(live.base + "/health", timeout=10).json()
    assert h["queued"] == 0 and h["busy"] is False
    assert h["queue_wait"]["n"] >= 1 and h["queue_wait"]["p99_ms"] >= h["queue_wait"]["p50_ms"]


class _Recorder:
    def __init__(self, model):
        self.model = model
        self.reasons = []
        self.done = threading.Event()

    def __getattr__(self, name):
        return getattr(self.model, name)

    def generate(self, *a, **kw):
        for ev in self.model.generate(*a, **kw):
            if hasattr(ev, "reason"):
                self.reasons.append(ev.reason)
                self.done.set()
            yield ev


LONG = {"max_tokens": 1500, "temperature": 1.0, "llamay_regex": "[a-z]{4000}"}


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"messages": MSGS, "stream": True, **LONG}),
    ("/v1/messages", {"messages": MSGS, "stream": True, **LONG}),
    ("/v1/responses", {"input": "hi", "stream": True, "max_output_tokens": 1500,
                       "llamay_regex": "[a-z]{4000}"}),
    ("/api/chat", {"messages": MSGS, "stream": True,
                   "options": {"num_predict": 1500, "llamay_regex": "[a-z]{4000}"}}),
    ("/api/generate", {"prompt": "hi", "stream": True,
                       "options": {"num_predict": 1500, "llamay_regex": "[a-z]{4000}"}}),
])
def test_disconnect_mid_stream_frees_the_model(live, path, body):
    sched = live.state.scheduler
    rec = _Recorder(sched.model)
    sched.model = rec
    try:
        with httpx.Client(timeout=60) as c:
            with c.stream("POST", live.base + path,
                          json={**body, "model": live.model_name}) as r:
                assert r.status_code == 200
                next(r.iter_lines())
        assert rec.done.wait(120)
        assert rec.reasons == ["cancelled"]
        for _ in range(600):
            if sched.running is None:
                break
            time.sleep(0.05)
        assert sched.running is None
    finally:
        sched.model = rec.model
    r = httpx.post(live.base + "/v1/chat/completions", timeout=60,
                   json={"messages": MSGS, "max_tokens": 2})
    assert r.status_code == 200


def test_begin_shutdown_fails_waiting_jobs_and_lets_the_running_one_finish():
    async def main():
        sched = Scheduler(model=None, max_queue=4)
        gate, started = threading.Event(), threading.Event()

        def running(model, cancel):
            started.set()
            gate.wait(30)
            yield "finished"
        first = sched.submit(running)
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        waiting = [sched.submit(lambda m, c: iter(["never"])) for _ in range(2)]
        sched.begin_shutdown()
        with pytest.raises(ShuttingDown):
            sched.submit(lambda m, c: iter(["late"]))
        outcomes = []
        for w in waiting:
            try:
                outcomes.append(await w.collect())
            except ShuttingDown as exc:
                outcomes.append(exc.status_for("openai"))
        gate.set()
        got = await first.collect()
        sched.close()
        return got, outcomes
    got, outcomes = asyncio.run(main())
    assert got == ["finished"] and outcomes == [503, 503]


def _start_server(port, *extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    import fixture_model
    cmd = [sys.executable, "-c", "from server.cli import main; main()", "serve", "-m",
           str(fixture_model.fixture_model_path()), "--port", str(port), "--ctx", "2048",
           *extra]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError("server exited: " + p.stderr.read().decode()[-2000:])
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("server did not start")


def test_sigterm_finishes_the_running_stream_and_refuses_the_queued(fixture_model_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # one request decodes at a time, so that the second one waits in the queue
    proc = _start_server(port, "--max-queue", "4", "--parallel", "1")
    try:
        out = {}
        first_line = threading.Event()

        def long_stream():
            body = {"messages": MSGS, "stream": True, "max_tokens": 600,
                    "llamay_regex": "[a-z]{4000}"}
            with httpx.Client(timeout=120) as c:
                with c.stream("POST", base + "/v1/chat/completions", json=body) as r:
                    lines = []
                    for line in r.iter_lines():
                        if line:
                            lines.append(line)
                            first_line.set()
            out["stream"] = (r.status_code, lines)

        def queued():
            r = httpx.post(base + "/v1/chat/completions", timeout=120,
                           json={"messages": MSGS, "max_tokens": 2})
            out["queued"] = r

        t1 = threading.Thread(target=long_stream)
        t1.start()
        assert first_line.wait(60)
        t2 = threading.Thread(target=queued)
        t2.start()
        for _ in range(600):
            h = httpx.get(base + "/health", timeout=5).json()
            if h["queued"] == 1:
                break
            time.sleep(0.02)
        assert h["queued"] == 1 and h["busy"], h
        proc.send_signal(signal.SIGTERM)
        t2.join(60)
        t1.join(120)
        # uvicorn re-raises the signal once shutdown is done, so the exit says SIGTERM;
        # the stream and queue checks below show the shutdown was graceful
        assert proc.wait(60) in (0, -signal.SIGTERM)
        status, lines = out["stream"]
        assert status == 200 and lines[-1] == "data: [DONE]"
        finals = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
        assert finals[-1]["choices"][0]["finish_reason"] == "length"   # ran to its budget
        q = out["queued"]
        assert q.status_code == 503 and q.headers["retry-after"] == "1"
        assert q.json()["error"]["code"] == "shutting_down"
        # the port is closed: new connections are refused
        with pytest.raises(httpx.ConnectError):
            httpx.get(base + "/health", timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
