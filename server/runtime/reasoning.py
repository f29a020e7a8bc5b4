"""Reasoning models: the thought a model writes before its answer, as data per family.

A format is the thought's start and end markers (the model's special tokens where its
vocabulary has them), what the template writes between the thought and the answer, and the
answer's own opening where the family has one (harmony's final channel). It is detected from
the GGUF's chat template (`detect_format`) or forced (`--reasoning-format NAME|none`).

Per request a `ReasoningPlan` (server/runtime/types.py) tells the decode loop whether the
prompt already opened the thought (the generation prompt ends in `<think>`) and how many
thought tokens it may spend. The decode loop (model.py) runs the thought free, never under the
answer's constraint nor its call trigger, then starts the constraint after the end marker;
when the thought budget is spent it writes the end marker itself, and when `max_tokens` runs
out inside the thought the closer writes the end marker and the answer's shortest legal
ending. Events say which part of the output they are (`TokenEvent.part`).

Templates that switch thinking with a variable get it from the request (`template_switches`):
Qwen3's and most others' `enable_thinking`, DeepSeek V3.1's `thinking`, gpt-oss's
`reasoning_effort` (its thought cannot be turned off).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

# documented token budgets of the named efforts (OpenAI reasoning_effort, Ollama think levels)
EFFORT_BUDGETS: Dict[str, Optional[int]] = {
    "none": 0, "minimal": 128, "low": 512, "medium": 2048, "high": 8192,
}


@dataclass(frozen=True)
class ReasoningFormat:
    name: str
    start: str                  # what opens the thought
    end: str                    # what closes it
    separator: str = ""         # written between the end marker and the answer
    answer_prefix: str = ""     # what opens a free-text or constrained answer (harmony)
    can_disable: bool = True    # False: the family always thinks (gpt-oss)

    def describe(self) -> dict:
        return {"format": self.name, "start": self.start, "end": self.end}


THINK = ReasoningFormat("think", "<think>", "</think>", separator="\n\n")
MISTRAL = ReasoningFormat("mistral", "[THINK]", "[/THINK]")
SEED = ReasoningFormat("seed", "<seed:think>", "</seed:think>")
GEMMA4 = ReasoningFormat("gemma4", "<|channel>thought\n", "<channel|>")
HARMONY = ReasoningFormat("harmony", "<|channel|>analysis<|message|>", "<|end|>",
                          separator="<|start|>assistant",
                          answer_prefix="<|channel|>final<|message|>", can_disable=False)

FORMATS: Dict[str, ReasoningFormat] = {f.name: f for f in (THINK, MISTRAL, SEED, GEMMA4,
                                                           HARMONY)}


def detect_format(template: Optional[str]) -> Optional[ReasoningFormat]:
    """The reasoning format a chat template writes, or None for a model that does not think."""
    if not template:
        return None
    if "<|channel|>analysis" in template or "<|channel|>final" in template:
        return HARMONY
    if "<seed:think>" in template:
        return SEED
    if "[THINK]" in template and "[/THINK]" in template:
        return MISTRAL
    if "<|channel>thought" in template:
        return GEMMA4
    if "<think>" in template and "</think>" in template:
        return THINK
    return None


def get_format(name: str) -> Optional[ReasoningFormat]:
    """By name; "none" turns reasoning off (None)."""
    if name == "none":
        return None
    if name not in FORMATS:
        raise ValueError(f"unknown reasoning format {name!r}; known: "
                         f"{', '.join(sorted(FORMATS))}, none")
    return FORMATS[name]


def template_switches(template: Optional[str], thinking: bool,
                      effort: Optional[str] = None) -> dict:
    """The variables this template reads to turn thinking on or off, set for this request."""
    if not template:
        return {}
    out: dict = {}
    if "enable_thinking" in template:
        out["enable_thinking"] = thinking
    if "thinking" in template.replace("enable_thinking", "") and "reasoning_effort" \
            not in template:
        out["thinking"] = thinking
    if "reasoning_effort" in template and effort in ("low", "medium", "high"):
        out["reasoning_effort"] = effort
    return out


def opened_thought(prompt: str, fmt: ReasoningFormat) -> Optional[bool]:
    """Whether the generation prompt leaves the model inside a thought: True (it ends with the
    start marker), False (it opened and closed one: thinking is off), None (no thought yet)."""
    tail = prompt.rstrip()
    start = fmt.start.rstrip()
    if tail.endswith(start):
        return True
    end = fmt.end.rstrip()
    i = tail.rfind(start)
    if i >= 0 and tail.endswith(end) and tail.rfind(end) > i:
        # "<think>\n\n</think>" at the very end: the template closed the thought itself
        between = tail[i + len(start):len(tail) - len(end)]
        if not between.strip():
            return False
    return None
