"""Hostile input against a live server on 127.0.0.1: every bomb answered quickly with a 4xx
naming its limit, the event loop responsive meanwhile, then a property-based fuzz of every
endpoint (no 5xx), the server healthy and its memory flat afterwards.

    python scripts/bench_hostile.py [-m MODEL.gguf] [--fuzz 3000] [--fuzz-seconds 600]

Without -m the tiny fixture model of the tests serves (the limits act before the model).
Prints markdown tables: per bomb the status, the time to the answer (median of 3), the worst
GET /health latency while it was handled (a separate run), and the limit its message
names; per endpoint the fuzz's status counts; RSS before and after.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from live_server import ServerProcess, fixture_model_path  # noqa: E402

MSGS = [{"role": "user", "content": "hi"}]


def deep_text(depth: int) -> str:
    return '{"type": "array", "items": ' * depth + '{"type": "string"}' + "}" * depth


def chat(extra: dict) -> bytes:
    return json.dumps({"messages": MSGS, "max_tokens": 2, **extra}).encode()


def bombs():
    """(name, path, body bytes, chunked)"""
    ten_mb = b'{"prompt": "' + b"a" * (10 * 1024 * 1024) + b'"}'
    enum = {"enum": [f"v{i}" for i in range(300_000)]}
    return [
        ("body nested 5,000 deep", "/v1/chat/completions",
         chat({})[:-1] + b', "metadata": ' + deep_text(5000).encode() + b"}", False),
        ("schema nested 5,000 deep (object)", "/v1/chat/completions",
         chat({})[:-1] + b', "llamay_schema": ' + deep_text(5000).encode() + b"}", False),
        ("schema nested 5,000 deep (JSON text)", "/v1/chat/completions",
         chat({"llamay_schema": deep_text(5000)}), False),
        ("enum of 300,000 values", "/v1/chat/completions", chat({"llamay_schema": enum}), False),
        ("enum of 300,000 values (Ollama format)", "/api/chat",
         json.dumps({"model": "x", "messages": MSGS, "stream": False, "format": enum}).encode(),
         False),
        ("lexicon of 300,000 words", "/v1/messages",
         json.dumps({"model": "x", "messages": MSGS, "max_tokens": 2,
                     "llamay_lexicon": enum["enum"]}).encode(), False),
        ("regex ((a{1,100}){1,100}){1,100}", "/v1/chat/completions",
         chat({"llamay_regex": "((a{1,100}){1,100}){1,100}"}), False),
        ("regex (a|b)*a(a|b){20}", "/v1/chat/completions",
         chat({"llamay_regex": "(a|b)*a(a|b){20}"}), False),
        ("regex ((a|b)*a(a|b){20})|x...x (4,000 x)", "/v1/chat/completions",
         chat({"llamay_regex": "((a|b)*a(a|b){20})|" + "x" * 4000}), False),
        ('GBNF ("a"|"b")* "a" ("a"|"b"){20}', "/v1/chat/completions",
         chat({"llamay_grammar": 'root ::= ("a" | "b")* "a" ("a" | "b"){20}'}), False),
        ("schema pattern (a|b)*a(a|b){20}", "/v1/chat/completions",
         chat({"llamay_schema": {"type": "string", "pattern": "(a|b)*a(a|b){20}"}}), False),
        ("tool parameter pattern (a|b)*a(a|b){20}", "/v1/chat/completions",
         chat({"tool_choice": "required", "tools": [{"type": "function", "function": {
             "name": "f", "parameters": {"type": "object", "properties": {"code": {
                 "type": "string", "pattern": "(a|b)*a(a|b){20}"}}}}}]}), False),
        ("regex of 100,000 chars", "/v1/chat/completions",
         chat({"llamay_regex": "a" * 100_000}), False),
        ('GBNF ((("a"){1,100}){1,100}){1,100}', "/v1/chat/completions",
         chat({"llamay_grammar": 'root ::= ((("a"){1,100}){1,100}){1,100}'}), False),
        ("GBNF rules a{1,100} of b{1,100} of c{1,100}", "/v1/chat/completions",
         chat({"llamay_grammar": 'root ::= a{1,100}\na ::= b{1,100}\nb ::= "c"{1,100}'}),
         False),
        ("GBNF of 1,000,000 chars", "/v1/chat/completions",
         chat({"llamay_grammar": 'root ::= "' + "a" * 1_000_000 + '"'}), False),
        ("schema with 100,000 properties", "/v1/chat/completions",
         chat({"llamay_schema": {"type": "object", "properties": {
             f"p{i}": {} for i in range(100_000)}}}), False),
        ("100,000 messages", "/v1/chat/completions",
         json.dumps({"messages": MSGS * 100_000, "max_tokens": 2}).encode(), False),
        ("10,000 tools", "/v1/chat/completions",
         chat({"tools": [{"type": "function", "function": {"name": f"f{i}"}}
                         for i in range(10_000)]}), False),
        ("max_tokens 10^9", "/v1/chat/completions", chat({"max_tokens": 10**9}), False),
        ("10 MB body (Content-Length)", "/v1/completions", ten_mb, False),
        ("10 MB body (chunked)", "/v1/completions", ten_mb, True),
    ]


def limit_named(text: str) -> str:
    m = re.search(r"limit ((?:max|compile)_\w+)", text)
    if m:
        return m.group(1)
    try:
        body = json.loads(text)
    except ValueError:
        return "?"
    err = body.get("error")
    msg = err.get("message") if isinstance(err, dict) else err
    return ("engine: " + msg[:70]) if msg else "(none: served)"


def fire(client: httpx.Client, path: str, content: bytes, chunked: bool):
    if chunked:
        payload = (content[i:i + 65536] for i in range(0, len(content), 65536))
    else:
        payload = content
    t0 = time.perf_counter()
    r = client.post(path, content=payload, headers={"content-type": "application/json"})
    return r, time.perf_counter() - t0


def worst_health_latency(srv: ServerProcess, client: httpx.Client, path, content, chunked):
    """The slowest GET /health answered while the bomb was being handled."""
    stop, polling = threading.Event(), threading.Event()
    lat = []
    poller = httpx.Client(base_url=srv.base, timeout=30)

    def poll():
        while not stop.is_set():
            t = time.perf_counter()
            poller.get("/health")
            lat.append(time.perf_counter() - t)
            polling.set()
            time.sleep(0.005)
    th = threading.Thread(target=poll)
    th.start()
    polling.wait(30)
    fire(client, path, content, chunked)
    stop.set()
    th.join()
    poller.close()
    return max(lat)


def run_bombs(srv: ServerProcess):
    print("| bomb | endpoint | status | answered in (median of 3) | worst /health meanwhile | "
          "limit named |")
    print("|---|---|---|---|---|---|")
    # one client: a new httpx client costs ~100 ms (its SSL context) and would be measured too
    client = httpx.Client(base_url=srv.base, timeout=120)
    for name, path, content, chunked in bombs():
        content = content.replace(b'"model": "x"', f'"model": "{srv.model_name}"'.encode())
        runs = [fire(client, path, content, chunked) for _ in range(3)]
        r = runs[-1][0]
        dt = statistics.median(t for _, t in runs)
        worst = worst_health_latency(srv, client, path, content, chunked)
        print(f"| {name} | {path} | {r.status_code} | {1000 * dt:.1f} ms "
              f"| {1000 * worst:.1f} ms | {limit_named(r.text)} |", flush=True)
    client.close()


def run_fuzz(srv: ServerProcess, n: int, seconds: float):
    from hypothesis import HealthCheck, given, settings

    from fuzz_bodies import requests
    counts = collections.defaultdict(collections.Counter)
    failures = []
    t_end = time.monotonic() + seconds
    client = httpx.Client(base_url=srv.base, timeout=120)

    @settings(max_examples=n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(requests(model=srv.model_name))
    def one(data):
        if time.monotonic() > t_end:
            return
        api, method, path, content = data
        r = client.request(method, path, content=content or None,
                           headers={"content-type": "application/json"})
        counts[path][f"{r.status_code // 100}xx"] += 1
        if r.status_code >= 500:
            failures.append((path, content[:200], r.text[:200]))
    t0 = time.monotonic()
    one()
    elapsed = time.monotonic() - t0
    client.close()
    total = collections.Counter()
    print("| endpoint | requests | 2xx | 4xx | 5xx |")
    print("|---|---|---|---|---|")
    for path in sorted(counts):
        c = counts[path]
        total.update(c)
        print(f"| {path} | {sum(c.values())} | {c['2xx']} | {c['4xx']} | {c['5xx']} |")
    print(f"| all | {sum(total.values())} | {total['2xx']} | {total['4xx']} | {total['5xx']} |")
    print(f"\nfuzz: {sum(total.values())} requests in {elapsed:.0f} s; responses >= 500: "
          f"{len(failures)}")
    for f in failures[:5]:
        print("  5xx:", f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", default=None, help="GGUF (default: the tests' fixture model)")
    ap.add_argument("--fuzz", type=int, default=3000, help="fuzzed requests (0: none)")
    ap.add_argument("--fuzz-seconds", type=float, default=600, help="time bound of the fuzz")
    args = ap.parse_args()
    model = args.model or fixture_model_path()
    srv = ServerProcess(model, "--ctx", "2048", "--max-tokens", "4", "--max-queue", "4")
    try:
        rss0 = srv.rss_mb()
        print(f"server: {srv.model_name} on {srv.base}, RSS at start {rss0:.1f} MiB\n")
        run_bombs(srv)
        rss1 = srv.rss_mb()
        print(f"\nRSS after the bombs: {rss1:.1f} MiB\n")
        if args.fuzz:
            run_fuzz(srv, args.fuzz, args.fuzz_seconds)
        rss2 = srv.rss_mb()
        h = srv.health()
        print(f"\nhealth afterwards: status {h['status']}, queued {h['queued']}, busy {h['busy']}")
        print(f"RSS: start {rss0:.1f} MiB, after bombs {rss1:.1f} MiB, after fuzz {rss2:.1f} MiB")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
