"""`llamay serve --api-key`: every route but GET /health needs the key (Bearer or x-api-key);
otherwise a 401 in the error shape of the API the path belongs to."""
from __future__ import annotations

import httpx
import pytest

from server.api.auth import APIKeyMiddleware
from server_harness import CLIENT_TIMEOUT, LiveServer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")

KEY = "sk-test-7f3a9c"
MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def live():
    s = LiveServer(api_key=KEY, default_max_tokens=2)
    yield s
    s.stop()


ROUTES = [
    ("openai", "POST", "/v1/chat/completions", {"messages": MSGS, "max_tokens": 1}),
    ("openai", "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1}),
    ("openai", "POST", "/v1/responses", {"input": "hi", "max_output_tokens": 1}),
    ("openai", "GET", "/v1/models", None),
    ("openai", "GET", "/v1/nowhere", None),          # unknown routes are refused alike
    ("anthropic", "POST", "/v1/messages", {"messages": MSGS, "max_tokens": 1, "model": "x"}),
    ("ollama", "POST", "/api/chat", {"messages": MSGS, "stream": False, "model": "x"}),
    ("ollama", "POST", "/api/generate", {"prompt": "hi", "stream": False, "model": "x"}),
    ("ollama", "GET", "/api/tags", None),
    ("ollama", "POST", "/api/show", {"model": "x"}),
    ("ollama", "GET", "/api/version", None),
]

HEADERS = [
    ("none", {}),
    ("wrong bearer", {"Authorization": "Bearer nope"}),
    ("wrong x-api-key", {"x-api-key": "nope"}),
    ("key with another scheme", {"Authorization": f"Basic {KEY}"}),
    ("prefix of the key", {"Authorization": f"Bearer {KEY[:-1]}"}),
    ("empty bearer", {"Authorization": "Bearer"}),
]


def _shape(api, body):
    if api == "openai":
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["code"] == "invalid_api_key"
        return body["error"]["message"]
    if api == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
        return body["error"]["message"]
    assert set(body) == {"error"}
    return body["error"]


@pytest.mark.parametrize("api, method, path, body", ROUTES, ids=[r[2] for r in ROUTES])
@pytest.mark.parametrize("case, headers", HEADERS, ids=[h[0] for h in HEADERS])
def test_refused_without_the_right_key(live, api, method, path, body, case, headers):
    r = httpx.request(method, live.base + path, json=body, headers=headers, timeout=30)
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == "Bearer"
    assert "API key" in _shape(api, r.json())


@pytest.mark.parametrize("api, method, path, body", ROUTES, ids=[r[2] for r in ROUTES])
@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_served_with_the_right_key(live, api, method, path, body, header):
    headers = ({"Authorization": f"Bearer {KEY}"} if header == "authorization"
               else {"x-api-key": KEY})
    if body is not None and "model" in body:
        body = {**body, "model": live.model_name}
    r = httpx.request(method, live.base + path, json=body, headers=headers, timeout=60)
    assert r.status_code == (404 if path == "/v1/nowhere" else 200), r.text


def test_health_is_open(live):
    r = httpx.get(live.base + "/health", timeout=10)
    assert r.status_code == 200 and r.json()["status"] == "ok"
    # only GET: other methods on /health still need the key
    assert httpx.post(live.base + "/health", timeout=10).status_code == 401


def test_official_clients(live):
    good = openai.OpenAI(base_url=live.base + "/v1", api_key=KEY, max_retries=0,
                         timeout=CLIENT_TIMEOUT)
    assert good.chat.completions.create(model=live.model_name, messages=MSGS, max_tokens=1)
    bad = openai.OpenAI(base_url=live.base + "/v1", api_key="wrong", max_retries=0,
                        timeout=CLIENT_TIMEOUT)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()

    good_a = anthropic.Anthropic(base_url=live.base, api_key=KEY, max_retries=0,
                                 timeout=CLIENT_TIMEOUT)     # sends x-api-key
    assert good_a.messages.create(model=live.model_name, max_tokens=1, messages=MSGS).content
    bad_a = anthropic.Anthropic(base_url=live.base, api_key="wrong", max_retries=0,
                                timeout=CLIENT_TIMEOUT)
    with pytest.raises(anthropic.AuthenticationError):
        bad_a.messages.create(model=live.model_name, max_tokens=1, messages=MSGS)

    good_o = ollama.Client(host=live.base, headers={"Authorization": f"Bearer {KEY}"},
                           timeout=CLIENT_TIMEOUT)
    assert good_o.chat(model=live.model_name, messages=MSGS, options={"num_predict": 1})
    bad_o = ollama.Client(host=live.base, timeout=CLIENT_TIMEOUT)
    with pytest.raises(ollama.ResponseError) as e:
        bad_o.chat(model=live.model_name, messages=MSGS, options={"num_predict": 1})
    assert e.value.status_code == 401


def test_without_a_key_everything_is_open(fixture_model_path):
    s = LiveServer(default_max_tokens=1)
    try:
        assert httpx.get(s.base + "/v1/models", timeout=10).status_code == 200
    finally:
        s.stop()


def test_key_compared_in_constant_time(monkeypatch):
    import hmac
    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    mw = APIKeyMiddleware(app=None, api_key=KEY)
    assert mw.authorized([(b"x-api-key", KEY.encode())])
    assert not mw.authorized([(b"authorization", b"Bearer x")])
    assert calls == [(KEY.encode(), KEY.encode()), (b"x", KEY.encode())]
