"""Real-world schemas through a live server and the official clients: every answer parses and
validates, whatever the sampling and however short the token budget.

    python scripts/bench_live_schemas.py FOLDER [--api openai|ollama|anthropic] [-n 400]
        [--max-tokens 32] [--temperature 1.0] [--seed 7] [-m MODEL.gguf]

FOLDER holds MaskBench-format files (../shared/corpora/maskbench-dev). A seeded sample of the
schemas that compile (cengine.compile_json_schema with its defaults, as the server compiles
them; the anthropic API takes only `"type": "object"` schemas, as tool input schemas) is sent
one request each, to `llamay serve` on the default model (or -m): the OpenAI API as
`response_format` json_schema, Ollama's `format`, Anthropic's forced `tool_use` with the schema
as the tool's `input_schema`. A small `max_tokens` makes most answers end by the closer. Each
answer is checked with `jsonschema` (the schema's own draft, formats asserted). Prints per
outcome the count (valid, invalid, refused with the API's 4xx and its message) and the finish
reasons; exits 1 when any answer does not validate or any request failed otherwise.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from live_server import ServerProcess  # noqa: E402

PROMPT = "Give an example JSON document."


def sample(folder: Path, n: int, seed: int, objects_only: bool) -> list:
    import cengine
    files = sorted(folder.glob("*.json"))
    random.Random(seed).shuffle(files)
    out = []
    for f in files:
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        if objects_only and not (isinstance(schema, dict) and schema.get("type") == "object"):
            continue
        try:
            cengine.compile_json_schema(schema)
        except cengine.CompileError:
            continue
        out.append((f.stem, schema))
        if len(out) >= n:
            break
    return out


def error_message(e) -> str:
    """The message of an API error: the error body's, as each API shapes it."""
    body = getattr(e, "body", None)
    while isinstance(body, dict):
        if isinstance(body.get("message"), str):
            return body["message"]
        body = body.get("error")
    return str(getattr(e, "error", None) or e)


def openai_client(srv):
    import openai
    return openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0,
                         timeout=600)


def ask_openai(client, srv, schema, args):
    import openai
    try:
        r = client.chat.completions.create(
            model=srv.model_name, messages=[{"role": "user", "content": PROMPT}],
            response_format={"type": "json_schema",
                             "json_schema": {"name": "answer", "schema": schema, "strict": True}},
            max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed)
    except openai.APIStatusError as e:
        return None, None, e.status_code, error_message(e)
    return r.choices[0].message.content, r.choices[0].finish_reason, 200, None


def ollama_client(srv):
    import ollama
    return ollama.Client(host=srv.base)


def ask_ollama(client, srv, schema, args):
    import ollama
    try:
        r = client.chat(model=srv.model_name, messages=[{"role": "user", "content": PROMPT}],
                        format=schema, options={"num_predict": args.max_tokens,
                                                "temperature": args.temperature,
                                                "seed": args.seed})
    except ollama.ResponseError as e:
        return None, None, e.status_code, error_message(e)
    return r.message.content, r.done_reason, 200, None


def anthropic_client(srv):
    import anthropic
    return anthropic.Anthropic(base_url=srv.base, api_key="unused", max_retries=0)


def ask_anthropic(client, srv, schema, args):
    import anthropic
    try:
        r = client.messages.create(
            model=srv.model_name, max_tokens=args.max_tokens,
            messages=[{"role": "user", "content": "Call the tool."}],
            tools=[{"name": "answer", "description": "Record the answer.",
                    "input_schema": schema}],
            tool_choice={"type": "tool", "name": "answer"},
            extra_body={"temperature": args.temperature})
    except anthropic.APIStatusError as e:
        return None, None, e.status_code, error_message(e)
    uses = [b for b in r.content if b.type == "tool_use"]
    text = json.dumps(uses[0].input) if uses else None
    return text, r.stop_reason, 200, None


# per API: (the client, made once per run; one request)
APIS = {"openai": (openai_client, ask_openai), "ollama": (ollama_client, ask_ollama),
        "anthropic": (anthropic_client, ask_anthropic)}


def validation_error(schema, text):
    import jsonschema
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as e:
        return f"not JSON: {e}"
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    err = next(iter(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(doc)), None)
    return None if err is None else err.message


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--api", choices=sorted(APIS), default="openai")
    ap.add_argument("-n", type=int, default=400, help="schemas to send (default 400)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("-m", "--model", help="GGUF to serve (default: the server's default model)")
    args = ap.parse_args(argv)

    schemas = sample(args.folder, args.n, args.seed, objects_only=args.api == "anthropic")
    outcomes: collections.Counter = collections.Counter()
    finishes: collections.Counter = collections.Counter()
    refusals: collections.Counter = collections.Counter()
    failures, seconds = [], []
    make_client, ask = APIS[args.api]
    srv = ServerProcess(args.model)
    try:
        client = make_client(srv)
        for name, schema in schemas:
            t0 = time.perf_counter()
            text, finish, status, message = ask(client, srv, schema, args)
            seconds.append(time.perf_counter() - t0)
            if status != 200:
                kind = "refused (4xx)" if 400 <= status < 500 else f"failed ({status})"
                outcomes[kind] += 1
                # grouped by the message with its numbers left out
                said = re.sub(r"\d+", "N", message)[:100]
                refusals[f"{status}: {said}"] += 1
                if not 400 <= status < 500:
                    failures.append((name, message))
                continue
            finishes[finish] += 1
            why = validation_error(schema, text)
            outcomes["valid" if why is None else "invalid"] += 1
            if why is not None:
                failures.append((name, f"{why}: {text[:200]!r}"))
    finally:
        srv.stop()
    print(f"{args.api}: {len(schemas)} schemas of {args.folder.name}, max_tokens "
          f"{args.max_tokens}, temperature {args.temperature}, seed {args.seed}, model "
          f"{srv.model_name}; seconds per request median {statistics.median(seconds):.2f}, "
          f"max {max(seconds):.2f}\n")
    print("| outcome | requests |\n|---|---:|")
    for k in ("valid", "invalid", "refused (4xx)"):
        print(f"| {k} | {outcomes.get(k, 0)} |")
    for k, v in outcomes.items():
        if k.startswith("failed"):
            print(f"| {k} | {v} |")
    print("\n| finish reason | answers |\n|---|---:|")
    for k, v in finishes.most_common():
        print(f"| {k} | {v} |")
    if refusals:
        print("\n| refusal | requests |\n|---|---:|")
        for k, v in refusals.most_common():
            print(f"| {k} | {v} |")
    for name, why in failures:
        print(f"FAILED {name}: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
