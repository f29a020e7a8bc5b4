"""Many agents on one server: aggregate completion tokens/s, TTFT and latency at 1, 2, 4, 8 and
16 concurrent agents, `llamay serve --parallel N` against llama-server `-np N`.

    python scripts/bench_agents.py [-m MODEL.gguf] [--llama-server PATH] [--parallel 8]
                                   [--agents 1,2,4,8,16] [--turns 2] [--workloads tools,text]
    python scripts/bench_agents.py --rss 1000        # RSS over 1,000 requests (llamay only)
    python scripts/bench_agents.py --flood 64        # 64 concurrent streams at once (llamay)
    python scripts/bench_agents.py --prompt-speed 1500 --ctx 4096 --llama-server PATH
                                  # prompt tokens/s of one fresh prompt, both servers
    python scripts/bench_agents.py --baseline CHECKOUT --rounds 3 --llama-server PATH
                                  # llamay at another checkout beside this one, interleaved

Both servers load the same GGUF (the default model unless -m) with the same threads, the same
context a sequence and the same parallel sequences, and run side by side; each cell of the
table runs llamay and llama-server one after the other (interleaved, so a busy machine slows
both). An agent is a thread running `--turns` streamed chat requests one after another
(OpenAI shape, `stream_options.include_usage`), each turn its own conversation so far:

* json: `response_format` with a JSON schema (a grammar on both sides), 48 tokens at most;
* text: a plain answer, 48 tokens at most;
* tools: four tools and `tool_choice: "required"`, llamay only: with SmolLM2's template
  llama-server (`--jinja`) writes no tools into the prompt and enforces no call (it answers
  in prose), so there is nothing to compare.

Aggregate tokens/s is every completion token over the cell's wall time; TTFT is the first
streamed delta. llama-server is built from the llama.cpp that llama-cpp-python vendors
(scripts/build_llama_server.sh); without it the llama-server columns are left out.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.runtime.default_model import default_model_path  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": name, "description": desc,
    "parameters": {"type": "object", "properties": props, "required": list(props)[:1]}}}
    for name, desc, props in [
        ("get_weather", "Current weather for a city.",
         {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}}),
        ("search_web", "Search the web.",
         {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1,
                                                 "maximum": 10}}),
        ("send_email", "Send an email.",
         {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}),
        ("create_event", "Add a calendar event.",
         {"title": {"type": "string"}, "date": {"type": "string"},
          "minutes": {"type": "integer"}}),
    ]]
PLAN = {"type": "object", "properties": {
    "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
    "pack": {"type": "array", "items": {"type": "string"}, "maxItems": 5}},
    "required": ["city", "unit", "pack"], "additionalProperties": False}
CITIES = ["Paris", "Lima", "Oslo", "Cairo", "Hanoi", "Quito", "Perth", "Tunis", "Dakar", "Riga",
          "Porto", "Delhi", "Osaka", "Sofia", "Accra", "Bern"]
MAX_TOKENS = 48
MODEL_NAME = ["model"]      # the GGUF's stem: the name llamay serves it under


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Server:
    def __init__(self, name: str, cmd: List[str], port: int, env: Optional[dict] = None):
        self.name, self.port = name, port
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited: " + self.proc.stderr.read().decode()[-2000:])
            try:
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{name} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def request(base: str, messages: list, workload: str) -> Dict[str, float]:
    body = {"model": MODEL_NAME[0], "messages": messages, "max_tokens": MAX_TOKENS,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
    if workload == "tools":
        body.update(tools=TOOLS, tool_choice="required")
    elif workload == "json":
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "plan", "schema": PLAN}}
    t0 = time.perf_counter()
    ttft = None
    usage = None
    chunks = 0
    with httpx.Client(timeout=600) as c:
        with c.stream("POST", base + "/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                raise RuntimeError(f"{r.status_code}: {r.read()[:300]!r}")
            for line in r.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                ev = json.loads(line[6:])
                if ev.get("usage"):
                    usage = ev["usage"]
                for ch in ev.get("choices") or []:
                    d = ch.get("delta") or {}
                    if d.get("content") or d.get("tool_calls"):
                        chunks += 1
                        if ttft is None:
                            ttft = time.perf_counter() - t0
    total = time.perf_counter() - t0
    tokens = usage["completion_tokens"] if usage else chunks
    return {"ttft": ttft if ttft is not None else total, "latency": total, "tokens": tokens}


AGENT_BASE = [0]    # added to each cell's agent numbers: every cell's agents are new ones


def agent(base: str, k: int, turns: int, workload: str, out: list) -> None:
    k += AGENT_BASE[0]
    city = CITIES[k % len(CITIES)]
    messages = [{"role": "system", "content": f"You are agent {k}, a helpful assistant."}]
    for t in range(turns):
        messages.append({"role": "user", "content":
                         f"Turn {t}: what is the weather in {city}, and what should I pack?"})
        try:
            got = request(base, messages, workload)
            got["turn"] = t
        except (RuntimeError, httpx.HTTPError) as exc:
            out.append({"error": str(exc)[:200]})
            return
        out.append(got)
        messages.append({"role": "assistant", "content": f"It is mild in {city}."})


def cell(base: str, n_agents: int, turns: int, workload: str) -> Dict[str, float]:
    out: List[Dict[str, float]] = []
    threads = [threading.Thread(target=agent, args=(base, k, turns, workload, out))
               for k in range(n_agents)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    errors = [r["error"] for r in out if "error" in r]
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed: {errors[0]}")
    ttft = sorted(r["ttft"] for r in out)
    lat = sorted(r["latency"] for r in out)
    # an agent's later turns against its first (the prompt cache's share of TTFT)
    first = [r["ttft"] for r in out if r["turn"] == 0]
    later = [r["ttft"] for r in out if r["turn"] > 0]

    def pick(xs, q):
        return xs[min(len(xs) - 1, int(q * len(xs)))]
    return {"tok_s": sum(r["tokens"] for r in out) / wall, "requests": len(out),
            "tokens": sum(r["tokens"] for r in out),
            "ttft50": pick(ttft, 0.5), "ttft99": pick(ttft, 0.99),
            "turn2": (pick(sorted(later), 0.5) / pick(sorted(first), 0.5)) if later else None,
            "lat50": pick(lat, 0.5), "lat99": pick(lat, 0.99)}


def llamay_cmd(model: str, port: int, args) -> List[str]:
    return [sys.executable, "-c", "from server.cli import main; main()", "serve", "-m", model,
            "--port", str(port), "--ctx", str(args.ctx), "--parallel", str(args.parallel),
            "--threads", str(args.threads), "--threads-batch", str(args.threads_batch),
            "--max-tokens", str(MAX_TOKENS)]


def llama_server_cmd(binary: str, model: str, port: int, args) -> List[str]:
    # the same cells a sequence as llamay's (a unified cache of ctx x parallel)
    return [binary, "-m", model, "--port", str(port), "-c", str(args.ctx * args.parallel),
            "-np", str(args.parallel), "--kv-unified", "-t", str(args.threads),
            "-tb", str(args.threads_batch), "--jinja", "--no-webui", "-lv", "0"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"),
                    help="llama-server binary (env LLAMA_SERVER)")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=2048, help="context a sequence")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--threads-batch", type=int, default=2)
    ap.add_argument("--agents", default="1,2,4,8,16")
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--workloads", default="json,text,tools")
    ap.add_argument("--rss", type=int, default=0, help="requests for the RSS check")
    ap.add_argument("--flood", type=int, default=0, help="concurrent streams at once")
    ap.add_argument("--prompt-speed", type=int, default=0,
                    help="words of a fresh prompt to time the evaluation of")
    ap.add_argument("--port", type=int, default=18600)
    ap.add_argument("--baseline", default=None,
                    help="another llamay checkout (built), run beside this one in every cell")
    ap.add_argument("--rounds", type=int, default=1, help="times the table is run")
    args = ap.parse_args()
    model = args.model or str(default_model_path())
    MODEL_NAME[0] = Path(model).stem
    env = {"PYTHONPATH": str(ROOT)}
    servers = [Server("llamay", llamay_cmd(model, args.port, args), args.port, env)]
    try:
        if args.rss or args.flood:
            srv = servers[0]
            if args.rss:
                rss_check(srv, args.rss)
            if args.flood:
                flood(srv, args.flood)
            return
        if args.baseline:
            servers.insert(0, Server("llamay@baseline", llamay_cmd(model, args.port + 2, args),
                                     args.port + 2, {"PYTHONPATH": args.baseline}))
        if args.llama_server:
            servers.append(Server("llama-server", llama_server_cmd(
                args.llama_server, model, args.port + 1, args), args.port + 1))
        if args.prompt_speed:
            prompt_speed(servers, args.prompt_speed)
            return
        print(f"model {Path(model).name}, --parallel {args.parallel}, ctx {args.ctx} a "
              f"sequence, threads {args.threads}/{args.threads_batch}, {args.turns} turns an "
              f"agent, {MAX_TOKENS} tokens at most a turn, greedy\n")
        print("| workload | agents | server | tokens/s | vs 1 agent | TTFT p50 / p99 (s) | "
              "latency p50 / p99 (s) | turn 2 TTFT / turn 1 |")
        print("|---|---:|---|---:|---:|---|---|---:|")
        one: Dict[str, float] = {}
        for _, workload, n in itertools.product(range(args.rounds), args.workloads.split(","),
                                                [int(x) for x in args.agents.split(",")]):
            AGENT_BASE[0] += 10000
            for srv in servers:
                if workload == "tools" and srv.name == "llama-server":
                    continue
                # warm: the prompt's common part, by an agent of its own
                agent(srv.base, 1000 + n, 1, workload, [])
                r = cell(srv.base, n, args.turns, workload)
                one.setdefault(f"{srv.name} {workload}", r["tok_s"])
                turn2 = f"{r['turn2']:.2f}x" if r["turn2"] is not None else "-"
                print(f"| {workload} | {n} | {srv.name} | {r['tok_s']:.1f} | "
                      f"{r['tok_s'] / one[f'{srv.name} {workload}']:.2f}x | "
                      f"{r['ttft50']:.2f} / "
                      f"{r['ttft99']:.2f} | {r['lat50']:.2f} / {r['lat99']:.2f} | "
                      f"{turn2} |", flush=True)
    finally:
        for srv in servers:
            srv.stop()


def prompt_speed(servers: List[Server], words: int, rounds: int = 3) -> None:
    """One fresh prompt (a new first word each time: nothing cached) and one token out, on
    each server in turn: prompt tokens over the request's wall time."""
    text = " ".join(f"{CITIES[i % len(CITIES)].lower()} weather item {i}." for i in
                    range(words // 4))
    rates: Dict[str, List[float]] = {srv.name: [] for srv in servers}
    n_tokens: Dict[str, int] = {}
    for r in range(rounds):
        for k, srv in enumerate(servers):
            body = {"model": MODEL_NAME[0], "max_tokens": 1, "temperature": 0.0,
                    "messages": [{"role": "user", "content": f"run {r} {k}: {text}"}]}
            t0 = time.perf_counter()
            got = httpx.post(srv.base + "/v1/chat/completions", json=body, timeout=600).json()
            wall = time.perf_counter() - t0
            if "usage" not in got:
                raise RuntimeError(f"{srv.name}: {json.dumps(got)[:300]}")
            n_tokens[srv.name] = got["usage"]["prompt_tokens"]
            rates[srv.name].append(n_tokens[srv.name] / wall)
    print("| server | prompt tokens | prompt tokens/s (median of %d) |" % rounds)
    print("|---|---:|---:|")
    for name, xs in rates.items():
        print(f"| {name} | {n_tokens[name]} | {sorted(xs)[len(xs) // 2]:.0f} |")


def rss_check(srv: Server, n: int) -> None:
    """n short requests, 8 at a time; the server's RSS after each tenth of them."""
    done = [0]
    lock = threading.Lock()
    marks = []

    def worker(k):
        while True:
            with lock:
                if done[0] >= n:
                    return
                done[0] += 1
                i = done[0]
            request(srv.base, [{"role": "user", "content": f"Say a word about {i}."}],
                    "tools" if i % 2 else "text")
            if i % max(1, n // 10) == 0:
                marks.append((i, rss_kib(srv.proc.pid)))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    start = rss_kib(srv.proc.pid)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"RSS before: {start / 1024:.0f} MiB")
    for i, kib in sorted(marks):
        print(f"after {i} requests: {kib / 1024:.0f} MiB")


def flood(srv: Server, n: int) -> None:
    """n streams opened at once: how many finished, were refused or failed."""
    results: List[str] = []

    def one(k):
        try:
            request(srv.base, [{"role": "user", "content": f"Name a colour ({k})."}], "text")
            results.append("completed")
        except RuntimeError as exc:
            results.append(str(exc)[:3])
        except httpx.HTTPError as exc:
            results.append(type(exc).__name__)
    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {k: results.count(k) for k in sorted(set(results))}
    print(f"{n} concurrent streams: {counts} in {time.perf_counter() - t0:.1f} s; "
          f"{n - len(results)} lost")


if __name__ == "__main__":
    main()
