"""cengine as an SGLang grammar backend, registered as `llamay`.

    pip install llamay sglang        # the entry point below registers it in every SGLang process
    python -m sglang.launch_server --model-path ... --grammar-backend llamay

The package declares `llamay = "cengine.contrib.sglang:register"` in SGLang's general-plugin
group (`sglang.srt.plugins`), which SGLang loads in the launcher (before it parses
`--grammar-backend`) and in each scheduler process. `register()` adds the name to the
backend choices and `register_grammar_backend("llamay", ...)`; custom backends are looked up
before the built-in ones.

Requests keep their SGLang shapes: `json_schema`, `regex`, `ebnf` (llama.cpp GBNF, which is
also what SGLang's EBNF examples are written in) and `structural_tag` (xgrammar's format, both
spellings: cengine/contrib/structural_tag.py). A schema or grammar cengine cannot enforce
exactly is refused: the backend returns SGLang's InvalidGrammarObject with the CompileError's
message, and SGLang aborts that request with it instead of decoding it unconstrained.

Masks are the int32 word bitsets SGLang's built-in backends use, filled on the host without
the GIL; applying them is SGLang's own bitmask kernel on the GPU (cengine's on a CPU).
Jump-forward returns the forced tokens and their text; copy() copies the matcher's state and
rollback undoes accepted tokens.
"""
from __future__ import annotations

import logging
from typing import Any, Iterable, List, Optional, Tuple

import torch
from sglang.srt.constrained.base_grammar_backend import (BaseGrammarBackend,
                                                         BaseGrammarObject, GrammarRow,
                                                         InvalidGrammarObject,
                                                         register_grammar_backend,
                                                         register_vocab_mask_buffer)

import cengine

from cengine import CompileError, Grammar, Vocabulary
from ._tokens import apply_words, forced_tokens
from .structural_tag import compile_structural_tag

__all__ = ["LlamayGrammar", "LlamayGrammarBackend", "register", "NAME"]

NAME = "llamay"
logger = logging.getLogger(__name__)


def _allocate(vocab_size: int, rows: int) -> torch.Tensor:
    # every bit set: rows SGLang leaves unfilled (requests without a grammar) stay free
    return torch.full((rows, (vocab_size + 31) // 32), -1, dtype=torch.int32)


class LlamayGrammar(BaseGrammarObject):
    """One request's document: a cengine Matcher over the backend's vocabulary."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary, matcher: Any = None,
                 key: Optional[Tuple[str, str]] = None):
        super().__init__()
        self.grammar = grammar
        self.vocab = vocab
        self.matcher = matcher if matcher is not None else grammar.matcher(vocab)
        self.key = key

    def accept_token(self, token: int) -> None:
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(int(token)):
            raise ValueError(f"token {token} is not allowed by the grammar {self.key!r}")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(int(k))

    def is_terminated(self) -> bool:
        return bool(self.matcher.is_terminated())

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return _allocate(vocab_size, batch_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_mask(vocab_mask[idx].numpy())

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        # a warm fill takes a few µs, less than a pool task: one thread fills them all
        words = vocab_mask.numpy()
        for row, grammar in entries:
            if isinstance(grammar, LlamayGrammar):
                grammar.matcher.fill_mask(words[row])
            else:
                grammar.fill_vocab_mask(vocab_mask, row)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        if logits.device.type in ("cuda", "xpu", "musa"):
            try:        # SGLang's own kernel, as its xgrammar backend applies the same layout
                from sglang.kernels.ops.grammar.bitmask_ops import \
                    apply_token_bitmask_inplace_triton
            except ImportError:                                     # pragma: no cover
                pass
            else:
                apply_token_bitmask_inplace_triton(logits, vocab_mask)
                return
        apply_words(logits, vocab_mask)

    def copy(self) -> "LlamayGrammar":
        return LlamayGrammar(self.grammar, self.vocab, self.matcher.copy(), self.key)

    # --- jump-forward ---------------------------------------------------------------------------
    def try_jump_forward(self, tokenizer: Any = None) -> Optional[Tuple[List[int], str]]:
        """(tokens, text) of the continuation the grammar forces, or None. The state is not
        advanced: the scheduler appends them, then calls jump_and_retokenize."""
        ids, data = forced_tokens(self.matcher)
        if not ids:
            return None
        return ids, data.decode("utf-8", errors="replace")

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int],
                            next_state: int) -> None:
        """The output was re-tokenized after a jump: undo back to the common prefix, then
        accept the new tokens."""
        k = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            k += 1
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for i, t in enumerate(new_output_ids[k:], k):
            if not self.matcher.accept_token(int(t)):
                raise ValueError(f"token {t} at {i} is not allowed after re-tokenizing")

    def __repr__(self) -> str:
        return f"LlamayGrammar({self.key!r})"


class LlamayGrammarBackend(BaseGrammarBackend):
    """Compiles each request's json / regex / ebnf / structural_tag on SGLang's executor; the
    compiled grammars are shared (cengine's own cache keyed by source and options)."""

    def __init__(self, tokenizer: Any, vocab_size: int,
                 eos_token_ids: Optional[Iterable[int]] = None, *,
                 whitespace_budget: Optional[int] = 64, max_depth: int = 64):
        super().__init__()
        eos = set(eos_token_ids or ())
        if getattr(tokenizer, "eos_token_id", None) is not None:
            eos.add(int(tokenizer.eos_token_id))
        self.vocab = Vocabulary.from_hf_tokenizer(tokenizer, vocab_size=vocab_size,
                                                  eos_ids=sorted(eos))
        self._special_vocab: Optional[Vocabulary] = None
        self.vocab_size = vocab_size
        self.whitespace_budget, self.max_depth = whitespace_budget, max_depth
        cengine.prepare(self.vocab)

    @property
    def special_vocab(self) -> Vocabulary:
        """The vocabulary in which a structural tag may name special tokens."""
        if self._special_vocab is None:
            self._special_vocab = self.vocab.with_special_tokens()
        return self._special_vocab

    def initialize_vocab_mask_buffer(self, name: str, vocab_size: int, max_rows: int, device
                                     ) -> torch.Tensor:
        return register_vocab_mask_buffer(name, _allocate(vocab_size, max_rows), max_rows)

    def _compiled(self, kind: str, text: str, compile_fn, vocab: Vocabulary
                  ) -> BaseGrammarObject:
        try:
            grammar = compile_fn()
        except CompileError as e:
            # refused, never decoded unconstrained: SGLang aborts the request with this
            logger.info("llamay refused %s: %s", kind, e)
            return InvalidGrammarObject(f"llamay: {e}")
        return LlamayGrammar(grammar, vocab, key=(kind, text))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("json", key_string, lambda: cengine.compile_json_schema(
            key_string, whitespace_budget=self.whitespace_budget, max_depth=self.max_depth),
            self.vocab)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("regex", key_string,
                              lambda: cengine.compile_regex(key_string), self.vocab)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("ebnf", key_string,
                              lambda: cengine.compile_gbnf(key_string), self.vocab)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("structural_tag", key_string, lambda: compile_structural_tag(
            key_string, whitespace_budget=self.whitespace_budget, max_depth=self.max_depth),
            self.special_vocab)


def _init_backend(server_args: Any, tokenizer: Any, vocab_size: int,
                  eos_token_ids: Optional[Iterable[int]] = None) -> LlamayGrammarBackend:
    return LlamayGrammarBackend(tokenizer, vocab_size, eos_token_ids)


def register() -> None:
    """Make `--grammar-backend llamay` a choice and register the backend (idempotent)."""
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    except ImportError:                                             # pragma: no cover
        GRAMMAR_BACKEND_CHOICES = None
    if GRAMMAR_BACKEND_CHOICES is not None and NAME not in GRAMMAR_BACKEND_CHOICES:
        GRAMMAR_BACKEND_CHOICES.append(NAME)
    register_grammar_backend(NAME, _init_backend)
