"""llamay_choice_logprobs: the model's probability of each alternative of a choice.

For a prompt and alternatives a_1..a_n (the values of an enum, the words of a lexicon), the
log-probability of a_i is the sum of log P(token_j | prompt, token_<j) over a_i's canonical
tokenisation (the tokenizer's own split of the alternative's text, no special tokens), read
from the model's unconstrained logits. The posterior is their softmax over the alternatives.
Runs on the worker thread after generation; the KV cache keeps the prompt, so each
alternative costs one decode per token.
"""
from __future__ import annotations

from typing import List, Sequence, Union

import numpy as np

from .llama_backend import LlamaRuntime


def _runtime(model) -> LlamaRuntime:
    for value in vars(model).values():
        if isinstance(value, LlamaRuntime):
            return value
    raise TypeError("the model exposes no llama.cpp runtime to score alternatives with")


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def sequence_logprobs(model, prompt: Union[str, List[int]], alternatives: Sequence[str]) -> List[float]:
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
