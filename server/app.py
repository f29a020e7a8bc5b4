"""`create_app(settings)`: one model, one request queue, three API shapes (OpenAI, Anthropic,
Ollama) on one Starlette app."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .errors import InvalidRequest, ModelNotFound, NotFound, error_response
from .scheduler import Scheduler
from .settings import Settings


@dataclass
class ServerState:
    settings: Settings
    model: Any                      # server.generate.Model
    scheduler: Scheduler
    started: float

    @property
    def model_name(self) -> str:
        return self.settings.model_alias or self.model.name

    def check_model(self, requested: Optional[Any]) -> str:
        """The name to report; a request naming another model gets 404. An absent model field
        means this server's one model."""
        if requested is None or requested == "":
            return self.model_name
        if not isinstance(requested, str):
            raise InvalidRequest("'model' must be a string", param="model")
        known = {self.model_name, self.model.name, self.model.name + ".gguf"}
        base = requested[:-len(":latest")] if requested.endswith(":latest") else requested
        if requested in known or base in known:
            return requested
        raise ModelNotFound(requested, self.model_name)


def state_of(request: Request) -> ServerState:
    return request.app.state.llamay


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


def load_model(settings: Settings):
    if settings.model is not None:
        return settings.model
    from .generate import Model
    return Model(settings.resolved_model_path(), n_ctx=settings.n_ctx, n_threads=settings.n_threads)


def create_app(settings: Optional[Settings] = None) -> Starlette:
    from . import routes_anthropic, routes_ollama, routes_openai

    settings = settings or Settings()
    model = load_model(settings)
    scheduler = Scheduler(model, max_queue=settings.max_queue,
                          retry_after=settings.retry_after_seconds)
    routes = [Route("/health", health, methods=["GET"])]
    routes += routes_openai.routes() + routes_anthropic.routes() + routes_ollama.routes()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        scheduler.close()

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={404: _not_found, 405: _method_not_allowed,
                                        Exception: _any_error})
    app.state.llamay = ServerState(settings, model, scheduler, time.time())
    return app
