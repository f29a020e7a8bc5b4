"""cengine in vLLM (V1), without a fork: a logits-processor plugin, and a structured-output
backend for when vLLM opens a registry for third-party backends.

**The plugin.** The package declares `llamay = "cengine.contrib.vllm:LlamayLogitsProcessor"` in
vLLM's `vllm.logits_processors` entry-point group, which vLLM loads in each engine; `vllm
serve --logits-processors cengine.contrib.vllm:LlamayLogitsProcessor` names it explicitly.
A request asks for a constraint in `SamplingParams.extra_args` (`vllm_xargs` in the OpenAI
API), one key of:

    llamay_json_schema      the schema, as JSON text (or a dict through the Python API)
    llamay_regex            a regex (ECMA-262, as JSON Schema's `pattern`)
    llamay_grammar          llama.cpp GBNF
    llamay_structural_tag   xgrammar's structural tag, as JSON text
    llamay_choice           a list of strings: exactly one of them

and, optionally, `llamay_close` (default 1): inside `max_tokens`, once the closer's shortest
ending needs every remaining token, only that ending is allowed, so a budget cut leaves a
complete document. `validate_params` compiles the constraint when the request arrives, so a
schema cengine cannot enforce is refused there (vLLM answers HTTP 400 with the
CompileError's message) instead of being decoded unconstrained.

**The backend.** `LlamayBackend(StructuredOutputBackend)` and `LlamayGrammar
(StructuredOutputGrammar)` implement vLLM's interface for `structured_outputs` (json,
json_object, regex, grammar (GBNF; Lark is refused), choice, structural_tag); vLLM selects its
backends by name from a fixed list today, so nothing selects this one yet.

Masks are vLLM's int32 word bitsets, filled on the host without the GIL. On a GPU they are
applied with the kernel vLLM's own structured outputs use (xgrammar's
`apply_token_bitmask_inplace`), on a CPU with cengine's.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional

import numpy as np
import torch
from vllm.v1.structured_output.backend_types import (StructuredOutputBackend,
                                                     StructuredOutputGrammar,
                                                     StructuredOutputOptions)

try:        # the V2 model runner's interface (vLLM >= 0.33; the only one 0.34 has)
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as _V2Base
except ImportError:                                                 # pragma: no cover
    _V2Base = None
try:        # vLLM <= 0.33: the V1 interface, batch updates
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
    from vllm.v1.sample.logits_processor import MoveDirectionality
except ImportError:                                                 # pragma: no cover
    _V1Base = None

import cengine

from ..compose import OneOf, Text, compile_structural
from cengine import CompileError, Grammar, Vocabulary
from ._tokens import apply_words, closing_tokens
from .structural_tag import compile_structural_tag

__all__ = ["LlamayLogitsProcessor", "LlamayBackend", "LlamayGrammar", "KEYS", "compile_request"]

logger = logging.getLogger(__name__)

KEYS = ("llamay_json_schema", "llamay_regex", "llamay_grammar", "llamay_structural_tag",
        "llamay_choice")


# --- compiling ----------------------------------------------------------------------------------

def _choice(options: Any) -> Any:
    if isinstance(options, str):
        options = json.loads(options)
    if not isinstance(options, list) or not options \
            or not all(isinstance(o, str) for o in options):
        raise CompileError("choice is a non-empty list of strings", keyword="choice")
    return compile_structural(OneOf(*(Text(o) for o in options)))


def compile_request(kind: str, spec: Any) -> Any:
    """The grammar of one constraint, `kind` one of KEYS without the prefix (cached by
    cengine). CompileError where it cannot be enforced exactly."""
    if kind == "json_schema":
        return cengine.compile_json_schema(spec)
    if kind == "regex":
        return cengine.compile_regex(spec)
    if kind == "grammar":
        return cengine.compile_gbnf(spec)
    if kind == "structural_tag":
        return compile_structural_tag(spec)
    if kind == "choice":
        return _choice(spec)
    raise CompileError(f"unknown constraint {kind!r}", keyword=kind)


def _request_constraint(extra_args: Optional[Dict[str, Any]]) -> Optional[tuple]:
    """(kind, spec) from a request's extra_args, None without one; ValueError for two."""
    if not extra_args:
        return None
    given = [k for k in KEYS if extra_args.get(k) is not None]
    if len(given) > 1:
        raise ValueError(f"one llamay constraint per request, not {given}")
    return (given[0][len("llamay_"):], extra_args[given[0]]) if given else None


def _close_flag(extra_args: Optional[Dict[str, Any]]) -> bool:
    """`llamay_close`: 1 / 0 (true / false); ValueError for anything else."""
    value = (extra_args or {}).get("llamay_close", 1)
    if value in (1, 0, True, False, "1", "0", "true", "false"):
        return value in (1, True, "1", "true")
    raise ValueError(f"llamay_close is 1 or 0, not {value!r}")


_VOCABS: Dict[tuple, Vocabulary] = {}


def _vocab(tokenizer: Any, vocab_size: int, eos_ids: FrozenSet[int],
           special: bool = False) -> Vocabulary:
    """One Vocabulary per (tokenizer, size, end tokens, special spelling), built once."""
    key = (id(tokenizer), vocab_size, eos_ids, special)
    v = _VOCABS.get(key)
    if v is None:
        if special:
            v = _vocab(tokenizer, vocab_size, eos_ids).with_special_tokens()
        else:
            v = Vocabulary.from_hf_tokenizer(tokenizer, vocab_size=vocab_size,
                                             eos_ids=sorted(eos_ids))
            cengine.prepare(v)
        _VOCABS[key] = v
    return v


def _eos_of(tokenizer: Any, model_config: Any = None) -> FrozenSet[int]:
    eos = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        eos.add(int(tokenizer.eos_token_id))
    hf_eos = getattr(getattr(model_config, "hf_config", None), "eos_token_id", None)
    if isinstance(hf_eos, int):
        eos.add(hf_eos)
    elif isinstance(hf_eos, (list, tuple)):
        eos.update(int(e) for e in hf_eos)
    return frozenset(eos)


def _apply(logits: torch.Tensor, words: torch.Tensor) -> None:
    if logits.device.type != "cpu":
        try:        # the kernel vLLM's own structured outputs apply (same layout)
            import xgrammar
        except ImportError:                                         # pragma: no cover
            pass
        else:
            xgrammar.apply_token_bitmask_inplace(logits, words.to(logits.device,
                                                                  non_blocking=True))
            return
    apply_words(logits, words)


# --- the logits-processor plugin ----------------------------------------------------------------

@dataclass
class _Row:
    """One constrained request: its matcher, how many of its output tokens it has read."""
    matcher: Any
    max_tokens: Optional[int]
    close: bool
    fed: int = 0            # output tokens read
    accepted: int = 0       # of those, accepted by the matcher (a prefix: none after the end)
    broken: bool = False


class _Plugin:
    """What both interfaces share: a request's row from its params, feeding tokens, the mask
    (with the closer inside max_tokens)."""

    tokenizer: Any
    vocab_size: int
    eos_ids: FrozenSet[int]

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        extra = getattr(sampling_params, "extra_args", None)
        found = _request_constraint(extra)
        if found is None:
            return
        _close_flag(extra)
        try:
            compile_request(*found)
        except CompileError as e:
            raise ValueError(f"llamay: {e}") from None

    def _setup(self, vllm_config: Any, tokenizer: Any = None,
               vocab_size: Optional[int] = None) -> None:
        model_config = getattr(vllm_config, "model_config", None)
        if tokenizer is None:
            if model_config is None:
                raise ValueError("llamay: no tokenizer and no model_config to load one from")
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained(
                model_config.tokenizer, revision=getattr(model_config, "tokenizer_revision",
                                                         None),
                trust_remote_code=bool(getattr(model_config, "trust_remote_code", False)))
        self.tokenizer = tokenizer
        if vocab_size is None:
            vocab_size = int(model_config.get_vocab_size()) if model_config is not None \
                else len(tokenizer)
        self.vocab_size = vocab_size
        self.eos_ids = _eos_of(tokenizer, model_config)

    def _row(self, params: Any) -> Optional[_Row]:
        extra = getattr(params, "extra_args", None)
        found = _request_constraint(extra)
        if found is None:
            return None
        kind, spec = found
        vocab = _vocab(self.tokenizer, self.vocab_size, self.eos_ids,
                       special=kind == "structural_tag")
        close = _close_flag(extra)
        return _Row(compile_request(kind, spec).matcher(vocab),
                    getattr(params, "max_tokens", None), close)

    @staticmethod
    def _feed(row: _Row, tokens: Any) -> None:
        for t in tokens:
            m = row.matcher
            if not row.broken and not m.is_terminated():
                if m.accept_token(int(t)):
                    row.accepted += 1
                else:
                    # only a token sampled without this mask (another stage's change) gets
                    # here; the row can no longer be held to its grammar
                    logger.error("llamay: a sampled token %d its grammar refuses", int(t))
                    row.broken = True
            row.fed += 1

    def _fill(self, row: _Row, m: Any, n_out: int, words: Any) -> None:
        """Row words := the mask of matcher m, `n_out` output tokens into the request."""
        if row.close and row.max_tokens is not None:
            left = row.max_tokens - n_out
            tail = closing_tokens(m) if left <= m.completion_length() + 1 else None
            if tail is not None and left <= len(tail) + 1:
                # the closer needs what is left: its next token, or the end once complete
                nxt = tail[0] if tail else min(self.eos_ids, default=None)
                if nxt is not None:
                    words[:] = 0
                    words.view(np.uint32)[nxt >> 5] = 1 << (nxt & 31)
                    return
        m.fill_mask(words)

    def _words(self, rows: int) -> torch.Tensor:
        return torch.full((rows, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)


_BASES = tuple(b for b in (_V2Base, _V1Base) if b is not None)


class LlamayLogitsProcessor(_Plugin, *_BASES):  # type: ignore[misc]
    """Masks each constrained request's logits to its grammar (extra_args, module doc).

    One class for both of vLLM's logits-processor interfaces, because vLLM 0.33 runs either
    model runner (V2 where it supports the model, else V1) and loads the same entry point for
    both; it subclasses each interface the installed vLLM has, and the constructor's
    arguments say which runner built it.

    - V2 (`(vllm_config, req_states)`, vLLM >= 0.33): rows are request slots (add_request);
      each step's tokens are read from the step's context (each row's input token) and,
      after a gap (a resumed request), from the runner's token buffer. Under speculative
      decoding a draft row's mask is its request's state plus the drafts before it.
    - V1 (`(vllm_config, device, is_pin_memory)`, vLLM <= 0.33): batch updates add, remove
      and move rows; each row reads vLLM's live list of its request's output tokens.
    """

    def __init__(self, vllm_config: Any, *args: Any, tokenizer: Any = None):
        self.v2 = len(args) == 1
        self.slots: Dict[int, _Row] = {}                # V2: slot -> row; V1: batch row -> row
        self.outputs: Dict[int, List[int]] = {}         # V1: batch row -> live output list
        if self.v2:
            self.req_states = args[0]
            self._setup(vllm_config, tokenizer, int(self.req_states.vocab_size))
        else:
            self.device = args[0]
            self._setup(vllm_config, tokenizer)

    def is_argmax_invariant(self) -> bool:
        return False

    def apply(self, logits: torch.Tensor, ctx: Any = None) -> torch.Tensor:
        if not self.slots:
            return logits
        return self._apply_v2(logits, ctx) if self.v2 else self._apply_v1(logits)

    # --- V2 -------------------------------------------------------------------------------------
    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        row = self._row(sampling_params)
        if row is None:
            self.slots.pop(req_idx, None)
            return False
        self.slots[req_idx] = row
        return True

    def _sync(self, slot: int, row: _Row, pos: int, token: int) -> None:
        """Bring the row to the `pos + 1 - prompt_len` output tokens its request has."""
        prompt = int(self.req_states.prompt_len.np[slot])
        need = max(pos + 1 - prompt, 0)
        if need < row.fed:                       # rejected drafts: undo them
            keep = min(row.accepted, need)
            row.matcher.rollback(row.accepted - keep)
            row.accepted, row.fed = keep, need
        elif need == row.fed + 1:
            self._feed(row, [token])
        elif need > row.fed:                     # a gap: read the runner's buffer
            start = prompt + row.fed
            self._feed(row, self.req_states.all_token_ids.gpu[
                slot, start:prompt + need].tolist())

    def _apply_v2(self, logits: torch.Tensor, ctx: Any) -> torch.Tensor:
        mapping = ctx.expanded_idx_mapping.tolist()
        if not any(s in self.slots for s in mapping):
            return logits
        pos, ids = ctx.pos.tolist(), ctx.input_ids.tolist()
        local = ctx.expanded_local_pos.tolist()
        words = self._words(len(mapping))
        w = words.numpy()
        for r, slot in enumerate(mapping):
            row = self.slots.get(slot)
            if row is None:
                continue
            if local[r] == 0:
                self._sync(slot, row, pos[r], ids[r])
                m = row.matcher
            else:                   # a draft row: its request's state plus the drafts
                m = row.matcher.copy()
                if not all(m.accept_token(int(ids[j])) for j in range(r - local[r] + 1, r + 1)):
                    continue        # a draft the grammar refuses is rejected anyway
            if row.broken or m.is_terminated():
                continue
            self._fill(row, m, row.fed + local[r], w[r])
        _apply(logits, words)
        return logits

    # --- V1 -------------------------------------------------------------------------------------
    def update_state(self, batch_update: Any) -> None:
        rows, outputs = self.slots, self.outputs
        if batch_update is not None:
            for index in batch_update.removed:
                rows.pop(index, None)
                outputs.pop(index, None)
            for index, params, _prompt, output in batch_update.added:
                row = self._row(params)
                if row is None:
                    rows.pop(index, None)
                    outputs.pop(index, None)
                else:
                    rows[index], outputs[index] = row, output
            for a, b, direction in batch_update.moved:
                ra, oa = rows.pop(a, None), outputs.pop(a, None)
                rb, ob = rows.pop(b, None), outputs.pop(b, None)
                if ra is not None and oa is not None:
                    rows[b], outputs[b] = ra, oa
                if direction == MoveDirectionality.SWAP and rb is not None and ob is not None:
                    rows[a], outputs[a] = rb, ob
        for index, row in rows.items():
            output = outputs[index]
            if row.fed < len(output):
                self._feed(row, output[row.fed:])

    def _apply_v1(self, logits: torch.Tensor) -> torch.Tensor:
        live = [(i, r) for i, r in self.slots.items()
                if not r.broken and not r.matcher.is_terminated() and i < logits.shape[0]]
        if not live:
            return logits
        words = self._words(int(logits.shape[0]))
        w = words.numpy()
        for i, r in live:
            self._fill(r, r.matcher, len(self.outputs[i]), w[i])
        _apply(logits, words)
        return logits


# --- the structured-output backend --------------------------------------------------------------

@dataclass
class LlamayGrammar(StructuredOutputGrammar):
    """One request's document (vLLM's StructuredOutputGrammar)."""
    matcher: Any
    grammar: Grammar = field(repr=False)
    vocab: Vocabulary = field(repr=False)
    num_processed_tokens: int = 0

    def accept_tokens(self, request_id: str, tokens: List[int]) -> bool:
        for t in tokens:
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(int(t)):
                logger.error("llamay: request %s: token %d refused", request_id, t)
                return False
            self.num_processed_tokens += 1
        return True

    def validate_tokens(self, tokens: List[int]) -> List[int]:
        accepted: List[int] = []
        for t in tokens:
            if self.matcher.is_terminated() or not self.matcher.accept_token(int(t)):
                break
            accepted.append(t)
        if accepted:
            self.matcher.rollback(len(accepted))
        return accepted

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        self.matcher.fill_mask(bitmask[batch_index].numpy())

    def is_terminated(self) -> bool:
        return bool(self.matcher.is_terminated())

    def reset(self) -> None:
        self.matcher = self.grammar.matcher(self.vocab)
        self.num_processed_tokens = 0


_OPTIONS = {
    StructuredOutputOptions.JSON: "json_schema",
    StructuredOutputOptions.REGEX: "regex",
    StructuredOutputOptions.GRAMMAR: "grammar",
    StructuredOutputOptions.CHOICE: "choice",
    StructuredOutputOptions.STRUCTURAL_TAG: "structural_tag",
}


@dataclass
class LlamayBackend(StructuredOutputBackend):
    """vLLM's StructuredOutputBackend over cengine (ready for a backend registry)."""

    def __post_init__(self) -> None:
        model_config = getattr(self.vllm_config, "model_config", None)
        self.eos_ids = _eos_of(self.tokenizer, model_config)

    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str,
                        stop_token_ids: Optional[set] = None) -> StructuredOutputGrammar:
        if request_type == StructuredOutputOptions.JSON_OBJECT:
            kind, spec = "json_schema", '{"type": "object"}'
        elif request_type in _OPTIONS:
            kind, spec = _OPTIONS[request_type], grammar_spec
        else:
            raise ValueError(f"llamay: unsupported structured output {request_type}")
        if kind == "grammar":
            from vllm.v1.structured_output.utils import grammar_is_likely_lark
            if grammar_is_likely_lark(grammar_spec):
                raise ValueError("llamay: Lark grammars are not supported; send GBNF")
        eos = frozenset(stop_token_ids) if stop_token_ids else self.eos_ids
        vocab = _vocab(self.tokenizer, self.vocab_size, eos, special=kind == "structural_tag")
        try:
            grammar = compile_request(kind, spec)
        except CompileError as e:
            raise ValueError(f"llamay: {e}") from None
        return LlamayGrammar(grammar.matcher(vocab), grammar, vocab)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        pass
