"""GET /metrics: the server's counters in Prometheus' text format (as llama-server's
`--metrics` and vLLM's /metrics), read at scrape time from the scheduler and the runtime.

Counters: requests finished (by finish reason), failed and refused for a full queue; prompt
tokens evaluated and taken from the prompt cache; completion tokens; the decode steps,
llama_decode calls, tokens evaluated and seconds inside llama_decode. Gauges: requests
running and queued, the parallel sequences, the KV cells, the prompt-cache slots and the
tokens they hold. A summary: the queue wait of the last 1,000 requests.
"""
from __future__ import annotations

from typing import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (CollectorRegistry, CounterMetricFamily, GaugeMetricFamily,
                                    Metric, SummaryMetricFamily)
from starlette.requests import Request
from starlette.responses import Response

from .scheduler import Scheduler
from .state import state_of


class ServerCollector:
    """One scrape: the scheduler's request stats and the runtime's step counts, as they are
    now (nothing is kept here)."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler

    def collect(self) -> Iterator[Metric]:
        sched = self.scheduler
        st = sched.stats.snapshot()
        done = CounterMetricFamily("llamay_requests_finished", "Requests that finished "
                                   "generating, by finish reason.", labels=["reason"])
        for reason, n in sorted(st["finished"].items()):
            done.add_metric([reason], n)
        yield done
        yield CounterMetricFamily("llamay_requests_failed", "Requests whose generation raised "
                                  "(answered with an error).", value=st["failed"])
        yield CounterMetricFamily("llamay_requests_refused", "Requests refused because the "
                                  "queue was full (429, Ollama 503).", value=st["refused"])
        yield CounterMetricFamily("llamay_prompt_tokens", "Prompt tokens evaluated (the "
                                  "prompt less its cached prefix).", value=st["prompt_tokens"])
        yield CounterMetricFamily("llamay_prompt_tokens_cached", "Prompt tokens whose KV came "
                                  "from the prompt cache.", value=st["cached_tokens"])
        yield CounterMetricFamily("llamay_completion_tokens", "Completion tokens (sampled and "
                                  "fast-forwarded).", value=st["completion_tokens"])
        yield GaugeMetricFamily("llamay_requests_running", "Requests generating now.",
                                value=len(sched.jobs_running))
        yield GaugeMetricFamily("llamay_requests_queued", "Requests waiting for a sequence.",
                                value=sched.queued())
        yield GaugeMetricFamily("llamay_parallel", "Sequences decoded at once (--parallel).",
                                value=sched.parallel)
        waits = sched.recent_waits()
        wait = SummaryMetricFamily("llamay_queue_wait_seconds", "Time the last (up to 1,000) "
                                   "requests waited in the queue.", count_value=len(waits),
                                   sum_value=sum(waits))
        yield wait
        rt = getattr(sched.model, "runtime", None)
        if rt is None or not hasattr(rt, "step_counts"):
            return
        c = rt.step_counts()
        yield CounterMetricFamily("llamay_decode_steps", "Steps of the batch scheduler.",
                                  value=c["steps"])
        yield CounterMetricFamily("llamay_decode_calls", "llama_decode calls.", value=c["calls"])
        yield CounterMetricFamily("llamay_decode_tokens", "Tokens evaluated by llama_decode "
                                  "(prompts, sampled and forced tokens, probes).",
                                  value=c["entries"])
        yield CounterMetricFamily("llamay_decode_seconds", "Seconds inside llama_decode.",
                                  value=c["decode_ms"] / 1000.0)
        yield GaugeMetricFamily("llamay_kv_cells", "Cells of the unified KV cache.",
                                value=getattr(rt, "n_cells", 0))
        slots = rt.cached_prompts()
        yield GaugeMetricFamily("llamay_prompt_cache_slots", "Prompt-cache slots in use (host "
                                "memory).", value=len(slots))
        yield GaugeMetricFamily("llamay_prompt_cache_tokens", "Tokens the prompt-cache slots "
                                "hold.", value=sum(slots))


async def metrics(request: Request) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServerCollector(state_of(request).scheduler))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
