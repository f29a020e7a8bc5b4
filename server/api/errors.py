"""Errors of the HTTP server, mapped by exception class to each API's own error shape.

Every failure a client can cause is a 4xx in the shape its client library understands:
OpenAI {"error": {"message", "type", "param", "code"}}, Anthropic {"type": "error", "error":
{"type", "message"}}, Ollama {"error": "..."}. Nothing ever carries a stack trace.
"""
from __future__ import annotations

import json
import logging
from typing import Dict, Optional

from starlette.responses import JSONResponse

from cengine import CompileError

from ..tools import ToolFormatError

log = logging.getLogger("llamay.server")


class APIError(Exception):
    status = 400
    openai_type = "invalid_request_error"
    anthropic_type = "invalid_request_error"

    def __init__(self, message: str, *, param: Optional[str] = None, code: Optional[str] = None,
                 status: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        if status is not None:
            self.status = status

    def headers(self, api: str) -> Dict[str, str]:
        return {}

    def status_for(self, api: str) -> int:
        return self.status


class InvalidRequest(APIError):
    """Malformed body, wrong type, missing field, refused schema or grammar."""


class ModelNotFound(APIError):
    status = 404
    openai_type = "invalid_request_error"
    anthropic_type = "not_found_error"

    def __init__(self, name: str, available: str):
        super().__init__(f"model '{name}' not found; this server serves '{available}'",
                         param="model", code="model_not_found")


class NotFound(APIError):
    status = 404
    openai_type = "invalid_request_error"
    anthropic_type = "not_found_error"


class QueueFull(APIError):
    """The request queue is at capacity: 429 (OpenAI, Anthropic), 503 (Ollama), with Retry-After."""
    status = 429
    openai_type = "rate_limit_error"
    anthropic_type = "rate_limit_error"

    def __init__(self, retry_after: int = 1):
        super().__init__("the server is busy: request queue is full, retry later",
                         code="queue_full")
        self.retry_after = retry_after

    def headers(self, api: str) -> Dict[str, str]:
        return {"Retry-After": str(self.retry_after)}

    def status_for(self, api: str) -> int:
        return 503 if api == "ollama" else 429


class ShuttingDown(QueueFull):
    """The server received SIGTERM: requests still waiting are answered 503 with Retry-After
    (the running one finishes); new ones are refused the same way."""
    status = 503
    openai_type = "server_error"
    anthropic_type = "overloaded_error"

    def __init__(self, retry_after: int = 1):
        super().__init__(retry_after)
        self.message = "the server is shutting down; retry on another instance or later"
        self.args = (self.message,)
        self.code = "shutting_down"

    def status_for(self, api: str) -> int:
        return 503


class Unauthorized(APIError):
    """No or a wrong API key (`llamay serve --api-key`)."""
    status = 401
    openai_type = "invalid_request_error"
    anthropic_type = "authentication_error"

    def __init__(self, message: str):
        super().__init__(message, code="invalid_api_key")

    def headers(self, api: str) -> Dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class ServerError(APIError):
    status = 500
    openai_type = "server_error"
    anthropic_type = "api_error"


def api_of(path: str) -> str:
    """The API shape a path belongs to, for errors raised outside a route's handler."""
    if path.startswith("/api/"):
        return "ollama"
    if path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


def to_api_error(exc: BaseException) -> APIError:
    """Map any exception to an APIError by its class (the only place that decides status codes)."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, ToolFormatError):
        return InvalidRequest(exc.message, param=exc.param)
    if isinstance(exc, CompileError):
        param = exc.keyword or exc.rule or exc.pointer
        return InvalidRequest(f"cannot enforce the requested output format: {exc}",
                              param=param, code="unsupported_constraint")
    if isinstance(exc, json.JSONDecodeError):
        return InvalidRequest(f"request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}", code="invalid_json")
    if isinstance(exc, UnicodeDecodeError):
        return InvalidRequest("request body is not valid UTF-8", code="invalid_encoding")
    if isinstance(exc, (ValueError, TypeError)):
        # raised by the model for prompts that do not fit the context, bad token ids, ...
        return InvalidRequest(str(exc) or exc.__class__.__name__)
    log.error("unexpected %s while serving a request", exc.__class__.__name__, exc_info=exc)
    return ServerError("internal error while serving the request")


def openai_body(err: APIError) -> dict:
    return {"error": {"message": err.message, "type": err.openai_type, "param": err.param,
                      "code": err.code}}


def anthropic_body(err: APIError) -> dict:
    return {"type": "error", "error": {"type": err.anthropic_type, "message": err.message}}


def ollama_body(err: APIError) -> dict:
    return {"error": err.message}


_BODIES = {"openai": openai_body, "anthropic": anthropic_body, "ollama": ollama_body}


def error_response(exc: BaseException, api: str) -> JSONResponse:
    err = to_api_error(exc)
    return JSONResponse(_BODIES[api](err), status_code=err.status_for(api),
                        headers=err.headers(api))


def error_payload(exc: BaseException, api: str) -> dict:
    """The error body alone, for errors that happen after a stream has started."""
    return _BODIES[api](to_api_error(exc))
