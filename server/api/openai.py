"""OpenAI shape: /v1/chat/completions, /v1/completions, /v1/responses, /v1/models."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any, Dict, List, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..runtime.types import SamplingParams
from ..tools import allowed_tool_names, tool_choice_mode
from . import structured, thinking
from .compiling import compile_turn
from .endpoint import endpoint
from .errors import InvalidRequest
from .httpio import (Fields, constraints_of, first_then_rest, read_json_object, run_to_end, sse,
                     stream_response)
from .runner import TokenLogprob, Turn, TurnReader
from .state import ServerState, state_of

API = "openai"


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def sampling(f: Fields, *, max_tokens: Optional[int], logprobs: Optional[int]) -> SamplingParams:
    return SamplingParams(
        max_tokens=max_tokens,
        temperature=f.float("temperature", 1.0, lo=0.0, hi=2.0),
        top_p=f.float("top_p", 1.0, lo=0.0, hi=1.0),
        top_k=f.int("top_k", 0, lo=0),
        min_p=f.float("min_p", 0.0, lo=0.0, hi=1.0),
        repeat_penalty=f.float("repeat_penalty", 1.0, lo=0.0),
        seed=f.int("seed"),
        stop=f.str_list("stop", max_items=16),
        logprobs=logprobs,
    )


async def _read_generation_request(request: Request):
    """What every generation route starts with: the server state, the body (a JSON object),
    its field reader, and the model it names (checked against the one served)."""
    st = state_of(request)
    body = await read_json_object(request)
    f = Fields(body)
    return st, body, f, st.check_model(f.str("model"))


def _budget(f: Fields, default: int, *keys: str) -> int:
    for k in keys:
        v = f.int(k, lo=1)
        if v is not None:
            return v
    return default


def _check_n(f: Fields) -> None:
    if f.int("n", 1, lo=1) != 1:
        raise InvalidRequest("only n=1 is supported (one model, one completion per request)",
                             param="n")


def _text_of(content: Any, where: str) -> str:
    """Message content: a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text",
                                                                 "output_text"):
                if not isinstance(part.get("text"), str):
                    raise InvalidRequest(f"{where}[{i}].text must be a string", param="messages")
                out.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise InvalidRequest(f"{where}[{i}]: content parts of type {kind!r} are not "
                                     f"supported (text only)", param="messages")
        return "".join(out)
    raise InvalidRequest(f"{where} must be a string or a list of text parts", param="messages")


def _check_message_shape(m: dict, role: str, where: str) -> None:
    """What OpenAI itself requires of a message: content (an assistant message may have
    tool_calls instead), and a tool message's tool_call_id."""
    if m.get("content") is None and not (role == "assistant" and m.get("tool_calls")):
        raise InvalidRequest(f"missing required field '{where}.content' (role {role})",
                             param="messages")
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        raise InvalidRequest(f"missing required field '{where}.tool_call_id' (a string)",
                             param="messages")


def chat_messages(messages: Any) -> List[dict]:
    """Validate OpenAI chat messages into the shape Model.render_chat takes."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty list", param="messages")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise InvalidRequest(f"{where} must be an object", param="messages")
        role = m.get("role")
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant", "tool"):
            raise InvalidRequest(f"{where}.role must be system, developer, user, assistant or "
                                 f"tool, not {role!r}", param="messages")
        _check_message_shape(m, role, where)
        msg = {"role": role, "content": _text_of(m.get("content"), f"{where}.content")}
        if role == "assistant" and m.get("tool_calls"):
            calls = m["tool_calls"]
            if not isinstance(calls, list):
                raise InvalidRequest(f"{where}.tool_calls must be a list", param="messages")
            norm = []
            for j, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise InvalidRequest(f"{where}.tool_calls[{j}] needs function.name",
                                         param="messages")
                args = fn.get("arguments", "{}")
                if not isinstance(args, str):
                    args = json.dumps(args)
                norm.append({"id": c.get("id") or _id("call"), "type": "function",
                             "function": {"name": fn["name"], "arguments": args}})
            msg["tool_calls"] = norm
        if role == "tool":
            msg["tool_call_id"] = m.get("tool_call_id") or ""
        out.append(msg)
    return out


# fields of the chat and completion routes whose names look like constraints and that they
# understand; other such names are refused (structured.refuse_unknown)
CHAT_CONSTRAINT_FIELDS = structured.understood("chat", "tool_choice", thinking.BUDGET_FIELD,
                                              *structured.OPENAI_OTHER_FIELDS)
COMPLETIONS_CONSTRAINT_FIELDS = structured.understood("completions",
                                                     *structured.OPENAI_OTHER_FIELDS)
RESPONSES_CONSTRAINT_FIELDS = structured.understood("responses", "tool_choice",
                                                   thinking.BUDGET_FIELD,
                                                   *structured.OPENAI_OTHER_FIELDS)


def _constraint(request: Request, f: Fields):
    """The request's output constraint, planned from the one map (not compiled yet)."""
    choice = f.bool("llamay_choice_logprobs", False)
    found = constraints_of(request)
    return structured.plan(found.output, choice_logprobs=choice, compact=found.compact), choice


def _dropped(reader: TurnReader) -> dict:
    """The llamay extension on a turn whose budget ended an extra call, which was dropped."""
    return {"llamay_dropped_call": True} if reader.dropped_call else {}


def _tools(request: Request, body: dict, f: Fields):
    tools = constraints_of(request).tools
    mode, name = tool_choice_mode(body.get("tool_choice"), tools, API)
    allowed = allowed_tool_names(body.get("tool_choice"), tools)
    return tools, mode, name, f.bool("parallel_tool_calls", True), allowed


def _finish_reason(kind: str) -> str:
    return {"length": "length", "tool_calls": "tool_calls"}.get(kind, "stop")


def _lp_entry(lp: TokenLogprob, k: int) -> dict:
    return {"token": lp.token, "logprob": lp.logprob, "bytes": list(lp.bytes_),
            "top_logprobs": [{"token": b.decode("utf-8", errors="replace"), "logprob": float(p),
                              "bytes": list(b)} for b, p in lp.top[:k]]}


def _usage(reader: TurnReader) -> dict:
    p, c = reader.usage()
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": reader.cached_tokens()}}


def _call_json(call, index: Optional[int] = None) -> dict:
    d = {"id": call.id, "type": "function",
         "function": {"name": call.name, "arguments": call.arguments_json()}}
    if index is not None:
        d["index"] = index
    return d


# --- /v1/chat/completions -----------------------------------------------------------------

@endpoint(API)
async def chat_completions(request: Request):
    st, body, f, model_name = await _read_generation_request(request)
    _check_n(f)
    messages = chat_messages(body.get("messages"))
    structured.refuse_unknown(body, CHAT_CONSTRAINT_FIELDS)
    tools, mode, tool_name, parallel, allowed = _tools(request, body, f)
    constraint, choice = _constraint(request, f)
    want_lp = f.bool("logprobs", False)
    top_k = f.int("top_logprobs", 0, lo=0, hi=20)
    params = sampling(f, max_tokens=_budget(f, st.settings.default_max_tokens,
                                            "max_completion_tokens", "max_tokens"),
                      logprobs=top_k if want_lp else None)
    stream = f.bool("stream", False)
    so = f.dict("stream_options") or {}
    include_usage = bool(so.get("include_usage", False))
    turn = Turn(params=params, messages=messages, tools=tools, tool_mode=mode,
                tool_name=tool_name, parallel_tool_calls=parallel, constraint=constraint,
                choice_logprobs=choice, dialect=st.dialect, allowed_tools=allowed,
                **thinking.openai_chat(body).turn_fields(st.reasoning))
    reader = TurnReader(turn, correct=st.settings.decision_correction)
    await compile_turn(request, turn)
    job = st.scheduler.submit(turn.job())
    cid, created = _id("chatcmpl"), int(time.time())
    if not stream:
        await run_to_end(request, job, reader.feed)
        message: Dict[str, Any] = {
            "role": "assistant",
            "content": reader.text if (reader.text or not reader.calls) else None}
        if reader.reasoning:
            message["reasoning_content"] = reader.reasoning
        if reader.calls:
            message["tool_calls"] = [_call_json(c) for c in reader.calls]
        out = {"id": cid, "object": "chat.completion", "created": created, "model": model_name,
               "system_fingerprint": "llamay",
               "choices": [{"index": 0, "message": message,
                            "logprobs": {"content": [_lp_entry(lp, top_k)
                                                     for lp in reader.logprobs],
                                         "refusal": None} if want_lp else None,
                            "finish_reason": _finish_reason(reader.finish_kind()),
                            **_dropped(reader)}],
               "usage": _usage(reader)}
        reader.add_choice_logprobs(out)
        return JSONResponse(out)
    events = await first_then_rest(job)

    def chunk(delta: dict, finish: Optional[str] = None, logprobs=None, **extra) -> bytes:
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model_name,
             "system_fingerprint": "llamay",
             "choices": [{"index": 0, "delta": delta, "logprobs": logprobs,
                          "finish_reason": finish, **(_dropped(reader) if finish else {})}]}
        if include_usage:
            c["usage"] = None
        c.update(extra)
        return sse(c)

    async def frames():
        yield chunk({"role": "assistant", "content": ""})
        n_calls = 0
        async for ev in events:
            for d in reader.feed(ev):
                if d.kind == "reasoning" and d.text:
                    yield chunk({"reasoning_content": d.text})
                elif d.kind == "text" and (d.text or d.logprobs):
                    lps = ({"content": [_lp_entry(lp, top_k) for lp in d.logprobs], "refusal": None}
                           if want_lp else None)
                    yield chunk({"content": d.text}, logprobs=lps)
                elif d.kind == "call":
                    yield chunk({"tool_calls": [_call_json(d.call, n_calls)]})
                    n_calls += 1
                elif d.kind == "finish":
                    extra = {}
                    reader.add_choice_logprobs(extra)
                    yield chunk({}, _finish_reason(reader.finish_kind()), **extra)
        if include_usage:
            yield sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                       "model": model_name, "system_fingerprint": "llamay", "choices": [],
                       "usage": _usage(reader)})
        yield sse("[DONE]")
    return stream_response(frames(), API, "text/event-stream", sse)


# --- /v1/completions ----------------------------------------------------------------------

def _prompt(body: dict):
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], (str, list)):
        p = p[0]
    if isinstance(p, str):
        return p
    if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0
                                         for t in p):
        return p
    raise InvalidRequest("'prompt' must be a string, one string in a list, or a list of token ids",
                         param="prompt")


@endpoint(API)
async def completions(request: Request):
    st, body, f, model_name = await _read_generation_request(request)
    _check_n(f)
    prompt = _prompt(body)
    if body.get("suffix"):
        raise InvalidRequest("'suffix' is not supported", param="suffix")
    echo = f.bool("echo", False)
    structured.refuse_unknown(body, COMPLETIONS_CONSTRAINT_FIELDS)
    constraint, choice = _constraint(request, f)
    k = f.int("logprobs", None, lo=0, hi=20)
    params = sampling(f, max_tokens=_budget(f, 16, "max_tokens"), logprobs=k)
    stream = f.bool("stream", False)
    include_usage = bool((f.dict("stream_options") or {}).get("include_usage", False))
    turn = Turn(params=params, prompt=prompt, constraint=constraint, choice_logprobs=choice)
    reader = TurnReader(turn, correct=st.settings.decision_correction)
    await compile_turn(request, turn)
    job = st.scheduler.submit(turn.job())
    cid, created = _id("cmpl"), int(time.time())
    prefix = prompt if (echo and isinstance(prompt, str)) else ""

    def lp_block(lps: List[TokenLogprob], offset: int):
        if k is None:
            return None
        offs, pos = [], offset
        for lp in lps:
            offs.append(pos)
            pos += len(lp.token)
        return {"tokens": [lp.token for lp in lps], "token_logprobs": [lp.logprob for lp in lps],
                "top_logprobs": [{b.decode("utf-8", errors="replace"): float(p)
                                  for b, p in lp.top[:k]}
                                 for lp in lps],
                "text_offset": offs}
    if not stream:
        await run_to_end(request, job, reader.feed)
        out = {"id": cid, "object": "text_completion", "created": created, "model": model_name,
               "choices": [{"index": 0, "text": prefix + reader.text,
                            "logprobs": lp_block(reader.logprobs, len(prefix)),
                            "finish_reason": _finish_reason(reader.finish_kind())}],
               "usage": _usage(reader)}
        reader.add_choice_logprobs(out)
        return JSONResponse(out)
    events = await first_then_rest(job)

    def chunk(text: str, finish=None, logprobs=None, **extra) -> bytes:
        c = {"id": cid, "object": "text_completion", "created": created, "model": model_name,
             "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}]}
        if include_usage:
            c["usage"] = None
        c.update(extra)
        return sse(c)

    async def frames():
        offset = 0
        if prefix:
            yield chunk(prefix)
            offset = len(prefix)
        async for ev in events:
            for d in reader.feed(ev):
                if d.kind == "text" and (d.text or d.logprobs):
                    yield chunk(d.text, logprobs=lp_block(d.logprobs, offset))
                    offset += len(d.text)
                elif d.kind == "finish":
                    extra = {}
                    reader.add_choice_logprobs(extra)
                    yield chunk("", _finish_reason(reader.finish_kind()), **extra)
        if include_usage:
            yield sse({"id": cid, "object": "text_completion", "created": created,
                       "model": model_name, "choices": [], "usage": _usage(reader)})
        yield sse("[DONE]")
    return stream_response(frames(), API, "text/event-stream", sse)


# --- /v1/responses ------------------------------------------------------------------------

def responses_messages(body: dict, f: Fields) -> List[dict]:
    """`instructions` + `input` (a string or a list of items) -> chat messages."""
    msgs: List[dict] = []
    instructions = f.str("instructions")
    if instructions:
        msgs.append({"role": "system", "content": instructions})
    inp = body.get("input")
    if isinstance(inp, str):
        msgs.append({"role": "user", "content": inp})
        return msgs
    if not isinstance(inp, list) or not inp:
        raise InvalidRequest("'input' must be a string or a non-empty list of items", param="input")
    for i, item in enumerate(inp):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise InvalidRequest(f"{where} must be an object", param="input")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role == "developer":
                role = "system"
            if role not in ("system", "user", "assistant"):
                raise InvalidRequest(f"{where}.role must be system, developer, user or assistant",
                                     param="input")
            if item.get("content") is None:
                raise InvalidRequest(f"missing required field '{where}.content'", param="input")
            msgs.append({"role": role,
                         "content": _text_of(item.get("content"), f"{where}.content")})
        elif kind == "function_call":
            if not isinstance(item.get("name"), str):
                raise InvalidRequest(f"{where}.name must be a string", param="input")
            args = item.get("arguments", "{}")
            call = {"id": item.get("call_id") or _id("call"), "type": "function",
                    "function": {"name": item["name"],
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}}
            if msgs and msgs[-1]["role"] == "assistant" and "tool_calls" in msgs[-1]:
                msgs[-1]["tool_calls"].append(call)
            else:
                msgs.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out = item.get("output", "")
            if not isinstance(out, str):
                out = _text_of(out, f"{where}.output") if isinstance(out, list) else json.dumps(out)
            msgs.append({"role": "tool", "content": out, "tool_call_id": item.get("call_id") or ""})
        else:
            raise InvalidRequest(f"{where}: input items of type {kind!r} are not supported",
                                 param="input")
    return msgs


@endpoint(API)
async def responses(request: Request):
    st, body, f, model_name = await _read_generation_request(request)
    messages = responses_messages(body, f)
    structured.refuse_unknown(body, RESPONSES_CONSTRAINT_FIELDS)
    tools, mode, tool_name, parallel, allowed = _tools(request, body, f)
    text_cfg = f.dict("text") or {}
    structured.refuse_unknown(text_cfg, structured.understood("responses", prefix="text."),
                              prefix="text.")
    constraint, choice = _constraint(request, f)
    params = sampling(f, max_tokens=_budget(f, st.settings.default_max_tokens,
                                            "max_output_tokens"), logprobs=None)
    stream = f.bool("stream", False)
    turn = Turn(params=params, messages=messages, tools=tools, tool_mode=mode,
                tool_name=tool_name, parallel_tool_calls=parallel, constraint=constraint,
                choice_logprobs=choice, dialect=st.dialect, allowed_tools=allowed,
                **thinking.openai_responses(body).turn_fields(st.reasoning))
    reader = TurnReader(turn, correct=st.settings.decision_correction)
    await compile_turn(request, turn)
    job = st.scheduler.submit(turn.job())
    rs_id = "rs_" + uuid.uuid4().hex[:24]
    rid, created = "resp_" + uuid.uuid4().hex[:24], int(time.time())
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    echo = {"instructions": f.str("instructions"), "parallel_tool_calls": parallel,
            "temperature": params.temperature, "top_p": params.top_p,
            "max_output_tokens": params.max_tokens,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "text": text_cfg or {"format": {"type": "text"}},
            "metadata": body.get("metadata") or {}}

    def message_item(text: str, status: str = "completed") -> dict:
        return {"type": "message", "id": msg_id, "status": status, "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [],
                             "logprobs": []}]}

    def reasoning_item(text: str, status: str = "completed") -> dict:
        return {"type": "reasoning", "id": rs_id, "status": status, "summary": [],
                "content": [{"type": "reasoning_text", "text": text}]}

    def call_item(call, status: str = "completed") -> dict:
        return {"type": "function_call", "id": "fc_" + call.id[len("call_"):],
                "call_id": call.id, "name": call.name, "arguments": call.arguments_json(),
                "status": status}

    def response_obj(status: str, output: list) -> dict:
        kind = reader.finish_kind() if reader.finish is not None else None
        p, c = reader.usage()
        r = {"id": rid, "object": "response", "created_at": created, "model": model_name,
             "status": status, "error": None,
             "incomplete_details": ({"reason": "max_output_tokens"} if status == "incomplete"
                                    else None),
             "output": output,
             "usage": {"input_tokens": p, "output_tokens": c, "total_tokens": p + c,
                       "input_tokens_details": {"cached_tokens": reader.cached_tokens()},
                       "output_tokens_details": {"reasoning_tokens": 0}} if kind else None,
             **echo}
        reader.add_choice_logprobs(r)
        r.update(_dropped(reader))
        return r

    def final_status() -> str:
        return "incomplete" if reader.finish_kind() == "length" else "completed"

    if not stream:
        await run_to_end(request, job, reader.feed)
        output = []
        if reader.reasoning:
            output.append(reasoning_item(reader.reasoning))
        if reader.text or not reader.calls:
            output.append(message_item(reader.text))
        output += [call_item(c) for c in reader.calls]
        return JSONResponse(response_obj(final_status(), output))
    events = await first_then_rest(job)

    seq = iter(range(1 << 30))

    def ev(kind: str, **data) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    async def frames():
        yield ev("response.created", response=response_obj("in_progress", []))
        yield ev("response.in_progress", response=response_obj("in_progress", []))
        output: list = []
        msg_index = -1
        text = ""

        def open_text():
            nonlocal msg_index
            output.append(message_item("", "in_progress"))
            msg_index = len(output) - 1
            return [ev("response.output_item.added", output_index=msg_index,
                       item=message_item("", "in_progress")),
                    ev("response.content_part.added", item_id=msg_id, output_index=msg_index,
                       content_index=0, part={"type": "output_text", "text": "", "annotations": [],
                                              "logprobs": []})]

        rs_index, thought = -1, ""
        async for e in events:
            for d in reader.feed(e):
                if d.kind == "reasoning" and d.text:
                    if rs_index < 0:
                        output.append(reasoning_item("", "in_progress"))
                        rs_index = len(output) - 1
                        yield ev("response.output_item.added", output_index=rs_index,
                                 item=reasoning_item("", "in_progress"))
                    thought += d.text
                    yield ev("response.reasoning_text.delta", item_id=rs_id,
                             output_index=rs_index, content_index=0, delta=d.text)
                    continue
                if rs_index >= 0 and output[rs_index]["status"] == "in_progress":
                    output[rs_index] = reasoning_item(thought.strip())
                    yield ev("response.reasoning_text.done", item_id=rs_id, output_index=rs_index,
                             content_index=0, text=thought.strip())
                    yield ev("response.output_item.done", output_index=rs_index,
                             item=output[rs_index])
                if d.kind == "text" and d.text:
                    if msg_index < 0:
                        if reader.calls and not d.text.strip():
                            continue      # whitespace between or after calls
                        for fr in open_text():
                            yield fr
                    text += d.text
                    yield ev("response.output_text.delta", item_id=msg_id, output_index=msg_index,
                             content_index=0, delta=d.text, logprobs=[])
                elif d.kind == "call":
                    item = call_item(d.call)
                    output.append(item)
                    idx = len(output) - 1
                    yield ev("response.output_item.added", output_index=idx,
                             item={**item, "arguments": "", "status": "in_progress"})
                    yield ev("response.function_call_arguments.delta", item_id=item["id"],
                             output_index=idx, delta=item["arguments"])
                    yield ev("response.function_call_arguments.done", item_id=item["id"],
                             output_index=idx, name=item["name"], arguments=item["arguments"])
                    yield ev("response.output_item.done", output_index=idx, item=item)
        if msg_index < 0 and not reader.calls:
            for fr in open_text():
                yield fr
        if msg_index >= 0:
            output[msg_index] = message_item(text.strip() if reader.calls else text)
            part = output[msg_index]["content"][0]
            yield ev("response.output_text.done", item_id=msg_id, output_index=msg_index,
                     content_index=0, text=part["text"], logprobs=[])
            yield ev("response.content_part.done", item_id=msg_id, output_index=msg_index,
                     content_index=0, part=part)
            yield ev("response.output_item.done", output_index=msg_index, item=output[msg_index])
        status = final_status()
        yield ev("response.completed" if status == "completed" else "response.incomplete",
                 response=response_obj(status, output))
    return stream_response(frames(), API, "text/event-stream",
                           lambda payload: sse({"type": "error", **payload["error"]},
                                               event="error"))


# --- /v1/models ---------------------------------------------------------------------------

def _model_card(st: ServerState) -> dict:
    return {"id": st.model_name, "object": "model", "created": int(st.started),
            "owned_by": "llamay"}


@endpoint(API)
async def list_models(request: Request):
    st = state_of(request)
    return JSONResponse({"object": "list", "data": [_model_card(st)]})


@endpoint(API)
async def get_model(request: Request):
    st = state_of(request)
    st.check_model(request.path_params["model"])
    return JSONResponse(_model_card(st))


def routes() -> list:
    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", get_model, methods=["GET"]),
    ]
