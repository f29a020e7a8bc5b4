"""Ollama shape: /api/chat, /api/generate (NDJSON streaming on by default), /api/tags,
/api/show, /api/version."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
import uuid
from typing import Any, Dict, List

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..runtime.types import SamplingParams
from ..tools import allowed_tool_names, tool_choice_mode
from . import structured, thinking
from .compiling import compile_turn
from .endpoint import endpoint
from .errors import InvalidRequest, ModelNotFound, NotFound
from .httpio import (Fields, constraints_of, first_then_rest, ndjson, read_json_object, run_to_end,
                     stream_response)
from .runner import Turn, TurnReader
from .state import ServerState, state_of

API = "ollama"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _params(st: ServerState, opts: Fields) -> SamplingParams:
    n = opts.int("num_predict", st.settings.default_max_tokens)
    if n == 0:
        raise InvalidRequest("'options.num_predict' must not be 0")
    return SamplingParams(
        max_tokens=None if n < 0 else n,         # -1 (infinite) and -2 (fill context)
        temperature=opts.float("temperature", 0.8, lo=0.0),
        top_p=opts.float("top_p", 1.0, lo=0.0, hi=1.0),
        top_k=opts.int("top_k", 0, lo=0),
        min_p=opts.float("min_p", 0.0, lo=0.0, hi=1.0),
        repeat_penalty=opts.float("repeat_penalty", 1.0, lo=0.0),
        seed=opts.int("seed"),
        stop=opts.str_list("stop"),
    )


# fields whose names look like constraints and that these routes understand (tool_choice and
# parallel_tool_calls: llamay extensions on /api/chat, in the OpenAI forms)
CONSTRAINT_FIELDS = structured.understood("ollama_chat", "tool_choice", thinking.BUDGET_FIELD)
GENERATE_CONSTRAINT_FIELDS = structured.understood("ollama_generate")
OPTION_CONSTRAINT_FIELDS = structured.understood("ollama_chat", "llamay_choice_logprobs",
                                                 thinking.BUDGET_FIELD, prefix="options.")


def _dropped(reader: TurnReader) -> dict:
    """The llamay extension on a turn whose budget ended an extra call, which was dropped."""
    return {"llamay_dropped_call": True} if reader.dropped_call else {}


def _constraint(request: Request, body: dict, opts_body: dict, chat: bool):
    """The request's output constraint, planned from the one map (not compiled yet)."""
    structured.refuse_unknown(body, CONSTRAINT_FIELDS if chat else GENERATE_CONSTRAINT_FIELDS)
    structured.refuse_unknown(opts_body, OPTION_CONSTRAINT_FIELDS, prefix="options.")
    choice = opts_body.get("llamay_choice_logprobs", False)
    if not isinstance(choice, bool):
        raise InvalidRequest("'options.llamay_choice_logprobs' must be a boolean")
    return structured.plan(constraints_of(request).output, choice_logprobs=choice), choice


def chat_messages(msgs: Any) -> List[dict]:
    if not isinstance(msgs, list):
        raise InvalidRequest("'messages' must be a list")
    out = []
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise InvalidRequest(f"{where} must be an object with role system, user, assistant "
                                 f"or tool")
        content = m.get("content")
        content = "" if content is None else content    # Ollama accepts a message without one
        if not isinstance(content, str):
            raise InvalidRequest(f"{where}.content must be a string")
        if m.get("images"):
            raise InvalidRequest(f"{where}: images are not supported")
        msg = {"role": m["role"], "content": content}
        if m["role"] == "assistant" and isinstance(m.get("thinking"), str) and m["thinking"]:
            msg["reasoning_content"] = m["thinking"]     # an earlier turn's thought
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = []
            for j, c in enumerate(m["tool_calls"] if isinstance(m["tool_calls"], list) else [None]):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise InvalidRequest(f"{where}.tool_calls[{j}] needs function.name")
                args = fn.get("arguments", {})
                calls.append({"id": c.get("id") or "call_" + uuid.uuid4().hex[:24],
                              "type": "function",
                              "function": {"name": fn["name"], "arguments":
                                           args if isinstance(args, str) else json.dumps(args)}})
            msg["tool_calls"] = calls
        if m["role"] == "tool":
            msg["tool_call_id"] = m.get("tool_call_id") or m.get("tool_name") or ""
        out.append(msg)
    return out


def _timings(reader: TurnReader, t0: float) -> dict:
    p, c = reader.usage()
    total = int((time.time() - t0) * 1e9)
    # as Ollama counts it: the prompt tokens evaluated, not those its cache already held
    return {"total_duration": total, "load_duration": 0,
            "prompt_eval_count": p - reader.cached_tokens(),
            "prompt_eval_duration": 0, "eval_count": c, "eval_duration": total}


def _done_reason(kind: str) -> str:
    return "length" if kind == "length" else "stop"


def _call(call) -> dict:
    return {"function": {"name": call.name, "arguments": call.arguments}}


async def _serve(request: Request, chat: bool):
    t0 = time.time()
    st = state_of(request)
    body = await read_json_object(request)
    f = Fields(body)
    model_name = st.check_model(f.str("model", required=True))
    opts_body = f.dict("options") or {}
    opts = Fields(opts_body, prefix="options.")
    params = _params(st, opts)
    constraint, choice = _constraint(request, body, opts_body, chat)
    think = thinking.ollama(body, opts_body)
    stream = f.bool("stream", True)
    tools, mode, tool_name = [], "none", None
    if chat:
        msgs = chat_messages(body.get("messages"))
        if not msgs:      # Ollama loads the model on an empty chat
            return JSONResponse({"model": model_name, "created_at": _now(),
                                 "message": {"role": "assistant", "content": ""},
                                 "done": True, "done_reason": "load"})
        tools = constraints_of(request).tools
        # Ollama has no tool_choice; llamay takes OpenAI's forms as an extension
        mode, tool_name = tool_choice_mode(body.get("tool_choice"), tools, "openai")
        allowed = allowed_tool_names(body.get("tool_choice"), tools)
        turn = Turn(params=params, messages=msgs, tools=tools, tool_mode=mode,
                    tool_name=tool_name, parallel_tool_calls=f.bool("parallel_tool_calls", True),
                    constraint=constraint, choice_logprobs=choice, dialect=st.dialect,
                    allowed_tools=allowed, **think.turn_fields(st.reasoning))
    else:
        prompt = f.str("prompt", "")
        if not prompt:
            return JSONResponse({"model": model_name, "created_at": _now(), "response": "",
                                 "done": True, "done_reason": "load"})
        if f.bool("raw", False):
            turn = Turn(params=params, prompt=prompt, constraint=constraint,
                        choice_logprobs=choice)
        else:
            msgs = ([{"role": "system", "content": f.str("system")}] if f.str("system") else [])
            msgs.append({"role": "user", "content": prompt})
            turn = Turn(params=params, messages=msgs, constraint=constraint,
                        choice_logprobs=choice, **think.turn_fields(st.reasoning))
    reader = TurnReader(turn, correct=st.settings.decision_correction)
    await compile_turn(request, turn)
    job = st.scheduler.submit(turn.job())
    if not stream:
        await run_to_end(request, job, reader.feed)
        out: Dict[str, Any] = {"model": model_name, "created_at": _now()}
        if chat:
            message: Dict[str, Any] = {"role": "assistant", "content": reader.text}
            if reader.reasoning:
                message["thinking"] = reader.reasoning
            if reader.calls:
                message["tool_calls"] = [_call(c) for c in reader.calls]
            out["message"] = message
        else:
            out["response"] = reader.text
            if reader.reasoning:
                out["thinking"] = reader.reasoning
        out.update({"done": True, "done_reason": _done_reason(reader.finish_kind()),
                    **_timings(reader, t0)})
        reader.add_choice_logprobs(out)
        out.update(_dropped(reader))
        return JSONResponse(out)
    events = await first_then_rest(job)

    def piece(text: str, calls=None, thought: str = "") -> bytes:
        out: Dict[str, Any] = {"model": model_name, "created_at": _now()}
        if chat:
            out["message"] = {"role": "assistant", "content": text}
            if thought:
                out["message"]["thinking"] = thought
            if calls:
                out["message"]["tool_calls"] = calls
        else:
            out["response"] = text
            if thought:
                out["thinking"] = thought
        out["done"] = False
        return ndjson(out)

    async def lines():
        async for e in events:
            for d in reader.feed(e):
                if d.kind == "reasoning" and d.text:
                    yield piece("", thought=d.text)
                elif d.kind == "text" and d.text:
                    if reader.calls and not d.text.strip():
                        continue
                    yield piece(d.text)
                elif d.kind == "call":
                    yield piece("", [_call(d.call)])
        last = {"model": model_name, "created_at": _now()}
        if chat:
            last["message"] = {"role": "assistant", "content": ""}
        else:
            last["response"] = ""
        last.update({"done": True, "done_reason": _done_reason(reader.finish_kind()),
                     **_timings(reader, t0)})
        reader.add_choice_logprobs(last)
        last.update(_dropped(reader))
        yield ndjson(last)
    return stream_response(lines(), API, "application/x-ndjson", ndjson)


@endpoint(API)
async def chat(request: Request):
    return await _serve(request, chat=True)


@endpoint(API)
async def generate(request: Request):
    return await _serve(request, chat=False)


def _details(model) -> dict:
    md = getattr(model, "metadata", {}) or {}
    arch = str(md.get("general.architecture", "unknown"))
    return {"parent_model": "", "format": "gguf", "family": arch, "families": [arch],
            "parameter_size": str(md.get("general.size_label", "")),
            "quantization_level": str(md.get("general.file_type", ""))}


_digests: dict = {}


def _digest(path: str) -> str:
    """sha256 of the GGUF, computed once per process (Ollama reports content digests)."""
    if path not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _digests[path] = h.hexdigest()
    return _digests[path]


@endpoint(API)
async def tags(request: Request):
    st = state_of(request)
    path = st.model.path
    stat = os.stat(path)
    modified = _dt.datetime.fromtimestamp(stat.st_mtime, _dt.timezone.utc).isoformat()
    return JSONResponse({"models": [{
        "name": st.model_name, "model": st.model_name, "modified_at": modified,
        "size": stat.st_size, "digest": _digest(path), "details": _details(st.model)}]})


@endpoint(API)
async def show(request: Request):
    st = state_of(request)
    body = await read_json_object(request)
    f = Fields(body)
    name = f.str("model") or f.str("name")
    if not name:
        raise InvalidRequest("missing required field 'model'")
    try:
        st.check_model(name)
    except ModelNotFound:
        # Ollama's own wording for /api/show, without the name this server serves
        raise NotFound(f"model '{name}' not found") from None
    md = {k: v for k, v in (getattr(st.model, "metadata", {}) or {}).items()
          if not k.startswith("tokenizer.ggml.")}       # token tables run to megabytes
    template = getattr(st.model, "chat_template", None) or ""
    caps = ["completion", "tools"]
    return JSONResponse({
        "modelfile": f"FROM {st.model.path}\n", "parameters": "", "template": template,
        "details": _details(st.model), "model_info": md, "capabilities": caps,
        "modified_at": _now()})


@endpoint(API)
async def version(request: Request):
    try:
        import importlib.metadata
        v = importlib.metadata.version("llamay")
    except Exception:   # noqa: BLE001 - running from a source tree
        v = "0.1.0"
    return JSONResponse({"version": v})


def routes() -> list:
    return [
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/tags", tags, methods=["GET"]),
        Route("/api/show", show, methods=["POST"]),
        Route("/api/version", version, methods=["GET"]),
    ]
