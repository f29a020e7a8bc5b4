"""GET /metrics (server/api/metrics.py): Prometheus' text format, parsed with prometheus_client's
own parser; the counters agree with what the requests' usage reported, and the key guards it
like every route but /health."""
from __future__ import annotations

import threading

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server_harness import LiveServer


def _scrape(live, **headers) -> dict:
    r = httpx.get(live.base + "/metrics", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            key = s.name + "".join(f"[{k}={v}]" for k, v in sorted(s.labels.items()))
            out[key] = s.value
    return out


@pytest.fixture(scope="module")
def live():
    srv = LiveServer(default_max_tokens=6, parallel=2)
    yield srv
    srv.stop()


def _chat(live, content, **extra):
    r = httpx.post(live.base + "/v1/chat/completions", timeout=120, json={
        "model": live.model_name, "messages": [{"role": "user", "content": content}],
        "temperature": 0, **extra})
    assert r.status_code == 200, r.text
    return r.json()["usage"]


def test_counters_follow_the_requests_usage(live):
    before = _scrape(live)
    usages = [_chat(live, "Say something about ships."),
              _chat(live, "Say something about ships."),          # its prefix cached
              _chat(live, "A number?", response_format={"type": "json_object"}, max_tokens=3)]
    after = _scrape(live)

    def grew(name):
        return after.get(name, 0) - before.get(name, 0)
    completion = sum(u["completion_tokens"] for u in usages)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    prompt = sum(u["prompt_tokens"] for u in usages)
    assert grew("llamay_completion_tokens_total") == completion
    assert grew("llamay_prompt_tokens_cached_total") == cached > 0
    assert grew("llamay_prompt_tokens_total") == prompt - cached
    assert sum(grew(k) for k in after if k.startswith("llamay_requests_finished_total")) == 3
    assert grew("llamay_requests_finished_total[reason=length]") >= 2
    # every evaluated token went through llama_decode
    assert grew("llamay_decode_tokens_total") >= prompt - cached + completion - 3
    assert grew("llamay_decode_steps_total") >= 6 and grew("llamay_decode_seconds_total") > 0
    assert after["llamay_requests_running"] == 0 and after["llamay_requests_queued"] == 0
    assert after["llamay_parallel"] == 2 and after["llamay_kv_cells"] >= 2 * 2048
    assert after["llamay_queue_wait_seconds_count"] >= 3


def test_a_failed_request_is_counted(live):
    before = _scrape(live)
    # a prompt past the context: the generation raises, the API answers 400
    r = httpx.post(live.base + "/v1/chat/completions", timeout=120, json={
        "model": live.model_name, "max_tokens": 4,
        "messages": [{"role": "user", "content": "word " * 5000}]})
    assert r.status_code == 400, r.text
    after = _scrape(live)
    assert after["llamay_requests_failed_total"] == before["llamay_requests_failed_total"] + 1


def test_running_and_queued_requests_are_gauged():
    # the collector over a scheduler whose one worker is held by a job that waits
    import asyncio

    from prometheus_client.core import CollectorRegistry
    from prometheus_client import generate_latest

    from server.api.errors import QueueFull
    from server.api.metrics import ServerCollector
    from server.api.scheduler import Scheduler

    release = threading.Event()

    def held(model, cancel):
        release.wait(30)
        return iter(())

    sched = Scheduler(object(), max_queue=1, parallel=1)
    loop = asyncio.new_event_loop()
    try:
        first = sched.submit(held, loop)
        assert first.started.wait(30)
        sched.submit(held, loop)                    # waits for the worker
        with pytest.raises(QueueFull):
            sched.submit(held, loop)                # the queue is full
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ServerCollector(sched))
        got = {s.name: s.value for fam in text_string_to_metric_families(
            generate_latest(registry).decode()) for s in fam.samples}
        assert got["llamay_requests_running"] == 1
        assert got["llamay_requests_queued"] == 1
        assert got["llamay_requests_refused_total"] == 1
        assert "llamay_decode_steps_total" not in got     # a model without a runtime
    finally:
        release.set()
        sched.close()
        loop.close()


def test_the_key_guards_metrics():
    srv = LiveServer(default_max_tokens=4, api_key="sesame")
    try:
        r = httpx.get(srv.base + "/metrics", timeout=30)
        assert r.status_code == 401
        assert "llamay_requests_finished" in httpx.get(
            srv.base + "/metrics", headers={"Authorization": "Bearer sesame"}, timeout=30).text
    finally:
        srv.stop()
