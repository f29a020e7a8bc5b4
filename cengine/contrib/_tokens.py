"""What the engine adapters share: the tokens that spell bytes a grammar forces (jump-forward,
the closer inside a token budget), and a bitset mask applied to a torch score tensor.

Nothing here imports torch at module level: `cengine.contrib.structural_tag` users need none.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..vocab import Vocabulary

_INDEXES: Dict[str, Tuple[Dict[bytes, int], int]] = {}
_LOCK = threading.Lock()


def _byte_index(vocab: Vocabulary) -> Tuple[Dict[bytes, int], int]:
    """bytes -> the lowest id spelling them (end tokens left out), and the longest length."""
    key = vocab.fingerprint
    found = _INDEXES.get(key)
    if found is None:
        index: Dict[bytes, int] = {}
        for i, b in enumerate(vocab.tokens):
            if b and i not in vocab.eos_ids and b not in index:
                index[b] = i
        found = (index, max((len(b) for b in index), default=1))
        with _LOCK:
            _INDEXES[key] = found
    return found


def _spell(matcher: Any, data: bytes, limit: Optional[int] = None) -> Tuple[List[int], Any]:
    """Tokens spelling a prefix of `data`, longest match first, each accepted by a copy of
    `matcher`; returns them and that copy, advanced past them. Stops where no token fits."""
    index, longest = _byte_index(matcher.vocab)
    m = matcher.copy()
    ids: List[int] = []
    pos = 0
    while pos < len(data) and (limit is None or len(ids) < limit):
        for n in range(min(longest, len(data) - pos), 0, -1):
            t = index.get(bytes(data[pos:pos + n]))
            if t is not None and m.accept_token(t):
                ids.append(t)
                pos += n
                break
        else:
            break
    return ids, m


def tokens_for_bytes(matcher: Any, data: bytes, *, limit: Optional[int] = None) -> List[int]:
    """Tokens spelling a prefix of `data`, longest match first, each accepted by a copy of
    `matcher` (the matcher itself is left as it was). Stops where no token fits."""
    return _spell(matcher, data, limit)[0]


def forced_tokens(matcher: Any) -> Tuple[List[int], bytes]:
    """Jump-forward: the tokens of the only legal continuation and its bytes, without the last
    token unless it completes the document (the model may merge it with what follows)."""
    data = matcher.forced_bytes()
    if not data:
        return [], b""
    ids, m = _spell(matcher, data)
    if ids and not (m.is_accepting() and not m.allowed_bytes()):
        ids.pop()
    return ids, b"".join(matcher.vocab.tokens[t] for t in ids)


def closing_tokens(matcher: Any) -> List[int]:
    """The closer as tokens: the shortest legal ending of the document, spelled greedily (the
    end token not included)."""
    tail = matcher.completion()
    return tokens_for_bytes(matcher, tail) if tail else []


def unpack_words(words: Any, vocab_size: int) -> Any:
    """A torch bool tensor (rows, vocab_size) from int32 word bitsets (rows, words)."""
    import torch
    shifts = torch.arange(32, device=words.device, dtype=torch.int32)
    bits = (words.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(words.shape[0], -1)[:, :vocab_size].bool()


def apply_words(logits: Any, words: Any) -> None:
    """logits[b, i] = -inf where bit i of row b's words is 0 (in place). Where logits are a
    contiguous CPU float32 tensor cengine's own kernel does it; elsewhere torch ops on the
    logits' device. Columns past the words' bits are left alone."""
    from .._bitmask import apply_mask
    width = min(int(logits.shape[-1]), int(words.shape[-1]) * 32)
    if logits.device.type == "cpu" and str(logits.dtype) == "torch.float32" \
            and logits.is_contiguous() and words.device.type == "cpu":
        w = words.numpy()
        for b in range(int(logits.shape[0])):
            apply_mask(logits[b, :width].numpy(), np.ascontiguousarray(w[b]))
        return
    allowed = unpack_words(words.to(logits.device, non_blocking=True), width)
    logits[:, :width].masked_fill_(~allowed, float("-inf"))
