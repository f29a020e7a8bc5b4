"""cengine in Hugging Face transformers' `generate()`: a LogitsProcessor (one matcher a batch
row), a StoppingCriteria that ends a row once its document is complete, and the closer's
suffix for rows the budget cut.

    from cengine.contrib.hf import LogitsProcessor, StoppingCriteria
    vocab = cengine.Vocabulary.from_hf_tokenizer(tok, vocab_size=model.config.vocab_size,
                                                 eos_ids=[tok.eos_token_id])
    proc = LogitsProcessor(cengine.compile_json_schema(schema), vocab)
    out = model.generate(**inputs, logits_processor=[proc], stopping_criteria=[
        StoppingCriteria(proc)], max_new_tokens=64)
    texts = [tok.decode(row[n:], skip_special_tokens=True) + tail.decode()
             for row, tail in zip(out, proc.completions(out))]   # every text parses

A processor follows one `generate()` call (make a new one, or `reset()`). Rows: `grammars` is
one Grammar for every row, or one per row; with `num_return_sequences` (rows repeated in
order) each Grammar serves its consecutive rows. Masks are cengine's int32 word bitsets,
filled without the GIL (`n_threads` > 1 fills a batch's rows from a thread pool) and applied
as the other adapters apply them (`_tokens.apply_words`: cengine's kernel in place on CPU
float32 scores, torch bit operations on the scores' device elsewhere).
"""
from __future__ import annotations

import concurrent.futures
from typing import Any, List, Optional, Sequence, Union

import numpy as np
import torch

from ..grammar import Grammar
from ..special import plain_text
from ..vocab import Vocabulary
from ._tokens import apply_words

try:        # subclass transformers' bases where it is installed (isinstance checks); duck
    from transformers import LogitsProcessor as _ProcessorBase      # typing works as well
    from transformers import StoppingCriteria as _CriteriaBase
except ImportError:                                                 # pragma: no cover
    _ProcessorBase = object     # type: ignore[assignment,misc]
    _CriteriaBase = object      # type: ignore[assignment,misc]


class LogitsProcessor(_ProcessorBase):
    """Masks every token that would leave the row's grammar (transformers'
    `generate(logits_processor=[...])`). The first call takes the input's length as the
    prompt's; each call feeds the row's new tokens to its matcher, then masks its scores. A
    token the grammar refuses (one not sampled under this processor) raises ValueError."""

    def __init__(self, grammars: Union[Grammar, Sequence[Grammar]], vocab: Vocabulary, *,
                 n_threads: int = 1):
        self.grammars = [grammars] if isinstance(grammars, Grammar) else list(grammars)
        if not self.grammars:
            raise ValueError("no grammar given")
        self.vocab = vocab
        self.n_threads = max(1, int(n_threads))
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.reset()

    def reset(self) -> None:
        """Forget the rows: the next call starts a new generation."""
        self.matchers: List[Any] = []
        self.prompt_length: Optional[int] = None
        self._seen: List[int] = []
        self._masks: Optional[np.ndarray] = None

    # --- rows ----------------------------------------------------------------------------------
    def _start(self, input_ids: torch.Tensor) -> None:
        rows = int(input_ids.shape[0])
        if rows % len(self.grammars):
            raise ValueError(f"{len(self.grammars)} grammars for a batch of {rows} rows")
        per = rows // len(self.grammars)
        self.matchers = [self.grammars[b // per].matcher(self.vocab) for b in range(rows)]
        self.prompt_length = int(input_ids.shape[1])
        self._seen = [self.prompt_length] * rows
        self._masks = np.zeros((rows, (self.vocab.size + 31) // 32), np.int32)

    def sync(self, input_ids: torch.Tensor) -> None:
        """Feed each row's tokens since the last call to its matcher (after a row's end
        token, what transformers pads it with is ignored)."""
        if not self.matchers:
            self._start(input_ids)
            return
        if int(input_ids.shape[0]) != len(self.matchers):
            raise ValueError("the batch changed size: reset() between generations")
        length = int(input_ids.shape[1])
        ids = input_ids.tolist() if any(s < length for s in self._seen) else None
        for b, m in enumerate(self.matchers):
            if self._seen[b] >= length or ids is None:
                continue
            for t in ids[b][self._seen[b]:]:
                if m.is_terminated():
                    break
                if not m.accept_token(int(t)):
                    raise ValueError(f"row {b}: token {t} is not allowed by its grammar")
            self._seen[b] = length

    def done(self, b: int) -> bool:
        """Row b's document is finished: its end token was accepted, or it is complete and
        nothing may follow."""
        m = self.matchers[b]
        return m.is_terminated() or (m.is_accepting() and not m.allowed_bytes())

    # --- masks ---------------------------------------------------------------------------------
    def _fill(self, b: int) -> None:
        assert self._masks is not None
        self.matchers[b].fill_mask(self._masks[b])

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.sync(input_ids)
        assert self._masks is not None
        rows = [b for b, m in enumerate(self.matchers) if not m.is_terminated()]
        if self.n_threads > 1 and len(rows) > 1:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(self.n_threads)
            list(self._pool.map(self._fill, rows))
        else:
            for b in rows:
                self._fill(b)
        size = self.vocab.size
        if scores.shape[-1] > size:        # padded embedding rows: never a token
            scores[rows, size:] = float("-inf")
        words = torch.from_numpy(self._masks)
        for b in rows:
            apply_words(scores[b:b + 1], words[b:b + 1])
        return scores

    # --- the closer ----------------------------------------------------------------------------
    def completions(self, sequences: torch.Tensor) -> List[bytes]:
        """After generate(): what completes each row's document (b"" where it is complete):
        the shortest legal ending, to append to the row's decoded text when the budget cut
        it. `sequences` is generate()'s output (prompt and new tokens)."""
        self.sync(sequences)
        return [plain_text(m.completion()) for m in self.matchers]

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False)


class StoppingCriteria(_CriteriaBase):
    """Ends a row as soon as its document is complete and nothing may follow, without
    waiting for an end token (transformers' `generate(stopping_criteria=[...])`)."""

    def __init__(self, processor: LogitsProcessor):
        self.processor = processor

    def __call__(self, input_ids: torch.Tensor, scores: Optional[torch.Tensor] = None,
                 **kwargs: Any) -> torch.Tensor:
        p = self.processor
        p.sync(input_ids)
        return torch.tensor([p.done(b) for b in range(len(p.matchers))], dtype=torch.bool,
                            device=input_ids.device)
