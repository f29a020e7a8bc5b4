"""Model families as the tests serve them: the fixture model (tests/fixture_model.py) with a
family's real chat template from the llama-cpp-python sdist (models/templates/*.jinja) and a
vocabulary that carries the family's special tokens: llama.cpp's ggml-vocab-*.gguf of that
family where the sdist has one, else a byte-level vocabulary with the family's framing tokens
added (as the family's own tokenizer has them: CONTROL 3, USER_DEFINED 4).

One entry per (dialect, template); `family_model_path(key)` builds and caches the GGUF.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Tuple

try:
    from . import fixture_model, material       # imported as tests.families
except ImportError:                                # imported with tests/ on sys.path
    import fixture_model                           # type: ignore
    import material                                # type: ignore

CONTROL, USER_DEFINED = 3, 4


@dataclass(frozen=True)
class Family:
    dialect: str                    # the dialect the server must detect for it
    template: str                   # models/templates/<template>.jinja
    vocab: str                      # models/ggml-vocab-<vocab>.gguf
    tokens: Tuple[Tuple[str, int], ...] = ()   # special tokens added where missing
    eot: Optional[str] = None       # the end-of-turn token's text (None: the vocabulary's)
    reasoning: Optional[str] = None  # the reasoning format the server must detect, if any
    notes: str = ""
    extra: Dict[str, object] = field(default_factory=dict)

    def model_path(self) -> Path:
        return fixture_model.fixture_model_path(
            source_vocab=self.vocab, extra_tokens=self.tokens,
            chat_template=material.chat_template(self.template), eot_token=self.eot)


def _c(*texts: str) -> Tuple[Tuple[str, int], ...]:
    return tuple((t, CONTROL) for t in texts)


def _u(*texts: str) -> Tuple[Tuple[str, int], ...]:
    return tuple((t, USER_DEFINED) for t in texts)


CHATML = _c("<|im_start|>", "<|im_end|>")

FAMILIES: Dict[str, Family] = {
    "qwen2.5": Family("hermes", "Qwen-Qwen2.5-7B-Instruct", "qwen2",
                      CHATML + _u("<tool_call>", "</tool_call>"), eot="<|im_end|>"),
    "hermes3": Family("hermes", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "llama-bpe",
                      CHATML + _u("<tool_call>", "</tool_call>"), eot="<|im_end|>"),
    "qwen3": Family("hermes", "Qwen-Qwen3-0.6B", "qwen2",
                    CHATML + _u("<tool_call>", "</tool_call>", "<think>", "</think>"),
                    eot="<|im_end|>", reasoning="think"),
    "qwq": Family("hermes", "Qwen-QwQ-32B", "qwen2",
                  CHATML + _u("<tool_call>", "</tool_call>", "<think>", "</think>"),
                  eot="<|im_end|>", reasoning="think"),
    "llama3.1": Family("llama3", "meta-llama-Llama-3.1-8B-Instruct", "llama-bpe",
                       _c("<|python_tag|>", "<|eom_id|>"), eot="<|eot_id|>"),
    "llama3.2": Family("llama3", "meta-llama-Llama-3.2-3B-Instruct", "llama-bpe",
                       _c("<|python_tag|>", "<|eom_id|>"), eot="<|eot_id|>"),
    "llama3.3": Family("llama3", "meta-llama-Llama-3.3-70B-Instruct", "llama-bpe",
                       _c("<|python_tag|>", "<|eom_id|>"), eot="<|eot_id|>"),
    # Qwen3 / Qwen3.5 tokenizers: <tool_call>, <tool_response>, <think> and their closers are
    # added tokens with special: false (user-defined)
    "qwen3-coder": Family("qwen3_xml", "Qwen3-Coder", "qwen2",
                          CHATML + _u("<tool_call>", "</tool_call>", "<tool_response>",
                                      "</tool_response>", "<think>", "</think>"),
                          eot="<|im_end|>"),
    "qwen3.5": Family("qwen3_xml", "Qwen3.5-4B", "qwen35",
                      CHATML + _u("<tool_call>", "</tool_call>", "<tool_response>",
                                  "</tool_response>", "<think>", "</think>"),
                      eot="<|im_end|>", reasoning="think"),
    # no GLM vocabulary in the sdist: GPT-2's byte-level BPE (its <|endoftext|> is GLM's eos)
    # with GLM's added tokens: roles and masks special, the tool / reasoning tags not; llama.cpp
    # converts GLM with eot <|user|> (and eom <|observation|>)
    "glm-4.6": Family("glm", "GLM-4.6", "gpt-2",
                      _c("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>",
                         "<|observation|>")
                      + _u("<think>", "</think>", "<tool_call>", "</tool_call>",
                           "<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>",
                           "<arg_value>", "</arg_value>"),
                      eot="<|user|>", reasoning="think"),
    "glm-4.7": Family("glm", "GLM-4.7-Flash", "gpt-2",
                      _c("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>",
                         "<|observation|>")
                      + _u("<think>", "</think>", "<tool_call>", "</tool_call>",
                           "<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>",
                           "<arg_value>", "</arg_value>"),
                      eot="<|user|>", reasoning="think"),
    # no MiniMax vocabulary in the sdist: GPT-2's byte-level BPE with MiniMax-M2's added
    # tokens, all special in its tokenizer; [e~[ ends a turn
    "minimax-m2": Family("minimax", "MiniMax-M2", "gpt-2",
                         _c("]~!b[", "]~b]", "[e~[", "<minimax:tool_call>",
                            "</minimax:tool_call>", "<think>", "</think>"), eot="[e~[",
                         reasoning="think"),
}


def family_model_path(key: str) -> Path:
    return FAMILIES[key].model_path()
