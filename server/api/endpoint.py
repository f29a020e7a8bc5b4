"""The one prologue of every route: an exception raised while handling the request (before a
stream has started) becomes that API's error response, mapped by class in errors.py."""
from __future__ import annotations

import functools
from typing import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from .errors import error_response

Handler = Callable[[Request], Awaitable[Response]]


def endpoint(api: str) -> Callable[[Handler], Handler]:
    """Decorate a route handler of API shape `api` (openai | anthropic | ollama)."""
    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:        # noqa: BLE001 - mapped by class
                return error_response(exc, api)
        return handle
    return wrap
