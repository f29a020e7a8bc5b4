"""The shape every tool-call dialect shares, so that a dialect is mostly data.

A dialect (one module of this package per model family) says three things:

- **how its calls look**, as one `cengine.TriggeredRegion` (`calls_region`): the trigger that
  opens the call region in free text (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`), what
  follows it (the calls: each offered tool's name and its parameter schema, in the family's
  own framing), and how it ends. Framing that the model's vocabulary holds as a special token
  is written with `self.tok(text)`, which is `cengine.Special(text)` there (the mask allows
  exactly that token) and plain text elsewhere. The three grammars the server runs (the whole
  output is calls; calls or a response-format document; free text until the trigger, then
  calls) are made from that one region here.
- **how to read calls back** (`parse_region`): given the text after the trigger, the complete
  calls at its start, how much text they took and whether the region closed. `RegionReader`
  turns that into the incremental `CallReader` the API layer streams with: text passes
  through until the trigger, a call is released once whole, an unfinished one can be
  discarded.
- **which chat templates are its own** (`detect`): a score from the GGUF's
  `tokenizer.chat_template` and the vocabulary's special tokens (0: not this family).

The prompt side is the chat template's own rendering of tools, calls and results; only a
template that knows no tools gets the generic block (`plain_messages`, Hermes' by default).
"""
from __future__ import annotations

import copy
import json
import uuid
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

import cengine

from .common import StreamEvent, ToolCall, ToolFormatError, ToolSpec

# documented: the same limits as compile_json_schema's defaults, per tool-call document
WHITESPACE_BUDGET = 64
MAX_DEPTH = 64


class Dialect:
    """One family's tool-call format. Subclasses set the class attributes and implement
    `calls_region`, `parse_region` and `detect`; instances are bound to a vocabulary's special
    tokens with `bind` (an unbound dialect writes all framing as text)."""

    name: str = ""                  # what /health and --tool-dialect call it
    family: str = ""                # the models it is for (docs, logs)
    # (pointer of the tool name, pointer of the arguments) inside one call's JSON object, for
    # llamay_choice_logprobs; None where the tool name is not inside a JSON object
    CALL_POINTERS: Optional[Tuple[str, str]] = ("/name", "/arguments")
    # where CALL_POINTERS is None: the text just before each tool name and the text (or the
    # tuple of texts, the likeliest first) just after it (`("[TOOL_CALLS]", "[ARGS]")`), so
    # llamay_choice_logprobs finds the name, and each call's arguments as the top-level JSON
    # object after it
    NAME_MARKS: Optional[Tuple[str, object]] = None
    # False where arguments are not one JSON object per call (one value per parameter): then
    # llamay_choice_logprobs reports the tool name alone
    JSON_ARGUMENTS: bool = True
    # False: the family writes one call per turn (the grammar never allows a second)
    parallel_calls: bool = True
    specials: FrozenSet[str] = frozenset()
    # the text the call region opens with in the output (trigger_text)
    TRIGGER: str = ""
    # detection as data: every text of DETECT_ALL in the template and none of DETECT_NONE
    # scores DETECT_SCORE (hermes 10, llama3 20, most families 30, 40 where a family must win
    # over one whose texts it also holds)
    DETECT_ALL: Tuple[str, ...] = ()
    DETECT_NONE: Tuple[str, ...] = ()
    DETECT_SCORE: int = 0

    # --- binding ------------------------------------------------------------------------------
    def bind(self, specials) -> "Dialect":
        """This dialect over a vocabulary whose special tokens have these texts."""
        d = copy.copy(self)
        d.specials = frozenset(specials or ())
        return d

    def for_template(self, template: Optional[str]) -> "Dialect":
        """The variant of this dialect that `template` writes: one family (one name, as /health
        reports it) may write its calls in more than one form across versions (Granite 3 and
        4); the default is the dialect itself."""
        return self

    def tok(self, text: str) -> cengine.Part:
        """Framing text: the model's special token where its vocabulary has one, else text."""
        return cengine.Special(text) if text in self.specials else cengine.Text(text)

    def framing(self, text: str) -> cengine.Part:
        """Text that may hold several special tokens (`<|channel|>final<|message|>`): each one
        the vocabulary has as a Special (longest first), the rest as Text."""
        found = sorted((s for s in self.specials if s in text), key=len, reverse=True)
        parts: List[cengine.Part] = []
        i = start = 0
        while i < len(text):
            s = next((s for s in found if text.startswith(s, i)), None)
            if s is None:
                i += 1
                continue
            if i > start:
                parts.append(cengine.Text(text[start:i]))
            parts.append(cengine.Special(s))
            i = start = i + len(s)
        if start < len(text):
            parts.append(cengine.Text(text[start:]))
        return parts[0] if len(parts) == 1 else cengine.Concat(*parts)

    # --- what a family defines ----------------------------------------------------------------
    @classmethod
    def detect(cls, template: str, specials: FrozenSet[str]) -> int:
        """How surely `template` (with these special tokens) is this family's: 0 not at all."""
        if cls.DETECT_ALL and all(t in template for t in cls.DETECT_ALL) \
                and not any(t in template for t in cls.DETECT_NONE):
            return cls.DETECT_SCORE
        return 0

    def calls_region(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.TriggeredRegion:
        raise NotImplementedError

    def parse_region(self, text: str, tools: Sequence[ToolSpec], final: bool
                     ) -> Tuple[List[Optional[ToolCall]], int, bool]:
        """Read the text after the trigger: (the complete calls at its start, each a ToolCall
        or None where one does not decode to an offered tool; characters they took; whether
        the region closed there). `final`: no more text will come."""
        raise NotImplementedError

    @property
    def trigger_text(self) -> str:
        """The text the call region opens with in the output."""
        return self.TRIGGER

    @property
    def trigger_spellings(self) -> Tuple[str, ...]:
        """Every text that opens a call in the output, for the reader (the first that occurs
        wins, the longest at the same place): the trigger, and where a family opens the same
        call in more than one way (harmony's recipient in the role or in the channel header),
        the longer openings that the lazy trigger only ends."""
        return (self.trigger_text,)

    def forced_calls(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.Part:
        """The calls as the whole output (tool_choice required / named, and beside an answer
        document): the call region from its trigger, unless the family opens a call in more
        ways than the one trigger the lazy form waits for."""
        return self.calls_region(tools, parallel=parallel)

    def call_text(self, name: Any, arguments: Any) -> str:
        """One call as this family's template writes it (the prompt for templates that know
        no tools, and tests)."""
        raise NotImplementedError

    def new_call_id(self, name: str, index: int) -> str:
        """The id the server gives the `index`-th call (0-based) of an output. The client
        sends it back with the call and its result, and some templates write it or check its
        form (Mistral's nine alphanumerics, Kimi's functions.NAME:IDX): a family whose
        template does overrides this."""
        return "call_" + uuid.uuid4().hex[:24]

    # --- the generic tool block, for templates that do not handle tools ------------------------
    def tool_instructions(self) -> str:
        return ("To call a tool, write the call exactly in this form, with the tool's name and "
                "its arguments as its JSON Schema asks:\n"
                + self.call_text("tool_name", {"argument": "value"}))

    def tools_system_block(self, tools: List[dict]) -> str:
        lines = []
        for t in tools:
            fn = t.get("function", t) if isinstance(t, dict) else t
            lines.append(json.dumps(fn, ensure_ascii=False))
        return ("You can call tools. Their signatures, one JSON object per line, are between "
                "<tools> and </tools>:\n<tools>\n" + "\n".join(lines) + "\n</tools>\n\n"
                + self.tool_instructions())

    def plain_messages(self, messages: List[dict], tools: Optional[List[dict]]) -> List[dict]:
        """Tool calls, tool results and the tool list as plain text turns, for a template that
        knows no tools (messages come with text content and arguments as objects:
        server.runtime.chat_template.plain_messages)."""
        out: List[dict] = []
        for m in messages:
            role = m.get("role")
            content = m.get("content") or ""
            if role == "assistant" and m.get("tool_calls"):
                blocks = []
                for call in m["tool_calls"]:
                    fn = call.get("function", {})
                    blocks.append(self.call_text(fn.get("name"), fn.get("arguments", {})))
                content = (content + "\n" if content else "") + "\n".join(blocks)
                out.append({"role": "assistant", "content": content})
            elif role == "tool":
                out.append({"role": "user",
                            "content": f"<tool_response>\n{content}\n</tool_response>"})
            else:
                out.append({"role": role, "content": content})
        if tools:
            block = self.tools_system_block(tools)
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
            else:
                out.insert(0, {"role": "system", "content": block})
        return out

    # --- the three grammars -------------------------------------------------------------------
    @property
    def CALL_OPEN(self) -> str:
        return self.trigger_text

    def _parallel(self, parallel: bool) -> bool:
        return parallel and self.parallel_calls

    def call_grammar(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                     ) -> cengine.Grammar:
        """The whole output: one or more (one when not parallel) complete calls, from the
        first byte."""
        if not tools:
            raise ToolFormatError("tool_choice requires a tool call but no tools were given",
                                  param="tool_choice")
        return cengine.compile_structural(
            self.forced_calls(tools, parallel=self._parallel(parallel)),
            whitespace_budget=WHITESPACE_BUDGET, max_depth=MAX_DEPTH)

    def answer_or_call_grammar(self, answer: cengine.Part, tools: Sequence[ToolSpec], *,
                               parallel: bool = True, compact: bool = False
                               ) -> cengine.Grammar:
        """tool_choice auto under an output constraint: from the first byte, either one
        document of `answer` (and nothing after it) or the calls. compact: no JSON whitespace
        anywhere (the constraint asked for it), call arguments included."""
        if not tools:
            raise ToolFormatError("tool_choice auto with a constraint needs at least one tool",
                                  param="tools")
        region = self.forced_calls(tools, parallel=self._parallel(parallel))
        return cengine.compile_structural(cengine.OneOf(answer, region),
                                          whitespace_budget=0 if compact else WHITESPACE_BUDGET,
                                          max_depth=MAX_DEPTH)

    def lazy_call_grammar(self, tools: Sequence[ToolSpec], *, parallel: bool = True
                          ) -> cengine.TriggeredGrammar:
        """(trigger, grammar of what follows the trigger) for tool_choice auto."""
        return cengine.compile_triggered(
            self.calls_region(tools, parallel=self._parallel(parallel)),
            whitespace_budget=WHITESPACE_BUDGET, max_depth=MAX_DEPTH)

    def call_reader(self, tools: Sequence[ToolSpec]) -> "RegionReader":
        return RegionReader(self, tools)

    def __repr__(self) -> str:
        return f"<tool dialect {self.name}>"


class RegionReader:
    """Splits generated text into text and whole calls, incrementally, for any dialect: text
    passes through as soon as it cannot be the start of the trigger; after the trigger the
    text is held and handed to the dialect's `parse_region`, and each call is released once
    whole. What does not decode to an offered tool's call comes back as text."""

    def __init__(self, dialect: Dialect, tools: Sequence[ToolSpec]):
        self.dialect = dialect
        self.tools = list(tools)
        self.triggers = dialect.trigger_spellings
        self.trigger = self.triggers[0]     # the opening of the open region
        self.buf = ""
        self.in_region = False
        self.released = False       # a call of the open region is out already
        self.n_calls = 0            # calls released so far (the next one's index)

    def _held_text(self) -> str:
        """The open region's held text as the output wrote it."""
        return ("" if self.released else self.trigger) + self.buf

    def _region(self, final: bool) -> List[StreamEvent]:
        """Read what the open region holds; leaves it open while it is waiting for more."""
        calls, used, closed = self.dialect.parse_region(self.buf, self.tools, final)
        if any(c is None for c in calls):
            # a call that does not decode is never reported as a call: its region is text
            out: List[StreamEvent] = [("text", self._held_text()[:len(self._held_text())
                                                                - len(self.buf) + used])]
            self.buf, self.in_region = self.buf[used:], False
            return out
        for c in calls:
            assert c is not None            # a None made the region text above
            c.id = self.dialect.new_call_id(c.name, self.n_calls)
            self.n_calls += 1
        out = [("call", c) for c in calls]
        if closed and not calls and not self.released:
            # a region that closed without a single call is no call: its text stays text
            held = self._held_text()
            out.append(("text", held[:len(held) - len(self.buf) + used]))
        self.buf = self.buf[used:]
        self.released = self.released or bool(calls)
        if closed:
            self.in_region = False
        elif final and not calls:
            # (after calls, what is left of the region is read again: more calls, its end)
            if self.buf or not self.released:
                out.append(("text", self._held_text()))
            self.buf, self.in_region = "", False
        return out

    def feed(self, text: str) -> List[StreamEvent]:
        self.buf += text
        out: List[StreamEvent] = []
        while True:
            if self.in_region:
                got = self._region(False)
                out += got
                if self.in_region and not (self.buf and any(k == "call" for k, _ in got)):
                    return out      # waiting for more (after calls, the rest may hold more)
                continue
            found = [(i, -len(t), t) for t in self.triggers
                     for i in (self.buf.find(t),) if i >= 0]
            if found:
                start, _, self.trigger = min(found)
                if start:
                    out.append(("text", self.buf[:start]))
                self.buf = self.buf[start + len(self.trigger):]
                self.in_region, self.released = True, False
                continue
            keep = max(partial_suffix(self.buf, t) for t in self.triggers)
            if len(self.buf) > keep:
                out.append(("text", self.buf[:len(self.buf) - keep]))
                self.buf = self.buf[len(self.buf) - keep:]
            return out

    def finish(self) -> List[StreamEvent]:
        """Whatever is left: an unfinished region (a cancel, or a grammar-free read) is text."""
        out: List[StreamEvent] = []
        while self.in_region:
            out += self._region(True)
            if self.buf:
                out += self.feed("")
        if self.buf:
            out.append(("text", self.buf))
        self.buf, self.in_region = "", False
        return out

    def discard(self) -> bool:
        """Drop what is held back (an unfinished call, or a possible start of one); True if
        anything was held. Calls already released are not touched."""
        held = self.in_region or bool(self.buf)
        self.buf, self.in_region = "", False
        return held


def partial_suffix(s: str, tag: str) -> int:
    """Length of the longest suffix of s that is a proper prefix of tag."""
    for n in range(min(len(s), len(tag) - 1), 0, -1):
        if s.endswith(tag[:n]):
            return n
    return 0


# --- helpers the dialects share ---------------------------------------------------------------

def leading_json(text: str, start: int = 0) -> Optional[Tuple[Any, int]]:
    """(the JSON value that begins at text[start] after whitespace, the index after it), or
    None while it is incomplete or not JSON."""
    i = start
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    try:
        value, end = json.JSONDecoder().raw_decode(text, i)
    except ValueError:
        return None
    if end == len(text) and text[i:i + 1] not in ("{", "[", '"'):
        return None     # a number or literal may still go on
    return value, end


def offered_call(name: Any, arguments: Any, tools: Sequence[ToolSpec]) -> Optional[ToolCall]:
    """A ToolCall when `name` is an offered tool's and the arguments an object."""
    if not isinstance(name, str) or name not in {t.name for t in tools}:
        return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(name, arguments)
