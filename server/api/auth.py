"""`llamay serve --api-key KEY`: every route but `GET /health` needs the key, as
`Authorization: Bearer KEY` (OpenAI, Ollama clients) or `x-api-key: KEY` (Anthropic clients).

An ASGI middleware in front of the routes, so unknown paths are refused alike (the answer
does not tell which routes exist). The 401 is in the error shape of the API the path belongs
to; the key is compared in constant time (hmac.compare_digest).
"""
from __future__ import annotations

import hmac
from typing import Optional

from .errors import Unauthorized, api_of, error_response

OPEN_ROUTES = {("GET", "/health")}


def _presented_key(headers) -> Optional[bytes]:
    bearer = api_key = None
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer":
                bearer = token.strip()
        elif name == b"x-api-key":
            api_key = value.strip()
    return bearer if bearer is not None else api_key


class APIKeyMiddleware:
    def __init__(self, app, api_key: str):
        self.app = app
        self.key = api_key.encode("utf-8")

    def authorized(self, headers) -> bool:
        given = _presented_key(headers)
        return given is not None and hmac.compare_digest(given, self.key)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (scope["method"], scope["path"]) in OPEN_ROUTES \
                or self.authorized(scope["headers"]):
            await self.app(scope, receive, send)
            return
        has_key = _presented_key(scope["headers"]) is not None
        err = Unauthorized("invalid API key" if has_key else
                           "missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'")
        await error_response(err, api_of(scope["path"]))(scope, receive, send)
