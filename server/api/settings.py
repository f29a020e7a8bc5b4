"""Configuration of `llamay serve` (one model, one queue, the request limits, the API key)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable, Optional

import cengine

from ..runtime.default_model import default_model_path
from ..runtime.types import GenerationModel

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 11435


@dataclass
class Limits:
    """What one request may ask of the server, checked before any work starts (server/api/
    limits.py); exceeding one is a 4xx naming it. `llamay serve --limit NAME=VALUE` sets any of
    them. The defaults leave room above what real clients send (the 2,200 schemas of the
    maskbench corpus: at most 3,996 values, nesting 25, enums of 1,554) and keep the worst
    case of each small (docs/reliability.md has the measurements)."""
    # bytes of one request body; more is a 413 (read stops at the limit, nothing is parsed)
    max_body_bytes: int = 4 * 1024 * 1024
    # nesting of arrays and objects in a body (and in a schema sent as JSON text), scanned
    # without recursion before the body is parsed
    max_json_depth: int = 128
    # chat messages (OpenAI / Anthropic / Ollama messages, Responses input items)
    max_messages: int = 1024
    # tools offered in one request
    max_tools: int = 128
    # JSON values in one schema (response_format, llamay_schema, format, each tool's
    # parameters), and how deeply it nests
    max_schema_nodes: int = 20_000
    max_schema_depth: int = 64
    # values of one enum, and words of a llamay_lexicon
    max_enum_values: int = 4096
    # characters of GBNF text (llamay_grammar) and of a regex (llamay_regex, schema `pattern`)
    max_grammar_chars: int = 65_536
    max_regex_chars: int = 4096
    # a request's token budget (max_tokens, max_completion_tokens, max_output_tokens,
    # options.num_predict) may not ask for more
    max_tokens_limit: int = 8192
    # seconds a constraint may take to compile (off the event loop); past it the request gets
    # a 400 naming compile_timeout_seconds (a 503 when no compile thread became free in time)
    compile_timeout_seconds: float = 5.0
    # threads compiling constraints at once (a compile past its budget keeps its thread until
    # the engine returns: this bounds how many such threads can pile up)
    compile_threads: int = 2
    # the engine's compile budget for every constraint and tool-call grammar (cengine.
    # CompileBudget, docs/limits.md): units of automaton construction work, and DFA states a
    # rule may have per NFA state reached (plus 4,096), which refuses determinisation blowups
    # such as (a|b)*a(a|b){20} in milliseconds; the defaults are the engine's
    max_compile_work: int = 30_000_000
    max_dfa_growth: int = 8

    def compile_budget(self) -> cengine.CompileBudget:
        return cengine.CompileBudget(max_work=self.max_compile_work,
                                     max_dfa_growth=self.max_dfa_growth)

    @classmethod
    def names(cls) -> list:
        return [f.name for f in fields(cls)]

    def with_value(self, name: str, text: str) -> "Limits":
        """A copy with one limit set from its text form (the CLI's NAME=VALUE)."""
        kinds = {f.name: f.type for f in fields(self)}
        if name not in kinds:
            raise ValueError(f"unknown limit '{name}'; known: {', '.join(self.names())}")
        kind = float if kinds[name] in (float, "float") else int
        value = kind(text)
        if value <= 0:
            raise ValueError(f"limit '{name}' must be positive")
        return Limits(**{**self.__dict__, name: value})


@dataclass
class Settings:
    model_path: Optional[str] = None        # None: the default model (runtime/default_model.py)
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    n_ctx: int = 4096
    n_threads: Optional[int] = None
    # prompt evaluation threads (`--threads-batch`); None: as many as n_threads
    n_threads_batch: Optional[int] = None
    # layers offloaded to a GPU (`--n-gpu-layers`); ignored by a CPU-only llama.cpp build
    n_gpu_layers: int = 0
    # the prompt cache (`--prompt-cache-slots`, `--prompt-cache-tokens`): earlier requests'
    # KV kept in host memory in this many slots holding at most this many tokens together
    # (None: the cells, at most 2 GiB of KV)
    prompt_cache_slots: int = 8
    prompt_cache_tokens: Optional[int] = None
    # requests decoding at once (`--parallel`), one KV sequence each, their forward passes
    # batched; None: chosen from the context and the memory (llama_backend.auto_parallel)
    parallel: Optional[int] = None
    # requests waiting behind the running ones; beyond this the server answers 429 / 503
    max_queue: int = 64
    retry_after_seconds: int = 1
    # used when a request names no budget (Ollama's num_predict default is unbounded; ours is not)
    default_max_tokens: int = 512
    # name the APIs report; None: the GGUF file stem
    model_alias: Optional[str] = None
    # an already loaded model (tests share one between apps)
    model: Optional[GenerationModel] = None
    # applied to every reported decision (llamay_choice_logprobs): `llamay serve --calibration`
    # passes calibrate.apply_calibration bound to the loaded CALIBRATION.json; the decision's
    # raw logprobs stay beside the corrected posterior
    decision_correction: Optional[Callable[[dict], dict]] = None
    # when set, every route but GET /health needs it (server/api/auth.py)
    api_key: Optional[str] = None
    limits: Limits = field(default_factory=Limits)
    # the tool-call dialect by name (`--tool-dialect`); None: detected from the chat template
    tool_dialect: Optional[str] = None
    # the reasoning format by name, or "none" (`--reasoning-format`); None: detected
    reasoning_format: Optional[str] = None

    def resolved_model_path(self) -> str:
        if self.model_path:
            return self.model_path
        return str(default_model_path())
