"""Agents taking turns on one model: the time to first token of a conversation's second turn
against its first, with the prompt cache's slots and without (only the last request's prefix).

    python scripts/bench_prompt_cache.py [-m MODEL.gguf] [--agents 2] [--tools 12] [--slots 8]

Each agent has its own system prompt and a dozen tools (the prompt an agent framework sends);
the agents' first turns run one after another, then their second turns (each its first turn's
messages, the model's reply and a new user message), so without slots every second turn finds
another agent's prompt in the KV cache. Greedy, 8 tokens a turn, the default model unless -m.
Prints a markdown table: prompt tokens, tokens read from the cache and TTFT of each turn, and the
second turn's TTFT as a ratio of the first.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.runtime.default_model import default_model_path  # noqa: E402
from server.runtime.model import Model  # noqa: E402
from server.runtime.types import FinishEvent, SamplingParams, TokenEvent  # noqa: E402
from server.tools import DEFAULT_DIALECT  # noqa: E402

TOPICS = ["travel bookings", "customer support tickets", "the company wiki", "cloud costs",
          "hiring pipelines", "garden planning", "invoices", "incident reviews"]


def tools(n: int, agent: int):
    return [{"type": "function", "function": {
        "name": f"tool_{agent}_{i}", "description": f"Does step {i} of the {TOPICS[agent]} work.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look up."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "mode": {"enum": ["fast", "thorough", "cheap"]}}, "required": ["query"]}}}
        for i in range(n)]


def turn(model: Model, messages, tool_list):
    # the tools written as the server writes them for a template that has no tools section
    prompt = model.render_chat(messages, tools=tool_list, tool_format=DEFAULT_DIALECT)
    t0 = time.perf_counter()
    ttft, text, fin = None, b"", None
    for ev in model.generate(prompt, params=SamplingParams(max_tokens=8, temperature=0.0)):
        if isinstance(ev, TokenEvent):
            if ttft is None:
                ttft = time.perf_counter() - t0
            text += ev.text
        elif isinstance(ev, FinishEvent):
            fin = ev
    assert fin is not None
    return (ttft if ttft is not None else time.perf_counter() - t0), \
        text.decode("utf-8", "replace"), fin


def run(path: str, agents: int, n_tools: int, slots: int):
    model = Model(path, cache_slots=slots)
    convs = [[{"role": "system", "content": f"You are the {TOPICS[a]} agent. Use the tools."},
              {"role": "user", "content": f"Start on {TOPICS[a]}."}] for a in range(agents)]
    rows = []
    for second in (False, True):
        for a in range(agents):
            if second:
                convs[a] = convs[a] + [{"role": "user", "content": "Go on."}]
            ttft, text, fin = turn(model, convs[a], tools(n_tools, a))
            convs[a] = convs[a] + ([{"role": "assistant", "content": text}] if not second else [])
            rows.append((a, 2 if second else 1, fin.prompt_tokens, fin.cached_tokens, ttft))
    model.close()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", default=None)
    p.add_argument("--agents", type=int, default=2)
    p.add_argument("--tools", type=int, default=12)
    p.add_argument("--slots", type=int, default=8)
    args = p.parse_args()
    path = args.model or str(default_model_path())
    print("| slots | agent | turn | prompt tokens | from the cache | TTFT ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    ratios = {}
    for slots in (args.slots, 0):
        rows = run(path, args.agents, args.tools, slots)
        for a, t, prompt, cached, ttft in rows:
            print(f"| {slots} | {a} | {t} | {prompt} | {cached} | {ttft * 1000:.0f} |")
        first = {a: ttft for a, t, _, _, ttft in rows if t == 1}
        ratios[slots] = statistics.median(ttft / first[a] for a, t, _, _, ttft in rows if t == 2)
    print()
    for slots, r in ratios.items():
        print(f"second turn TTFT / first, median over agents, slots={slots}: {r:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
