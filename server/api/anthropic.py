"""Anthropic shape: /v1/messages (tool_use / tool_result blocks, streaming events)."""
from __future__ import annotations

import json
import uuid
from typing import Any, List

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..runtime.types import SamplingParams
from ..tools import tool_choice_mode
from . import structured, thinking
from .compiling import compile_turn
from .endpoint import endpoint
from .errors import InvalidRequest
from .httpio import (Fields, constraints_of, first_then_rest, read_json_object, run_to_end, sse,
                     stream_response)
from .runner import Turn, TurnReader
from .state import state_of

API = "anthropic"
# fields whose names look like constraints and that this route understands
CONSTRAINT_FIELDS = structured.understood("messages", "tool_choice", "llamay_choice_logprobs",
                                         thinking.BUDGET_FIELD)


def _usage(reader: TurnReader) -> dict:
    """Anthropic's usage: input_tokens are those evaluated; the prompt tokens the KV cache
    already held are cache_read_input_tokens (their sum is the whole prompt)."""
    p, c = reader.usage()
    cached = reader.cached_tokens()
    return {"input_tokens": p - cached, "output_tokens": c, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached}


def _dropped(reader: TurnReader) -> dict:
    """The llamay extension on a turn whose budget ended an extra call, which was dropped."""
    return {"llamay_dropped_call": True} if reader.dropped_call else {}


def _text_blocks(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"{where} must be a string or a list of text blocks")
    out = []
    for i, b in enumerate(content):
        if not isinstance(b, dict) or b.get("type") != "text" or not isinstance(b.get("text"), str):
            raise InvalidRequest(f"{where}[{i}] must be a text block")
        out.append(b["text"])
    return "".join(out)


def chat_messages(body: dict, f: Fields) -> List[dict]:
    """Anthropic messages (+ system) -> OpenAI-shaped messages for Model.render_chat."""
    out: List[dict] = []
    if body.get("system") is not None:
        out.append({"role": "system", "content": _text_blocks(body["system"], "system")})
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise InvalidRequest("'messages' must be a non-empty list")
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise InvalidRequest(f"{where} must be an object with role user or assistant")
        content = m.get("content")
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        if not isinstance(content, list):
            raise InvalidRequest(f"{where}.content must be a string or a list of blocks")
        text: List[str] = []
        thoughts: List[str] = []
        calls: List[dict] = []
        results: List[dict] = []
        for j, b in enumerate(content):
            bw = f"{where}.content[{j}]"
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text":
                if not isinstance(b.get("text"), str):
                    raise InvalidRequest(f"{bw}.text must be a string")
                text.append(b["text"])
            elif kind in ("thinking", "redacted_thinking") and m["role"] == "assistant":
                # an earlier turn's thought: the template renders it back (most drop it)
                if isinstance(b.get("thinking"), str):
                    thoughts.append(b["thinking"])
            elif kind == "tool_use" and m["role"] == "assistant":
                if not isinstance(b.get("name"), str):
                    raise InvalidRequest(f"{bw}.name must be a string")
                calls.append({"id": b.get("id") or "toolu_" + uuid.uuid4().hex[:24],
                              "type": "function",
                              "function": {"name": b["name"],
                                           "arguments": json.dumps(b.get("input", {}),
                                                                   ensure_ascii=False)}})
            elif kind == "tool_result" and m["role"] == "user":
                c = b.get("content", "")
                c = _text_blocks(c, f"{bw}.content") if not isinstance(c, str) else c
                if b.get("is_error"):
                    c = "Error: " + c
                results.append({"role": "tool", "content": c,
                                "tool_call_id": b.get("tool_use_id") or ""})
            else:
                raise InvalidRequest(f"{bw}: block type {kind!r} is not supported in a "
                                     f"{m['role']} message")
        out.extend(results)
        if text or calls or not results:
            msg = {"role": m["role"], "content": "".join(text)}
            if thoughts:
                msg["reasoning_content"] = "".join(thoughts)
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
    return out


def _stop_reason(kind: str) -> str:
    return {"length": "max_tokens", "tool_calls": "tool_use",
            "stop_sequence": "stop_sequence"}.get(kind, "end_turn")


def _tool_block(call) -> dict:
    # a dialect's own id form (Mistral's nine alphanumerics, Kimi's functions.NAME:IDX) comes
    # back with the call and its result and the template checks or writes it: kept as it is
    cid = call.id
    if cid.startswith("call_"):
        cid = "toolu_" + cid[len("call_"):]
    return {"type": "tool_use", "id": cid, "name": call.name, "input": call.arguments}


@endpoint(API)
async def messages(request: Request):
    st = state_of(request)
    body = await read_json_object(request)
    f = Fields(body)
    model_name = st.check_model(f.str("model", required=True))
    max_tokens = f.int("max_tokens", lo=1)
    if max_tokens is None:
        raise InvalidRequest("missing required field 'max_tokens'")
    msgs = chat_messages(body, f)
    structured.refuse_unknown(body, CONSTRAINT_FIELDS)
    found = constraints_of(request)
    tools = found.tools
    tc = f.dict("tool_choice")
    mode, tool_name = tool_choice_mode(tc, tools, API)
    parallel = not bool((tc or {}).get("disable_parallel_tool_use", False))
    choice = f.bool("llamay_choice_logprobs", False)
    constraint = structured.plan(found.output, choice_logprobs=choice)
    params = SamplingParams(
        max_tokens=max_tokens,
        temperature=f.float("temperature", 1.0, lo=0.0, hi=1.0),
        top_p=f.float("top_p", 1.0, lo=0.0, hi=1.0),
        top_k=f.int("top_k", 0, lo=0),
        seed=f.int("seed"),
        stop=f.str_list("stop_sequences"),
    )
    stream = f.bool("stream", False)
    turn = Turn(params=params, messages=msgs, tools=tools, tool_mode=mode, tool_name=tool_name,
                parallel_tool_calls=parallel, constraint=constraint, choice_logprobs=choice,
                dialect=st.dialect, **thinking.anthropic(body).turn_fields(st.reasoning))
    reader = TurnReader(turn, correct=st.settings.decision_correction)
    await compile_turn(request, turn)
    job = st.scheduler.submit(turn.job())
    mid = "msg_" + uuid.uuid4().hex[:24]
    if not stream:
        await run_to_end(request, job, reader.feed)
        content = []
        if reader.reasoning:
            content.append({"type": "thinking", "thinking": reader.reasoning, "signature": ""})
        if reader.text or not reader.calls:
            content.append({"type": "text", "text": reader.text})
        content += [_tool_block(c) for c in reader.calls]
        out = {"id": mid, "type": "message", "role": "assistant", "model": model_name,
               "content": content, "stop_reason": _stop_reason(reader.finish_kind()),
               "stop_sequence": reader.finish.stop_sequence if reader.finish else None,
               "usage": _usage(reader)}
        reader.add_choice_logprobs(out)
        out.update(_dropped(reader))
        return JSONResponse(out)
    events = await first_then_rest(job)

    def ev(kind: str, **data) -> bytes:
        return sse({"type": kind, **data}, event=kind)

    async def frames():
        yield ev("message_start", message={
            "id": mid, "type": "message", "role": "assistant", "model": model_name, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}})
        index = -1
        text_open = False
        thought_open = False
        async for e in events:
            for d in reader.feed(e):
                if d.kind == "reasoning" and d.text:
                    if not thought_open:
                        index += 1
                        thought_open = True
                        yield ev("content_block_start", index=index,
                                 content_block={"type": "thinking", "thinking": "",
                                                "signature": ""})
                    yield ev("content_block_delta", index=index,
                             delta={"type": "thinking_delta", "thinking": d.text})
                    continue
                if thought_open and d.kind in ("text", "call", "finish"):
                    yield ev("content_block_delta", index=index,
                             delta={"type": "signature_delta", "signature": ""})
                    yield ev("content_block_stop", index=index)
                    thought_open = False
                if d.kind == "text" and d.text:
                    if not text_open:
                        if reader.calls and not d.text.strip():
                            continue      # whitespace between or after calls
                        index += 1
                        text_open = True
                        yield ev("content_block_start", index=index,
                                 content_block={"type": "text", "text": ""})
                    yield ev("content_block_delta", index=index,
                             delta={"type": "text_delta", "text": d.text})
                elif d.kind == "call":
                    if text_open:
                        yield ev("content_block_stop", index=index)
                        text_open = False
                    index += 1
                    block = _tool_block(d.call)
                    yield ev("content_block_start", index=index,
                             content_block={**block, "input": {}})
                    yield ev("content_block_delta", index=index,
                             delta={"type": "input_json_delta",
                                    "partial_json": json.dumps(block["input"], ensure_ascii=False)})
                    yield ev("content_block_stop", index=index)
        if thought_open:
            yield ev("content_block_stop", index=index)
            thought_open = False
        if index < 0 or (not text_open and not reader.calls and reader.reasoning
                         and not reader.text):
            index += 1
            text_open = True
            yield ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
        if text_open:
            yield ev("content_block_stop", index=index)
        delta = {"stop_reason": _stop_reason(reader.finish_kind()),
                 "stop_sequence": reader.finish.stop_sequence if reader.finish else None}
        extra = reader.add_choice_logprobs({})
        extra.update(_dropped(reader))
        yield ev("message_delta", delta=delta, usage=_usage(reader), **extra)
        yield ev("message_stop")
    return stream_response(frames(), API, "text/event-stream",
                           lambda payload: sse(payload, event="error"))


def routes() -> list:
    return [Route("/v1/messages", messages, methods=["POST"])]
