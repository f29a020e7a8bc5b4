"""Prove README's install-and-serve command: wait for /health of the `llamay serve` it started,
then one chat completion with a required tool call, whose arguments must parse and fit.

Standard library only: the serve command installs no HTTP client."""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--pid", type=int, required=True, help="the serve command's process")
ap.add_argument("--log", required=True)
ap.add_argument("--timeout", type=float, default=3600)
args = ap.parse_args()
base = f"http://127.0.0.1:{args.port}"


def fail(msg):
    try:
        tail = open(args.log, encoding="utf-8", errors="replace").read()[-4000:]
    except OSError:
        tail = ""
    sys.exit(f"serve smoke: {msg}\n--- serve command's output (tail) ---\n{tail}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


start = time.monotonic()
while True:
    try:
        with urllib.request.urlopen(base + "/health", timeout=5) as r:
            if r.status == 200:
                break
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        pass
    if not alive(args.pid):
        fail("the serve command exited before /health answered")
    if time.monotonic() - start > args.timeout:
        fail(f"/health did not answer within {args.timeout:.0f} s")
    time.sleep(2)
print(f"serve smoke: /health answered after {time.monotonic() - start:.0f} s (install and load)")

body = {
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "tools": [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}],
    "tool_choice": "required", "max_tokens": 48,
}
req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=120) as r:
        reply = json.load(r)
except urllib.error.HTTPError as e:
    fail(f"chat completion answered {e.code}: {e.read()[:2000]!r}")
calls = reply["choices"][0]["message"].get("tool_calls") or []
if not calls or calls[0]["function"]["name"] != "get_weather":
    fail(f"no get_weather call in {json.dumps(reply)[:2000]}")
arguments = json.loads(calls[0]["function"]["arguments"])
if not isinstance(arguments, dict) or not isinstance(arguments.get("city"), str):
    fail(f"arguments do not fit the schema: {arguments!r}")
print(f"serve smoke: tool call get_weather({json.dumps(arguments)}), "
      f"finish_reason {reply['choices'][0]['finish_reason']}")
