"""`create_app(settings)`: one model, one request queue, three API shapes (OpenAI, Anthropic,
Ollama) on one Starlette app."""
from __future__ import annotations

import contextlib
import logging
from typing import Optional

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.middleware import Middleware
from starlette.routing import Route

from ..runtime.reasoning import ReasoningFormat, detect_format, get_format
from ..runtime.types import GenerationModel
from ..tools import Dialect, dialect_for, registry
from . import anthropic, ollama, openai
from .auth import APIKeyMiddleware
from .compiling import CompilePool
from .errors import InvalidRequest, NotFound, api_of, error_response
from .metrics import metrics
from .scheduler import Scheduler
from .settings import Settings
from .state import ServerState, state_of

log = logging.getLogger("llamay.server")


async def health(request: Request) -> JSONResponse:
    st = state_of(request)
    return JSONResponse({"status": "ok", "model": st.model_name,
                         "queued": st.scheduler.queued(),
                         "busy": st.scheduler.running is not None,
                         "parallel": st.scheduler.parallel,
                         "running": len(st.scheduler.jobs_running),
                         "tool_dialect": st.dialect.name,
                         "reasoning": st.reasoning.describe() if st.reasoning else None,
                         "queue_wait": st.scheduler.wait_percentiles()})


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return error_response(NotFound(f"no route {request.method} {request.url.path}"),
                          api_of(request.url.path))


async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    err = InvalidRequest(f"method {request.method} not allowed on {request.url.path}",
                         status=405)
    return error_response(err, api_of(request.url.path))


async def _any_error(request: Request, exc: Exception) -> JSONResponse:
    return error_response(exc, api_of(request.url.path))


def load_model(settings: Settings) -> GenerationModel:
    if settings.model is not None:
        return settings.model
    # imported here, not at the top: it loads llama.cpp, which an app serving a given model
    # (a test double) never needs
    from ..runtime.model import Model
    return Model(settings.resolved_model_path(), n_ctx=settings.n_ctx, n_threads=settings.n_threads,
                 n_threads_batch=settings.n_threads_batch, n_gpu_layers=settings.n_gpu_layers,
                 cache_slots=settings.prompt_cache_slots,
                 cache_tokens=settings.prompt_cache_tokens, n_parallel=settings.parallel)


def model_dialect(model: GenerationModel, forced: Optional[str] = None) -> Dialect:
    """The tool-call dialect for this model: forced by name, or detected from its chat
    template and its vocabulary's special tokens."""
    return dialect_for(getattr(model, "chat_template", None),
                       getattr(model, "special_tokens", ()), forced)


def model_reasoning(model: GenerationModel, forced: Optional[str] = None
                    ) -> Optional[ReasoningFormat]:
    """The model's reasoning format: forced by name ("none": off), or detected from its chat
    template."""
    if forced is not None:
        return get_format(forced)
    return detect_format(getattr(model, "chat_template", None))


def create_app(settings: Optional[Settings] = None) -> Starlette:
    settings = settings or Settings()
    model = load_model(settings)
    scheduler = Scheduler(model, max_queue=settings.max_queue,
                          retry_after=settings.retry_after_seconds)
    dialect = model_dialect(model, settings.tool_dialect)
    log.info("tool dialect: %s (%s)", dialect.name,
             "forced" if settings.tool_dialect else "detected from the chat template")
    template = getattr(model, "chat_template", None) or ""
    if settings.tool_dialect is None and "tool" in template and not registry.recognised(
            template, getattr(model, "special_tokens", ())):
        # the template teaches its own call format, which no dialect knows: the calls are
        # held to Hermes' instead (say so; --tool-dialect picks another)
        log.warning("the chat template writes tool calls in a format no tool dialect "
                    "recognises; serving them as 'hermes' (--tool-dialect to choose)")
    reasoning = model_reasoning(model, settings.reasoning_format)
    routes = [Route("/health", health, methods=["GET"]),
              Route("/metrics", metrics, methods=["GET"])]
    routes += openai.routes() + anthropic.routes() + ollama.routes()

    compiles = CompilePool(settings.limits.compile_threads,
                           settings.limits.compile_timeout_seconds, settings.limits)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        scheduler.close()
        compiles.close()

    middleware = ([Middleware(APIKeyMiddleware, api_key=settings.api_key)]
                  if settings.api_key else [])
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={404: _not_found, 405: _method_not_allowed,
                                        Exception: _any_error})
    app.state.llamay = ServerState(settings, model, scheduler, compiles=compiles,
                                   dialect=dialect, reasoning=reasoning)
    return app


class _DrainingServer(uvicorn.Server):
    """uvicorn, which on SIGTERM / SIGINT stops accepting and waits for open connections;
    first the queue is drained, so waiting requests get a clean 503 instead of running."""

    def __init__(self, config: uvicorn.Config, scheduler: Scheduler):
        super().__init__(config)
        self.scheduler = scheduler

    def handle_exit(self, sig, frame) -> None:
        self.scheduler.begin_shutdown()
        super().handle_exit(sig, frame)


def serve_app(app: Starlette, host: str, port: int, shutdown_timeout: Optional[float]) -> None:
    """Run the app until SIGTERM / SIGINT; in-flight requests get up to `shutdown_timeout`
    seconds to finish (None: as long as they take), then are cancelled."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            # uvicorn annotates an int but hands it to asyncio.timeout,
                            # which takes seconds as a float (--shutdown-timeout is one)
                            timeout_graceful_shutdown=shutdown_timeout)  # type: ignore[arg-type]
    _DrainingServer(config, app.state.llamay.scheduler).run()
