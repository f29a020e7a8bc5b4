"""A tiny random llama-architecture GGUF for tests: real tokenizer, random weights.

Why this shape:
- Vocabulary: llama.cpp's `ggml-vocab-gpt-2.gguf` (via tests/material.py, so nothing beyond
  PyPI is needed). Byte-level BPE like SmolLM2, Qwen and Llama-3 (the models llamay serves),
  50,257 tokens, so the f16 embedding and output matrices stay ~13 MB and loads in milliseconds.
  llama-spm would be smaller still but its detokenizer strips leading spaces, which would make
  the fixture unlike the byte-level models the server mostly meets.
- Four ChatML tokens are appended, as Qwen-style vocabularies have them: `<|im_start|>` and
  `<|im_end|>` (control; `<|im_end|>` is also the end-of-turn id) and `<tool_call>`,
  `</tool_call>` (user-defined, so models emit them as one token and they detokenize to
  their text). Tests of EOS/EOT handling and one-token tool-call markers can rely on them.
- 2 layers, n_embd 64, 4 heads (2 KV heads, so grouped-query attention is exercised),
  n_ff 128, context 2048; matrices f16, norms f32; untied output matrix.
- Weights come from numpy default_rng(seed): the same parameters give a byte-identical file.

The file is cached under material.cache_dir()/fixtures/ keyed by a hash of every generator
parameter (and of the source vocabulary file), written to a temporary name and renamed
under an fcntl lock so parallel test processes never see a half-written model.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Optional

import numpy as np

try:
    from . import material          # imported as tests.fixture_model
except ImportError:                 # imported with tests/ on sys.path (pytest rootdir-less)
    import material                 # type: ignore

# Bump when the generator's output changes for the same parameters.
GENERATOR_VERSION = 1

SOURCE_VOCAB = "gpt-2"

# (text, gguf token type): 3 = CONTROL, 4 = USER_DEFINED
EXTRA_TOKENS = (
    ("<|im_start|>", 3),
    ("<|im_end|>", 3),
    ("<tool_call>", 4),
    ("</tool_call>", 4),
)
EOT_TOKEN = "<|im_end|>"

# ChatML with tools, written for this project. No literal newlines outside string literals
# and whitespace-controlled tags, so trim_blocks/lstrip_blocks settings do not change the
# output. Tool-call arguments may be a JSON string (OpenAI wire format) or a mapping.
CHAT_TEMPLATE = (
    "{%- macro text(c) -%}"
    "{%- if c is none -%}"
    "{%- elif c is string -%}{{- c -}}"
    "{%- else -%}{%- for part in c -%}{%- if part.type == 'text' -%}{{- part.text -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- set sys = messages[0] if messages and messages[0].role == 'system' else none -%}"
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if sys is not none -%}{{- text(sys.content) + '\\n\\n' -}}{%- endif -%}"
    "{{- 'You can call these tools. Each is described by a JSON object:\\n' -}}"
    "{%- for tool in tools -%}"
    "{{- (tool.function if tool.function is defined else tool) | tojson -}}{{- '\\n' -}}"
    "{%- endfor -%}"
    "{{- 'To call a tool, reply with <tool_call>{\"name\": <tool name>, \"arguments\": "
    "<arguments as a JSON object>}</tool_call>.<|im_end|>\\n' -}}"
    "{%- elif sys is not none -%}"
    "{{- '<|im_start|>system\\n' + text(sys.content) + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' and loop.first -%}"
    "{%- elif m.role == 'tool' -%}"
    "{{- '<|im_start|>tool\\n' -}}"
    "{%- if m.name is defined and m.name -%}{{- '[' + m.name + '] ' -}}{%- endif -%}"
    "{{- text(m.content) + '<|im_end|>\\n' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' + text(m.content) -}}"
    "{%- if m.tool_calls is defined and m.tool_calls -%}"
    "{%- for call in m.tool_calls -%}"
    "{%- set f = call.function if call.function is defined else call -%}"
    "{{- '<tool_call>{\"name\": ' + (f.name | tojson) + ', \"arguments\": ' -}}"
    "{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- f.arguments | tojson -}}"
    "{%- endif -%}"
    "{{- '}</tool_call>' -}}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + m.role + '\\n' + text(m.content) + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

DEFAULT_PARAMS = dict(
    seed=0,
    n_layer=2,
    n_embd=64,
    n_head=4,
    n_head_kv=2,
    n_ff=128,
    n_ctx=2048,
    rope_freq_base=10000.0,
    rms_eps=1e-5,
    embd_std=1.0,
    out_scale=4.0,      # logits spread enough that the next-token distribution is not flat
)

# tokenizer.* keys copied verbatim from the source vocabulary (those it has)
_COPIED_KEYS = (
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.merges",
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
    "tokenizer.ggml.add_space_prefix",
)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _params(overrides: dict) -> dict:
    unknown = set(overrides) - set(DEFAULT_PARAMS)
    if unknown:
        raise TypeError(f"unknown fixture model parameters: {sorted(unknown)}")
    p = dict(DEFAULT_PARAMS)
    p.update(overrides)
    if p["n_embd"] % p["n_head"] or p["n_head"] % p["n_head_kv"]:
        raise ValueError("n_embd must divide by n_head and n_head by n_head_kv")
    return p


def _read_metadata():
    """cengine's fast GGUF metadata reader (gguf.GGUFReader takes ~5 s on the source vocab);
    the repository root is put on sys.path when the tests run without the package installed."""
    try:
        from cengine.gguf_meta import read_metadata
    except ImportError:
        import sys
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from cengine.gguf_meta import read_metadata
    return read_metadata


def build_fixture_model(out: Path, *, source_vocab: str = SOURCE_VOCAB,
                        extra_tokens=EXTRA_TOKENS, chat_template: str = CHAT_TEMPLATE,
                        eot_token: Optional[str] = EOT_TOKEN, **overrides) -> Path:
    """Write the fixture model to `out` (not cached, not atomic; see fixture_model_path).

    source_vocab: the llama.cpp ggml-vocab-NAME.gguf whose tokenizer the model takes;
    extra_tokens: (text, gguf token type) appended where the vocabulary lacks them (a
    family's special tokens); chat_template: written as tokenizer.chat_template; eot_token:
    the text of the end-of-turn token (None: the vocabulary's own, if any)."""
    import gguf
    read_metadata = _read_metadata()
    p = _params(overrides)
    fields = read_metadata(material.vocab_gguf(source_vocab), with_types=True)

    def plain(v):
        return v.tolist() if isinstance(v, np.ndarray) else v

    tokens = list(fields["tokenizer.ggml.tokens"][0])
    types = plain(fields["tokenizer.ggml.token_type"][0])
    scores = plain(fields["tokenizer.ggml.scores"][0]) \
        if "tokenizer.ggml.scores" in fields else None
    existing = {t: i for i, t in enumerate(tokens)}
    for text, ttype in extra_tokens:
        if text.encode() in existing:
            continue
        tokens.append(text.encode())
        types.append(ttype)
        if scores is not None:
            scores.append(0.0)
    n_vocab = len(tokens)
    eot_id = tokens.index(eot_token.encode()) if eot_token is not None else None

    arch = "llama"
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name("llamay-fixture-tiny-llama")
    w.add_type("model")
    w.add_block_count(p["n_layer"])
    w.add_context_length(p["n_ctx"])
    w.add_embedding_length(p["n_embd"])
    w.add_feed_forward_length(p["n_ff"])
    w.add_head_count(p["n_head"])
    w.add_head_count_kv(p["n_head_kv"])
    w.add_rope_dimension_count(p["n_embd"] // p["n_head"])
    w.add_rope_freq_base(p["rope_freq_base"])
    w.add_layer_norm_rms_eps(p["rms_eps"])
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    w.add_key_value("tokenizer.ggml.tokens", tokens, gguf.GGUFValueType.ARRAY,
                    gguf.GGUFValueType.STRING)
    w.add_key_value("tokenizer.ggml.token_type", types, gguf.GGUFValueType.ARRAY,
                    gguf.GGUFValueType.INT32)
    if scores is not None:
        w.add_key_value("tokenizer.ggml.scores", scores, gguf.GGUFValueType.ARRAY,
                        gguf.GGUFValueType.FLOAT32)
    for key in _COPIED_KEYS:
        if key in fields:
            val, vt, sub = fields[key]
            w.add_key_value(key, plain(val), gguf.GGUFValueType(vt),
                            None if sub is None else gguf.GGUFValueType(sub))
    if eot_id is not None:
        w.add_key_value("tokenizer.ggml.eot_token_id", eot_id, gguf.GGUFValueType.UINT32)
    w.add_chat_template(chat_template)

    rng = np.random.default_rng(p["seed"])
    E, F, L = p["n_embd"], p["n_ff"], p["n_layer"]
    E_kv = E // p["n_head"] * p["n_head_kv"]

    def lin(rows, cols):
        # numpy shape (out, in) is GGUF shape [in, out]
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float16)

    w.add_tensor("token_embd.weight",
                 (rng.standard_normal((n_vocab, E)) * p["embd_std"]).astype(np.float16))
    for i in range(L):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(E, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", lin(E, E))
        w.add_tensor(f"blk.{i}.attn_k.weight", lin(E_kv, E))
        w.add_tensor(f"blk.{i}.attn_v.weight", lin(E_kv, E))
        w.add_tensor(f"blk.{i}.attn_output.weight", lin(E, E))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(E, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", lin(F, E))
        w.add_tensor(f"blk.{i}.ffn_up.weight", lin(F, E))
        w.add_tensor(f"blk.{i}.ffn_down.weight", lin(E, F))
    w.add_tensor("output_norm.weight", np.ones(E, dtype=np.float32))
    # untied: with the output tied to the embedding a random model just repeats its input
    w.add_tensor("output.weight", lin(n_vocab, E) * np.float16(p["out_scale"]))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def fixture_key(*, source_vocab: str = SOURCE_VOCAB, extra_tokens=EXTRA_TOKENS,
                chat_template: str = CHAT_TEMPLATE, eot_token: Optional[str] = EOT_TOKEN,
                **overrides) -> str:
    """Hash of everything the generated file depends on."""
    p = _params(overrides)
    material_desc = {
        "generator": GENERATOR_VERSION,
        "params": p,
        "source_vocab": source_vocab,
        "source_sha256": _file_sha256(material.vocab_gguf(source_vocab)),
        "extra_tokens": [list(t) for t in extra_tokens],
        "chat_template": chat_template,
    }
    if eot_token != EOT_TOKEN:
        material_desc["eot_token"] = eot_token
    blob = json.dumps(material_desc, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def fixture_model_path(cache_root: Optional[Path] = None, **overrides) -> Path:
    """Path of the cached fixture model, generating it once per machine and parameter set.

    cache_root overrides material.cache_dir() for the fixture only (tests of the cache)."""
    d = Path(cache_root or material.cache_dir()) / "fixtures"
    d.mkdir(parents=True, exist_ok=True)
    key = fixture_key(**overrides)
    path = d / f"tiny-llama-{key}.gguf"
    if path.exists():
        return path
    with open(d / f".tiny-llama-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return path
        tmp = d / f".tiny-llama-{key}.{os.getpid()}.tmp"
        try:
            build_fixture_model(tmp, **overrides)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
    return path


def fixture_vocab_path() -> Path:
    """A GGUF holding exactly the fixture model's vocabulary: the model file itself (the
    tokenizer is what Vocabulary.from_gguf and vocab_only loaders read)."""
    return fixture_model_path()


def fixture_eot_token() -> str:
    return EOT_TOKEN


def file_sha256(path: Path) -> str:
    return _file_sha256(Path(path))


if __name__ == "__main__":
    print(fixture_model_path())
