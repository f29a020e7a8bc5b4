"""HTTP plumbing shared by the three API shapes: reading and type-checking bodies, running a
job to completion while watching for the client leaving, and framing streams (SSE, NDJSON)."""
from __future__ import annotations

import asyncio
import builtins
import json
import math
from typing import Any, AsyncIterator, Callable, List, Literal, Optional, overload

from starlette.requests import Request
from starlette.responses import StreamingResponse

from . import limits, structured
from .errors import InvalidRequest, error_payload
from .scheduler import Job
from .state import state_of

_MISSING = object()


async def read_json_object(request: Request) -> dict:
    """The body as a JSON object, within the server's limits (server/api/limits.py): size
    while reading, nesting before parsing, counts and constraint sizes after."""
    lim = state_of(request).settings.limits
    raw = await limits.read_body(request, lim)
    if not raw.strip():
        raise InvalidRequest("request body is empty; expected a JSON object")
    body = limits.loads_bounded(raw, lim)
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    route = structured.ROUTES.get(request.url.path)
    request.state.constraints = limits.check_body(body, route, lim)
    return body


def constraints_of(request: Request) -> structured.RequestConstraints:
    """The constraints read_json_object found in this generation request's body (the one map,
    structured.request_constraints), for the route to plan and compile."""
    return request.state.constraints


class Fields:
    """Typed access to a body's fields; a wrong type is a 400 naming the field.

    The methods are named after the types they check, so inside the class body `str`, `int`,
    `float`, ... are those methods once defined: annotations spell the types `builtins.str`."""

    def __init__(self, body: dict, prefix: str = ""):
        self.body = body
        self.prefix = prefix

    def _name(self, key: str) -> str:
        return self.prefix + key

    def _get(self, key, default):
        v = self.body.get(key, _MISSING)
        return default if v is _MISSING or v is None else v

    def required(self, key: str) -> Any:
        if self.body.get(key) is None:
            raise InvalidRequest(f"missing required field '{self._name(key)}'",
                                 param=self._name(key))
        return self.body[key]

    # a default (or required=True) makes the answer non-None: the overloads say so
    @overload
    def str(self, key: str, default: str, *, required: bool = False) -> str: ...
    @overload
    def str(self, key: str, default: None = None, *, required: Literal[True]) -> str: ...
    @overload
    def str(self, key: str, default: None = None, *,
            required: bool = False) -> Optional[str]: ...

    def str(self, key: str, default: Optional[str] = None, *,
            required: bool = False) -> Optional[str]:
        v = self.required(key) if required else self._get(key, default)
        if v is not None and not isinstance(v, str):
            raise InvalidRequest(f"'{self._name(key)}' must be a string", param=self._name(key))
        return v

    @overload
    def bool(self, key: builtins.str, default: builtins.bool) -> builtins.bool: ...
    @overload
    def bool(self, key: builtins.str, default: None = None) -> Optional[builtins.bool]: ...

    def bool(self, key: builtins.str,
             default: Optional[builtins.bool] = None) -> Optional[builtins.bool]:
        v = self._get(key, default)
        if v is not None and not isinstance(v, bool):
            raise InvalidRequest(f"'{self._name(key)}' must be a boolean", param=self._name(key))
        return v

    @overload
    def int(self, key: builtins.str, default: builtins.int, *,
            lo: Optional[builtins.int] = None,
            hi: Optional[builtins.int] = None) -> builtins.int: ...
    @overload
    def int(self, key: builtins.str, default: None = None, *,
            lo: Optional[builtins.int] = None,
            hi: Optional[builtins.int] = None) -> Optional[builtins.int]: ...

    def int(self, key: builtins.str, default: Optional[builtins.int] = None, *,
            lo: Optional[builtins.int] = None,
            hi: Optional[builtins.int] = None) -> Optional[builtins.int]:
        v = self._get(key, default)
        if v is None:
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidRequest(f"'{self._name(key)}' must be an integer", param=self._name(key))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise InvalidRequest(f"'{self._name(key)}' must be {rng}", param=self._name(key))
        return v

    @overload
    def float(self, key: builtins.str, default: builtins.float, *,
              lo: Optional[builtins.float] = None,
              hi: Optional[builtins.float] = None) -> builtins.float: ...
    @overload
    def float(self, key: builtins.str, default: None = None, *,
              lo: Optional[builtins.float] = None,
              hi: Optional[builtins.float] = None) -> Optional[builtins.float]: ...

    def float(self, key: builtins.str, default: Optional[builtins.float] = None, *,
              lo: Optional[builtins.float] = None,
              hi: Optional[builtins.float] = None) -> Optional[builtins.float]:
        v = self._get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidRequest(f"'{self._name(key)}' must be a finite number",
                                 param=self._name(key))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise InvalidRequest(f"'{self._name(key)}' must be between {lo} and {hi}",
                                 param=self._name(key))
        return float(v)

    def str_list(self, key: builtins.str, *,
                 max_items: Optional[builtins.int] = None) -> List[builtins.str]:
        """A string or a list of strings (OpenAI `stop`)."""
        v = self._get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise InvalidRequest(f"'{self._name(key)}' must be a string or a list of strings",
                                 param=self._name(key))
        if max_items is not None and len(v) > max_items:
            raise InvalidRequest(f"'{self._name(key)}' takes at most {max_items} items",
                                 param=self._name(key))
        return [s for s in v if s]

    def dict(self, key: builtins.str) -> Optional[builtins.dict]:
        v = self._get(key, None)
        if v is not None and not isinstance(v, dict):
            raise InvalidRequest(f"'{self._name(key)}' must be an object", param=self._name(key))
        return v

    def list(self, key: builtins.str) -> Optional[builtins.list]:
        v = self._get(key, None)
        if v is not None and not isinstance(v, list):
            raise InvalidRequest(f"'{self._name(key)}' must be a list", param=self._name(key))
        return v


async def _watch_disconnect(request: Request, job: Job) -> None:
    """Cancel the job when the client goes away before its (non-streamed) answer is ready."""
    while True:
        msg = await request.receive()
        if msg["type"] == "http.disconnect":
            job.cancel.set()
            return


async def run_to_end(request: Request, job: Job, feed: Callable[[Any], Any]) -> None:
    """Drive a job to its end, feeding every event to `feed`; stop it if the client leaves."""
    watcher = asyncio.create_task(_watch_disconnect(request, job))
    try:
        async for ev in job.events():
            feed(ev)
    finally:
        watcher.cancel()


async def first_then_rest(job: Job):
    """Wait for a job's first event so that errors before any output (bad prompt, full
    context) still get a proper status code; returns (first events, async iterator of all)."""
    it = job.events().__aiter__()
    try:
        first = await it.__anext__()
    except StopAsyncIteration:
        first = None

    async def all_events() -> AsyncIterator[Any]:
        if first is not None:
            yield first
            async for ev in it:
                yield ev
    return all_events()


def sse(data: Any, event: Optional[str] = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (head + f"data: {payload}\n\n").encode("utf-8")


def ndjson(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def stream_response(chunks: AsyncIterator[bytes], api: str, media_type: str,
                    error_frame: Callable[[dict], bytes]) -> StreamingResponse:
    """A streaming response whose late errors become one final error frame (never a torn
    connection, never a trace)."""
    async def guarded():
        try:
            async for c in chunks:
                yield c
        except asyncio.CancelledError:
            raise
        except Exception as exc:      # noqa: BLE001 - mapped by class in errors.py
            yield error_frame(error_payload(exc, api))
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(guarded(), media_type=media_type, headers=headers)
