"""llamay_choice_logprobs: the model's probability of each alternative of a choice.

For a prompt and alternatives a_1..a_n (the values of an enum, the words of a lexicon), the
log-probability of a_i is the sum of log P(token_j | prompt, token_<j) over a_i's canonical
tokenisation (the tokenizer's own split of the alternative's text, no special tokens), read
from the model's unconstrained logits. The posterior is their softmax over the alternatives.
Runs on the worker thread after generation; the KV cache keeps the prompt, so each
alternative costs one decode per token.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Sequence, Union

import numpy as np

if TYPE_CHECKING:       # the runtime is found on the model: importing it here would load llama.cpp
    from .llama_backend import LlamaRuntime

_RUNTIME_METHODS = ("tokenize", "reuse_prefix", "eval", "truncate")


def _runtime(model) -> "LlamaRuntime":
    rt = getattr(model, "runtime", None)
    if rt is None or not all(callable(getattr(rt, m, None)) for m in _RUNTIME_METHODS):
        raise TypeError("the model exposes no llama.cpp runtime to score alternatives with")
    return rt


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def sequence_logprobs(model, prompt: Union[str, List[int]],
                      alternatives: Sequence[str]) -> List[float]:
    rt = _runtime(model)
    ids = model.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
    keep = rt.reuse_prefix(ids)
    first = rt.eval(ids[keep:])
    base = len(ids)
    out: List[float] = []
    try:
        for alt in alternatives:
            toks = rt.tokenize(alt.encode("utf-8"), add_special=False, parse_special=False)
            total, logits = 0.0, first
            for j, t in enumerate(toks):
                total += float(_log_softmax(logits)[t])
                if j + 1 < len(toks):
                    logits = rt.eval([t])
            rt.truncate(base)
            out.append(total)
    finally:
        rt.truncate(base)
    return out
