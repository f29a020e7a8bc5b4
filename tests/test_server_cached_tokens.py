"""Prompt tokens read from the KV cache are reported as each API reports them (issue 28,
point 2's reporting; the cache itself is today the last request's prefix): OpenAI
`usage.prompt_tokens_details.cached_tokens` (Responses: `input_tokens_details`), Anthropic
`cache_read_input_tokens` beside `input_tokens` (those evaluated), Ollama's `prompt_eval_count`
counting only what was evaluated. The same request twice: the second reuses all of its prompt
but the last token (evaluated again for its logits)."""
from __future__ import annotations

import itertools
import json

import httpx
import pytest

from server_harness import LiveServer

_unique = itertools.count()


@pytest.fixture(scope="module")
def live():
    s = LiveServer(default_max_tokens=3)
    yield s
    s.stop()


def _messages():
    return [{"role": "user", "content": f"Cached tokens, conversation {next(_unique)}: hello."}]


def _twice(live, path, body):
    first = httpx.post(live.base + path, json=body, timeout=120)
    second = httpx.post(live.base + path, json=body, timeout=120)
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    return first.json(), second.json()


def test_openai_chat_reports_cached_tokens(live):
    body = {"model": live.model_name, "messages": _messages(), "max_tokens": 3,
            "temperature": 0}
    first, second = _twice(live, "/v1/chat/completions", body)
    p = second["usage"]["prompt_tokens"]
    assert first["usage"]["prompt_tokens"] == p
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] < p - 1   # a new message
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == p - 1


def test_openai_chat_stream_usage_reports_cached_tokens(live):
    body = {"model": live.model_name, "messages": _messages(), "max_tokens": 3,
            "stream": True, "stream_options": {"include_usage": True}}
    httpx.post(live.base + "/v1/chat/completions", json=body, timeout=120)
    with httpx.stream("POST", live.base + "/v1/chat/completions", json=body, timeout=120) as r:
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: {")]
    usage = json.loads(lines[-1][len("data: "):])["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] - 1


def test_responses_report_cached_tokens(live):
    body = {"model": live.model_name, "input": _messages()[0]["content"],
            "max_output_tokens": 3}
    _, second = _twice(live, "/v1/responses", body)
    u = second["usage"]
    assert u["input_tokens_details"]["cached_tokens"] == u["input_tokens"] - 1


def test_anthropic_counts_cache_reads_apart(live):
    body = {"model": live.model_name, "messages": _messages(), "max_tokens": 3}
    first, second = _twice(live, "/v1/messages", body)
    u1, u2 = first["usage"], second["usage"]
    whole = u1["input_tokens"] + u1["cache_read_input_tokens"]
    assert u2["input_tokens"] + u2["cache_read_input_tokens"] == whole
    assert u2["input_tokens"] == 1 and u2["cache_read_input_tokens"] == whole - 1
    assert u2["cache_creation_input_tokens"] == 0


def test_ollama_prompt_eval_count_is_what_was_evaluated(live):
    body = {"model": live.model_name, "messages": _messages(), "stream": False,
            "options": {"num_predict": 3}}
    first, second = _twice(live, "/api/chat", body)
    assert first["prompt_eval_count"] > 1 and second["prompt_eval_count"] == 1
