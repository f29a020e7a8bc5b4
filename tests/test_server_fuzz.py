"""Property-based fuzz of every endpoint against a live server: hypothesis draws hostile bodies
(tests/fuzz_bodies.py); no answer is ever a 5xx, every error is in its API's shape, and the
server stays healthy. Modest here (derandomized on CI); scripts/bench_hostile.py is the big run."""
from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz_bodies import requests
from server_harness import LiveServer


@pytest.fixture(scope="module")
def live():
    s = LiveServer(max_queue=2, default_max_tokens=4, parallel=1)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(live):
    with httpx.Client(base_url=live.base, timeout=60) as c:
        yield c


def _error_message(api, body):
    if api == "openai":
        assert set(body["error"]) == {"message", "type", "param", "code"}
        return body["error"]["message"]
    if api == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        return body["error"]["message"]
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=requests(model="fixture"))
def test_every_endpoint_never_5xx(live, client, data):
    api, method, path, content = data
    content = content.replace(b'"fixture"', f'"{live.model_name}"'.encode())
    r = client.request(method, path, content=content or None,
                       headers={"content-type": "application/json"})
    assert r.status_code < 500, (path, content[:300], r.text[:300])
    if r.status_code >= 400 and r.headers.get("content-type", "").startswith("application/json"):
        assert "Traceback" not in _error_message(api, r.json())


def test_healthy_after_fuzz(live, client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["busy"] is False and r.json()["queued"] == 0
