"""What the three APIs share: turning a parsed request into a job on the model's worker
thread, and the job's raw events into text deltas, whole tool calls and a finish.

Routes parse their own request shape into a `Turn`, submit `turn.job()` to the scheduler and
feed the events through `TurnReader`, which every API then renders in its own shape. The
turn's tool dialect (server.tools) writes the tools into the prompt, supplies the call
grammar and reads the calls back; the runner knows no dialect itself.
"""
from __future__ import annotations

import codecs
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import cengine

from ..runtime.reasoning import ReasoningFormat, opened_thought, template_switches
from ..runtime.types import (NAME_MARKED, ChoiceScope, DecisionsEvent, FinishEvent,
                             GenerationModel, ReasoningPlan, SamplingParams, TokenEvent)
from ..tools import DEFAULT_DIALECT, ToolCall, ToolDialect, ToolSpec
from .errors import InvalidRequest
from .structured import Constraint, report_ignored


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
    # OpenAI's allowed_tools: the tools the model may call among those offered (None: all)
    allowed_tools: Optional[List[str]] = None
    constraint: Constraint = field(default_factory=Constraint)
    choice_logprobs: bool = False
    dialect: ToolDialect = DEFAULT_DIALECT
    # the model's reasoning format (None: it does not think), and what the request asked:
    # thinking on or off, a thought budget in tokens (None: only max_tokens bounds it), and the
    # named effort for templates that take one (gpt-oss)
    reasoning: Optional[ReasoningFormat] = None
    thinking: bool = True
    thought_budget: Optional[int] = None
    effort: Optional[str] = None
    # (grammar, lazy grammar) of the output, set by compile_grammars
    _grammars: Optional[tuple] = field(default=None, init=False, repr=False)

    def __post_init__(self):
        # auto under a constraint is one grammar: a document of the constraint or the calls;
        # a constraint no composition part expresses cannot stand beside the calls
        c = self.constraint
        if c.present and self.tool_mode == "auto" and c.part is None:
            raise InvalidRequest(f"'{c.param}' cannot be combined with tool_choice auto; send "
                                 f"tool_choice none, required or a named tool", param=c.param)
        if self.choice_logprobs and self.tool_mode != "none" \
                and self.dialect.CALL_POINTERS is None \
                and getattr(self.dialect, "NAME_MARKS", None) is None:
            raise InvalidRequest(f"llamay_choice_logprobs is not available with tools in the "
                                 f"{self.dialect.name} tool-call format: its tool name is "
                                 f"written without fixed text around it",
                                 param="llamay_choice_logprobs")
        if self.choice_logprobs and self.choice_scope() is None:
            raise InvalidRequest("llamay_choice_logprobs needs a choice among alternatives: JSON "
                                 "output (a schema or JSON mode), tools, a choice list or "
                                 "llamay_lexicon", param="llamay_choice_logprobs")

    def answer_prefix(self) -> str:
        """What opens this model's text answer (harmony's final channel), or ""."""
        return self.reasoning.answer_prefix if self.reasoning is not None else ""

    def needs_compile(self) -> bool:
        """Whether the output runs under any grammar (a constraint, or tools)."""
        return self.tool_mode != "none" or self.constraint.present

    def template_switches(self, model: GenerationModel) -> dict:
        """The chat-template variables that turn this model's thinking on or off."""
        if self.reasoning is None:
            return {}
        return template_switches(getattr(model, "chat_template", None), self.thinking,
                                 self.effort)

    def reasoning_plan(self, prompt: str) -> Optional[ReasoningPlan]:
        """How the decode loop treats the thought of this turn (None: no thought)."""
        fmt = self.reasoning
        if fmt is None:
            return None
        opened = opened_thought(prompt, fmt)
        if opened is False:
            return None             # the template closed the thought itself: thinking is off
        budget = self.thought_budget
        if not self.thinking:
            if not opened and fmt.can_disable:
                return None
            budget = 0              # the prompt opened a thought: it is closed at once
        return ReasoningPlan(fmt.start, fmt.end, fmt.separator, opened=bool(opened),
                             budget=budget)

    def offered_tools(self) -> List[ToolSpec]:
        if self.tool_mode == "named":
            return [t for t in self.tools if t.name == self.tool_name]
        if self.tool_mode == "none":
            return []
        if self.allowed_tools is not None:
            return [t for t in self.tools if t.name in self.allowed_tools]
        return list(self.tools)

    def calls_expected(self) -> bool:
        return self.tool_mode != "none"

    def choice_scope(self) -> Optional[ChoiceScope]:
        """Where the decision points of this turn's output are (None: it has none)."""
        if self.tool_mode != "none":
            marks = getattr(self.dialect, "NAME_MARKS", None)
            name, arguments = self.dialect.CALL_POINTERS or (NAME_MARKED, "")
            answer: Dict[str, Any]
            answer = ({"name_marks": marks,
                       "arguments_json": getattr(self.dialect, "JSON_ARGUMENTS", True)}
                      if self.dialect.CALL_POINTERS is None else {})
            if self.tool_mode == "auto" and self.constraint.kind in ("schema", "json", "object"):
                # the output may be the response format's document instead of calls
                assert isinstance(self.constraint.part, cengine.JsonSchema)   # JSON kinds' part
                answer.update(schema=self.constraint.part.schema,
                              call_open=self.dialect.CALL_OPEN)
            return ChoiceScope("calls", name_pointer=name, arguments_pointer=arguments,
                               tools=[(t.name, t.parameters) for t in self.offered_tools()],
                               **answer)
        if self.constraint.kind in ("schema", "json", "object"):
            part = self.constraint.part
            return ChoiceScope("json", schema=getattr(part, "schema", None),
                               answer_prefix=self.answer_prefix())
        if self.constraint.kind in ("lexicon", "choice"):
            return ChoiceScope("words", words=list(self.constraint.alternatives or ()))
        return None

    def compile_grammars(self) -> None:
        """Compile the grammars the output runs under, each once and in the shape it is used:
        the constraint alone; or with tools the call grammar, the answer-or-call grammar (the
        constraint inside the union) or the lazy call grammar. Routes run this on the compile
        pool (compiling.compile_turn: its time and engine budget) after the whole request is
        checked and before the job is submitted, so the model's worker never compiles."""
        if self._grammars is not None:
            return
        c = self.constraint
        grammar, lazy = None, None
        tools = self.offered_tools()
        parallel = self.parallel_tool_calls
        answer = c.part
        prefix = self.answer_prefix() if c.present else ""
        if prefix and self.tool_mode not in ("required", "named"):
            # the family opens a text answer with its own framing (harmony's final channel)
            if answer is None:
                raise InvalidRequest(f"'{c.param}' cannot follow this model's answer framing "
                                     f"({prefix}); send a JSON Schema, regex or GBNF "
                                     f"constraint", param=c.param)
            answer = cengine.Concat(self.dialect.framing(prefix), answer)
        if self.tool_mode in ("required", "named"):
            # the output is the call; the constraint is for a later answer in text, compiled
            # alone so that what it asks and cannot be enforced is refused all the same
            c.compile()
            grammar = self.dialect.call_grammar(tools, parallel=parallel)
        elif self.tool_mode == "auto" and c.present:
            assert answer is not None     # __post_init__ refuses auto beside a part-less one
            grammar = self.dialect.answer_or_call_grammar(answer, tools, parallel=parallel,
                                                          compact=c.compact)
        elif self.tool_mode == "auto":
            lazy = self.dialect.lazy_call_grammar(tools, parallel=parallel)
        elif prefix:
            assert answer is not None     # a part-less constraint was refused above
            grammar = cengine.compile_structural(answer,
                                                 whitespace_budget=0 if c.compact else 64)
            report_ignored(grammar, c.param)
        else:
            grammar = c.compile()
        if self.tool_mode != "none":
            report_ignored(lazy[1] if lazy is not None else grammar, "tools")
        self._grammars = (grammar, lazy)

    def job(self):
        """Job body for the scheduler: renders the prompt on a worker thread (off the event
        loop) and generates; with choice_logprobs the model reports the decision points (a
        DecisionsEvent before the finish)."""
        turn = self

        def run(model: GenerationModel, cancel: threading.Event):
            turn.compile_grammars()     # done already when the route compiled it off the loop
            grammar, lazy = turn._grammars
            tools = turn.offered_tools()
            extra = {"choice": turn.choice_scope()} if turn.choice_logprobs else {}
            if turn.messages is not None:
                switches = turn.template_switches(model)
                prompt = model.render_chat(
                    turn.messages, tools=[t.openai_shape() for t in tools] or None,
                    tool_format=turn.dialect, **({"template_vars": switches} if switches else {}))
                plan = turn.reasoning_plan(prompt)
                if plan is not None:
                    extra["reasoning"] = plan
            else:
                prompt = turn.prompt
            yield from model.generate(prompt, grammar=grammar, params=turn.params,
                                      lazy_grammar=lazy, cancel=cancel, **extra)
        return run


@dataclass
class TokenLogprob:
    token: str
    bytes_: bytes
    logprob: float
    top: List[Tuple[bytes, float]]


@dataclass
class Delta:
    """One piece of output, in order: kind is reasoning (a thought's text) | text | call |
    finish."""
    kind: str
    text: str = ""
    call: Optional[ToolCall] = None
    finish: Optional[FinishEvent] = None
    logprobs: List[TokenLogprob] = field(default_factory=list)


class TurnReader:
    """Raw events -> Deltas: UTF-8 assembled across tokens, tool calls held back until whole.

    When the budget ends inside a call that follows a complete one, the closer's bytes are not
    read: the unfinished call (held back, so never streamed) is dropped, the turn keeps its
    complete calls and `dropped_call` says so. A call cut with nothing complete before it is
    finished by the closer as before."""

    def __init__(self, turn: Turn, correct: Optional[Callable[[dict], dict]] = None):
        self.turn = turn
        self.correct = correct      # the server's calibration of decision posteriors, if any
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.thought_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.reasoning_parts: List[str] = []
        # the family's answer framing, dropped from the answer's start (harmony's final
        # channel); None once decided
        self.prefix_left: Optional[str] = turn.answer_prefix() or None
        self.prefix_held = ""
        self.calls_stream = (turn.dialect.call_reader(turn.offered_tools())
                             if turn.calls_expected() else None)
        self.text_parts: List[str] = []
        self.calls: List[ToolCall] = []
        self.logprobs: List[TokenLogprob] = []
        self.finish: Optional[FinishEvent] = None
        self.decisions: Optional[DecisionsEvent] = None
        self.dropped_call = False
        self.created = int(time.time())

    def _strip_prefix(self, s: str) -> str:
        """The answer text with the family's answer framing removed from its start."""
        if self.prefix_left is None:
            return s
        self.prefix_held += s
        p = self.prefix_left
        if self.prefix_held.startswith(p):
            s, self.prefix_left = self.prefix_held[len(p):], None
        elif p.startswith(self.prefix_held):
            return ""                   # may still be the framing: wait
        else:
            s, self.prefix_left = self.prefix_held, None
        self.prefix_held = ""
        return s

    def _split(self, s: str) -> List[Delta]:
        s = self._strip_prefix(s)
        if self.calls_stream is None:
            return [Delta("text", text=s)] if s else []
        out = []
        for kind, v in self.calls_stream.feed(s) if s else []:
            out.append(Delta("text", text=v) if kind == "text" else Delta("call", call=v))
        return out

    def feed(self, ev: Union[TokenEvent, FinishEvent, DecisionsEvent]) -> List[Delta]:
        out: List[Delta] = []
        if isinstance(ev, DecisionsEvent):
            self.decisions = ev
            return []
        if isinstance(ev, FinishEvent):
            rest = self.thought_decoder.decode(b"", final=True)
            if rest:
                self.reasoning_parts.append(rest)
                out.append(Delta("reasoning", text=rest))
            tail = self.decoder.decode(b"", final=True)
            out += self._split(tail)
            if self.prefix_left is not None and self.prefix_held:
                # the answer ended inside what could have been the framing: it was text
                held, self.prefix_left, self.prefix_held = self.prefix_held, None, ""
                out += self._split(held)
            if self.calls_stream is not None:
                for kind, v in self.calls_stream.finish():
                    out.append(Delta("text", text=v))
            self.finish = ev
            out.append(Delta("finish", finish=ev))
        elif ev.part == "marker":
            pass        # the thought's markers belong to neither the thought nor the answer
        elif ev.part == "thought":
            s = self.thought_decoder.decode(ev.text)
            if s:
                self.reasoning_parts.append(s)
                out.append(Delta("reasoning", text=s))
            return out
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
                assert d.call is not None     # a call Delta carries its call
                self.calls.append(d.call)
        return out

    @property
    def reasoning(self) -> Optional[str]:
        """The thought's text (None: the model wrote none)."""
        s = "".join(self.reasoning_parts)
        return s.strip() or None

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

    def add_choice_logprobs(self, obj: dict) -> dict:
        """Put the decision list (llamay_choice_logprobs) into a response object or final
        stream event, when the turn asked for it; the same list in every API shape."""
        if self.turn.choice_logprobs and (self.decisions is not None or self.finish is not None):
            decisions = self.decisions.decisions if self.decisions is not None else []
            if self.dropped_call:
                # the call the budget cut was dropped: so are the decisions made inside it
                kept = len(self.calls)
                decisions = [d for d in decisions if d.call is None or d.call < kept]
            listed = [d.as_dict() for d in decisions]
            if self.correct is not None:
                listed = [self.correct(d) for d in listed]
            obj["llamay_choice_logprobs"] = listed
        return obj

    def usage(self) -> Tuple[int, int]:
        f = self.finish
        return (f.prompt_tokens, f.completion_tokens) if f is not None else (0, 0)

    def cached_tokens(self) -> int:
        """Prompt tokens read from the KV cache instead of evaluated (within usage()'s)."""
        return self.finish.cached_tokens if self.finish is not None else 0
