"""What the three APIs share: turning a parsed request into a job on the model's worker
thread, and the job's raw events into text deltas, whole tool calls and a finish.

Routes parse their own request shape into a `Turn`, submit `turn.job()` to the scheduler and
feed the events through `TurnReader`, which every API then renders in its own shape. The
turn's tool dialect (server.tools) writes the tools into the prompt, supplies the call
grammar and reads the calls back; the runner knows no dialect itself.
"""
from __future__ import annotations

import codecs
import math
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

from ..runtime.choice import sequence_logprobs
from ..runtime.types import FinishEvent, GenerationModel, SamplingParams, TokenEvent
from ..tools import DEFAULT_DIALECT, ToolCall, ToolDialect, ToolSpec
from .errors import InvalidRequest
from .structured import Constraint


@dataclass
class ChoiceResult:
    """The posterior over a choice's alternatives (llamay_choice_logprobs)."""
    alternatives: List[str]
    logprobs: List[float]        # log P(alternative's tokens | prompt) under the model
    posterior: List[float]       # softmax of logprobs: normalised over the alternatives
    chosen: Optional[str]        # the alternative the output equals, if any

    def as_dict(self) -> dict:
        return {"alternatives": self.alternatives, "logprobs": self.logprobs,
                "posterior": self.posterior, "chosen": self.chosen}


@dataclass
class Turn:
    """One generation request, independent of the API it came through."""
    params: SamplingParams
    messages: Optional[List[dict]] = None        # chat: OpenAI-shaped messages
    prompt: Optional[Union[str, List[int]]] = None  # completion: raw prompt (text or token ids)
    tools: List[ToolSpec] = field(default_factory=list)
    tool_mode: str = "none"                      # none | auto | required | named
    tool_name: Optional[str] = None
    parallel_tool_calls: bool = True
    constraint: Constraint = field(default_factory=Constraint)
    choice_logprobs: bool = False
    dialect: ToolDialect = DEFAULT_DIALECT

    def __post_init__(self):
        # auto under a constraint is one grammar: a document of the constraint or the calls;
        # a constraint no composition part expresses cannot stand beside the calls
        c = self.constraint
        if c.grammar is not None and self.tool_mode == "auto" and c.part is None:
            raise InvalidRequest(f"'{c.param}' cannot be combined with tool_choice auto; send "
                                 f"tool_choice none, required or a named tool", param=c.param)

    def offered_tools(self) -> List[ToolSpec]:
        if self.tool_mode == "named":
            return [t for t in self.tools if t.name == self.tool_name]
        return list(self.tools) if self.tool_mode != "none" else []

    def calls_expected(self) -> bool:
        return self.tool_mode != "none"

    def job(self):
        """Job body for the scheduler: renders the prompt on the worker thread (the model's
        tokenizer is not thread-safe), generates, then scores the choice if asked."""
        turn = self

        def run(model: GenerationModel, cancel: threading.Event):
            grammar, lazy = turn.constraint.grammar, None
            tools = turn.offered_tools()
            parallel = turn.parallel_tool_calls
            if turn.tool_mode in ("required", "named"):
                # the output is the call: the constraint is for a later answer in text
                grammar = turn.dialect.call_grammar(tools, parallel=parallel)
            elif turn.tool_mode == "auto" and grammar is not None:
                grammar = turn.dialect.answer_or_call_grammar(turn.constraint.part, tools,
                                                              parallel=parallel)
            elif turn.tool_mode == "auto":
                lazy = turn.dialect.lazy_call_grammar(tools, parallel=parallel)
            if turn.messages is not None:
                prompt = model.render_chat(
                    turn.messages, tools=[t.openai_shape() for t in tools] or None,
                    tool_format=turn.dialect)
            else:
                prompt = turn.prompt
            text = bytearray()
            for ev in model.generate(prompt, grammar=grammar, params=turn.params,
                                     lazy_grammar=lazy, cancel=cancel):
                if isinstance(ev, TokenEvent):
                    text += ev.text
                elif turn.choice_logprobs and ev.reason != "cancelled":
                    yield score_choice(model, prompt, turn.constraint.alternatives, bytes(text))
                yield ev
        return run


def score_choice(model: GenerationModel, prompt: Union[str, List[int]],
                 alternatives: Sequence[str], output: bytes) -> ChoiceResult:
    lps = sequence_logprobs(model, prompt, list(alternatives))
    top = max(lps)
    if top == -math.inf:
        post = [1.0 / len(lps)] * len(lps)
    else:
        ws = [math.exp(lp - top) for lp in lps]
        z = sum(ws)
        post = [w / z for w in ws]
    out = output.decode("utf-8", errors="replace").strip()
    chosen = out if out in alternatives else None
    return ChoiceResult(list(alternatives), lps, post, chosen)


@dataclass
class TokenLogprob:
    token: str
    bytes_: bytes
    logprob: float
    top: List[Tuple[bytes, float]]


@dataclass
class Delta:
    """One piece of output, in order: kind is text | call | finish | choice."""
    kind: str
    text: str = ""
    call: Optional[ToolCall] = None
    finish: Optional[FinishEvent] = None
    choice: Optional[ChoiceResult] = None
    logprobs: List[TokenLogprob] = field(default_factory=list)


class TurnReader:
    """Raw events -> Deltas: UTF-8 assembled across tokens, tool calls held back until whole.

    When the budget ends inside a call that follows a complete one, the closer's bytes are not
    read: the unfinished call (held back, so never streamed) is dropped, the turn keeps its
    complete calls and `dropped_call` says so. A call cut with nothing complete before it is
    finished by the closer as before."""

    def __init__(self, turn: Turn):
        self.turn = turn
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.calls_stream = (turn.dialect.call_reader(turn.offered_tools())
                             if turn.calls_expected() else None)
        self.text_parts: List[str] = []
        self.calls: List[ToolCall] = []
        self.logprobs: List[TokenLogprob] = []
        self.finish: Optional[FinishEvent] = None
        self.choice: Optional[ChoiceResult] = None
        self.dropped_call = False
        self.created = int(time.time())

    def _split(self, s: str) -> List[Delta]:
        if self.calls_stream is None:
            return [Delta("text", text=s)] if s else []
        out = []
        for kind, v in self.calls_stream.feed(s) if s else []:
            out.append(Delta("text", text=v) if kind == "text" else Delta("call", call=v))
        return out

    def feed(self, ev: Union[TokenEvent, FinishEvent, ChoiceResult]) -> List[Delta]:
        out: List[Delta] = []
        if isinstance(ev, ChoiceResult):
            self.choice = ev
            return [Delta("choice", choice=ev)]
        if isinstance(ev, FinishEvent):
            tail = self.decoder.decode(b"", final=True)
            out += self._split(tail)
            if self.calls_stream is not None:
                for kind, v in self.calls_stream.finish():
                    out.append(Delta("text", text=v))
            self.finish = ev
            out.append(Delta("finish", finish=ev))
        elif ev.closer and self.calls and self.calls_stream is not None:
            # whatever the closer would finish after a complete call is a further call (held
            # back, or not begun past a separator): drop it rather than close it
            self.calls_stream.discard()
            self.decoder.reset()
            self.dropped_call = True
        else:
            lp = None
            if self.turn.params.logprobs is not None:
                lp = TokenLogprob(ev.text.decode("utf-8", errors="replace"), ev.text,
                                  0.0 if ev.logprob is None else float(ev.logprob),
                                  list(ev.top_logprobs or []))
                self.logprobs.append(lp)
            out += self._split(self.decoder.decode(ev.text))
            if lp is not None:
                for d in out:
                    if d.kind == "text":
                        d.logprobs.append(lp)
                        break
                else:
                    out.append(Delta("text", text="", logprobs=[lp]))
        for d in out:
            if d.kind == "text":
                self.text_parts.append(d.text)
            elif d.kind == "call":
                self.calls.append(d.call)
        return out

    @property
    def text(self) -> str:
        s = "".join(self.text_parts)
        return s.strip() if self.calls else s

    def finish_kind(self) -> str:
        """stop | length | tool_calls | stop_sequence | cancelled (API-neutral)."""
        reason = self.finish.reason if self.finish is not None else "cancelled"
        if reason == "length" and not self.dropped_call:
            return "length"
        if self.calls:
            return "tool_calls"
        return reason

    def usage(self) -> Tuple[int, int]:
        f = self.finish
        return (f.prompt_tokens, f.completion_tokens) if f is not None else (0, 0)
