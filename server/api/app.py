"""`create_app(settings)`: one model, one request queue, three API shapes (OpenAI, Anthropic,
Ollama) on one Starlette app."""
from __future__ import annotations

import contextlib
from typing import Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..runtime.types import GenerationModel
from . import anthropic, ollama, openai
from .errors import InvalidRequest, NotFound, error_response
from .scheduler import Scheduler
from .settings import Settings
from .state import ServerState, state_of


async def health(request: Request) -> JSONResponse:
    st = state_of(request)
    return JSONResponse({"status": "ok", "model": st.model_name,
                         "queued": st.scheduler.queued(),
                         "busy": st.scheduler.running is not None})


def _api_of(path: str) -> str:
    if path.startswith("/api/"):
        return "ollama"
    if path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return error_response(NotFound(f"no route {request.method} {request.url.path}"),
                          _api_of(request.url.path))


async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    err = InvalidRequest(f"method {request.method} not allowed on {request.url.path}",
                         status=405)
    return error_response(err, _api_of(request.url.path))


async def _any_error(request: Request, exc: Exception) -> JSONResponse:
    return error_response(exc, _api_of(request.url.path))


def load_model(settings: Settings) -> GenerationModel:
    if settings.model is not None:
        return settings.model
    # imported here, not at the top: it loads llama.cpp, which an app serving a given model
    # (a test double) never needs
    from ..runtime.model import Model
    return Model(settings.resolved_model_path(), n_ctx=settings.n_ctx, n_threads=settings.n_threads)


def create_app(settings: Optional[Settings] = None) -> Starlette:
    settings = settings or Settings()
    model = load_model(settings)
    scheduler = Scheduler(model, max_queue=settings.max_queue,
                          retry_after=settings.retry_after_seconds)
    routes = [Route("/health", health, methods=["GET"])]
    routes += openai.routes() + anthropic.routes() + ollama.routes()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        scheduler.close()

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={404: _not_found, 405: _method_not_allowed,
                                        Exception: _any_error})
    app.state.llamay = ServerState(settings, model, scheduler)
    return app
