"""What the layers above the runtime see of a generation: its parameters, its events and the
model's interface.

Nothing here loads llama.cpp, so the API layer (and test doubles of the model) import these
names at module top; `server.runtime.model.Model` is the implementation over llama.cpp.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple,
                    Union)

if TYPE_CHECKING:
    import cengine


@dataclass
class SamplingParams:
    max_tokens: Optional[int] = 256        # None = until EOS/context end
    temperature: float = 0.8               # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0                         # 0 = off
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    seed: Optional[int] = None
    stop: List[str] = field(default_factory=list)
    # None: none; k >= 0: the chosen token's logprob and the top-k alternatives
    logprobs: Optional[int] = None


@dataclass
class TokenEvent:
    token_id: int            # -1 for closer bytes / forced bytes not from a single token
    text: bytes              # the bytes this step added (may be a partial UTF-8 sequence)
    logprob: Optional[float]
    top_logprobs: Optional[List[Tuple[bytes, float]]]
    forced: bool             # appended without sampling (fast-forward) or by the closer
    closer: bool = False     # these are the closer's bytes (the budget or context ran out)
    # which part of the output: "answer", "thought" (a reasoning model's thought), or
    # "marker" (the thought's start / end markers and what separates it from the answer)
    part: str = "answer"


@dataclass
class ReasoningPlan:
    """How one generation of a reasoning model treats its thought (server/runtime/reasoning.py).
    Markers are text; the decode loop spells them with the model's special tokens."""
    start: str
    end: str
    separator: str = ""
    opened: bool = False             # the prompt ends inside the thought
    budget: Optional[int] = None     # thought tokens at most (None: only max_tokens bounds it)


@dataclass
class FinishEvent:
    reason: str              # "stop", "length", "stop_sequence", "cancelled"
    stop_sequence: Optional[str]
    closer: bytes            # bytes the closer appended (b"" if none)
    prompt_tokens: int
    completion_tokens: int   # sampled + fast-forwarded tokens; closer bytes are not tokens
    # beside the interface: what fast-forward saved
    forward_passes: int = 0          # model evaluations during this generation (prompt included)
    fast_forward_tokens: int = 0     # tokens appended without sampling (no pass of their own)
    # prompt tokens whose KV came from the cache (the prefix shared with what it held), not
    # evaluated again: the APIs report them (cached_tokens, cache_read_input_tokens)
    cached_tokens: int = 0


@dataclass
class ChoiceScope:
    """Where a generation looks for decisions (llamay_choice_logprobs; docs/server.md).

    kind "json": the constrained output is one JSON document; "calls": every top-level JSON
    object in it is one tool call, whose tool name (at `name_pointer`) is reported as the
    pointer "tool" and whose argument values are reported relative to `arguments_pointer`;
    "words": the whole output is one choice among `words` (a lexicon), at pointer "".

    For the order alternatives are reported in (server/runtime/schema_order.py): `schema`, the
    JSON document's schema ("json"); `tools`, (name, parameters schema) of each tool in the
    order offered ("calls"). Without them alternatives come in the engine's order.

    "calls" with `schema` and `call_open` (tool_choice auto beside a response format): the
    output is either one document of `schema` from its first byte, whose decisions are then
    reported as under "json" (document pointers, no `call`), or the calls, whose region opens
    with `call_open` (the dialect's opening tag); the first output byte tells which."""
    kind: str
    words: Sequence[str] = ()
    name_pointer: str = "/name"
    arguments_pointer: str = "/arguments"
    # dialects that write the tool name outside JSON ([TOOL_CALLS]NAME[ARGS]{...}): the text
    # just before and just after every name; the name is then the decision "tool" and each
    # top-level JSON object is a call's arguments (name_pointer NAME_MARKED, arguments "")
    name_marks: Optional[Tuple[str, Any]] = None    # (before, after or a tuple of afters)
    arguments_json: bool = True      # False: no JSON objects to read decisions from
    # "json": text the answer opens with before its document (harmony's final channel)
    answer_prefix: str = ""
    schema: Any = None
    tools: Sequence[Tuple[str, Any]] = ()
    call_open: str = ""


# the name_pointer of a ChoiceScope whose tool names are found by name_marks
NAME_MARKED = "#tool-name"


@dataclass
class Decision:
    """One decision point of the output: the alternatives legal there and the model's
    probability of each, probed from the state where the decoder chose among them."""
    pointer: str                        # JSON pointer of the value, or "tool"
    alternatives: List[object]          # JSON values (str, int, float, bool, None)
    logprobs: List[Optional[float]]     # None: the alternative could not be probed
    posterior: List[float]              # the logprobs renormalised over the alternatives
    probed_mass: float                  # sum of the alternatives' probabilities
    chosen: object                      # the alternative produced (None if none was)
    call: Optional[int] = None          # the tool call (0-based) it belongs to, "calls" only
    # not in the response: the tokens probed per alternative, and the tokens the KV cache held
    # at the decision state (prompt and output so far), for tests and benchmarks
    probe_sequences: List[List[int]] = field(default_factory=list)
    state_tokens: List[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        d = {"pointer": self.pointer, "alternatives": list(self.alternatives),
             "logprobs": list(self.logprobs), "posterior": list(self.posterior),
             "probed_mass": self.probed_mass, "chosen": self.chosen}
        if self.call is not None:
            d["call"] = self.call
        return d


@dataclass
class DecisionsEvent:
    """Every decision of the generation in document order; just before the FinishEvent."""
    decisions: List[Decision]


Event = Union[TokenEvent, FinishEvent, DecisionsEvent]

# (trigger, grammar of what follows it): free text until the output contains the trigger
LazyGrammar = Tuple[str, "cengine.Grammar"]


class ToolPromptFormat(Protocol):
    """How tools are written into a prompt whose chat template does not handle them (a tool
    dialect, e.g. server.tools.hermes, implements this)."""

    def plain_messages(self, messages: List[dict], tools: Optional[List[dict]]) -> List[dict]:
        """`messages` (text content, tool-call arguments as objects) with tool calls, tool
        results and the tool list rewritten as plain system / user / assistant turns."""
        ...


class GenerationModel(Protocol):
    """What the server needs of a model: `Model` over llama.cpp, or a test double."""

    name: str
    path: str
    metadata: Dict[str, str]
    chat_template: Optional[str]

    def render_chat(self, messages: List[dict], *, tools: Optional[List[dict]] = None,
                    tool_format: Optional[ToolPromptFormat] = None,
                    add_generation_prompt: bool = True,
                    template_vars: Optional[dict] = None) -> str: ...

    def tokenize(self, text: str, *, add_bos: bool = True, special: bool = True) -> List[int]: ...

    def generate(self, prompt: Union[str, Sequence[int]], *,
                 grammar: Optional["cengine.Grammar"] = None, params: SamplingParams,
                 lazy_grammar: Optional[LazyGrammar] = None,
                 cancel: Optional[threading.Event] = None,
                 choice: Optional[ChoiceScope] = None,
                 reasoning: Optional[ReasoningPlan] = None) -> Iterator[Event]: ...
