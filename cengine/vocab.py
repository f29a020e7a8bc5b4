"""Token vocabularies: the bytes each token id adds to the output, and the ids that end it.

`Vocabulary.tokens[i]` is exactly what llama.cpp emits for token i when it detokenizes
generated text (`llama_token_to_piece(..., lstrip=0, special=False)`); b"" means the token
never adds text and is therefore never allowed by a mask (control, unknown and unused
tokens). `eos_ids` are the ids that end generation; masks allow them iff the document is
complete.

`from_gguf` follows llama.cpp's own loader (src/llama-vocab.cpp) rule by rule, including its
repairs of token types by token text, because a token whose bytes differ from what llama.cpp
prints would let a "valid" token produce an invalid document:

- token types -> attributes; CONTROL/UNKNOWN -> b"", USER_DEFINED -> the literal text
  (e.g. Qwen's `<tool_call>`), BYTE (`<0xNN>`) -> that byte, UNUSED/UNDEFINED -> b"".
- NORMAL tokens: SentencePiece-style vocabularies (`llama`, `bert`, `t5`, and BPE with an
  escaped-whitespace pre-tokenizer such as gemma4) turn `▁` into a space; byte-level BPE
  (`gpt2`) undoes the GPT-2 byte<->unicode mapping. A character outside that mapping makes
  llama.cpp print an `[UNK_BYTE_…]` marker; such tokens get b"" (never allowed).
- `bert` (WordPiece): llama.cpp's converter already rewrote `##x` to `x` and `x` to `▁x`, so
  the SentencePiece rule applies; a literal `##` still in a token is kept, as llama.cpp does.
- Tokens llama.cpp forces to CONTROL by their text (end-of-turn, end-of-generation and
  fill-in-the-middle markers that the file left NORMAL or USER_DEFINED) get b"". Where
  llama.cpp's choice among several FIM candidates depends on hash order, every candidate
  gets b"" and none is an eos id, so none is ever allowed (safe whichever it picked).
- Empty token texts (llama.cpp renames them `[EMPTY_i]`) and BYTE tokens not spelled
  `<0xNN>` get b"". Every token given b"" although llama.cpp might print something is
  listed in `withheld_ids` (besides the `[UNK_BYTE_…]` ones).
- eos_ids: llama.cpp's end-of-generation set: tokenizer.ggml.eos_token_id (or the tokenizer's
  default), eot_token_id and eom_token_id (given or found by text, e.g. `<|im_end|>`,
  `<|eot_id|>`), the tokens llama.cpp recognises by end-of-turn text, and the FIM pad/repo/
  separator tokens. This is a superset of eos+eot+eom, equal to `llama_vocab_is_eog`
  (except for the ambiguous FIM candidates above, left out).

Not supported (ValueError): `rwkv`, `plamo2`, `test` and vocabulary-less (`none`) files.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .gguf_meta import read_metadata

# llama.cpp token attribute bits (llama.h: enum llama_token_attr)
ATTR_UNDEFINED = 0
ATTR_UNKNOWN = 1 << 0
ATTR_UNUSED = 1 << 1
ATTR_NORMAL = 1 << 2
ATTR_CONTROL = 1 << 3
ATTR_USER_DEFINED = 1 << 4
ATTR_BYTE = 1 << 5

# GGUF tokenizer.ggml.token_type values -> attribute (0 undefined, 1 normal, 2 unknown,
# 3 control, 4 user-defined, 5 unused, 6 byte)
_TYPE_TO_ATTR = np.array([ATTR_UNDEFINED, ATTR_NORMAL, ATTR_UNKNOWN, ATTR_CONTROL,
                          ATTR_USER_DEFINED, ATTR_UNUSED, ATTR_BYTE], dtype=np.int32)

# Token texts llama.cpp recognises (llama-vocab.cpp, llama.cpp as vendored by
# llama-cpp-python 0.3.36). Each found token is forced to CONTROL.
_EOT_TEXTS = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
              "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
              "<end_of_utterance>")
_EOM_TEXTS = ("<|eom_id|>",)
_FIM_TEXTS = {
    "pre": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
            "▁<PRE>", "<|code_prefix|>", "<|prefix|>"),
    "suf": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
            "▁<SUF>", "<|code_suffix|>", "<|suffix|>"),
    "mid": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
            "▁<MID>", "<|code_middle|>", "<|middle|>"),
    "pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "sep": ("<|file_sep|>",),
}
_FIM_EOG = ("pad", "rep", "sep")     # FIM ids that llama.cpp also treats as end-of-generation
_EOG_TEXTS = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
              "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
              "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
              "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[")
_ALWAYS_RENDERED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")  # gpt-oss

# tokenizer.ggml.model -> (kind, default bos id, default eos id); None = no default
_MODELS = {
    "llama": ("spm", 1, 2),
    "bert": ("wpm", 101, None),
    "gpt2": ("bpe", 11, 11),
    "hybriddna": ("bpe", 11, 11),
    "whitespace": ("bpe", 11, 11),
    "gemma4": ("bpe", None, None),
    "t5": ("ugm", None, 1),
}
# BPE pre-tokenizers whose tokens spell spaces as "▁" instead of the GPT-2 byte mapping
_ESCAPED_WHITESPACE_PRE = ("gemma4", "granite-embed-multi-311m", "sarvam-moe")

_SPACE_MARK = "▁".encode("utf-8")


def _gpt2_unicode_to_byte_table() -> Dict[int, int]:
    """str.translate table undoing GPT-2's byte->unicode mapping; invalid chars -> U+FFFF."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAC + 1)) \
        | set(range(0xAE, 0xFF + 1))
    table: Dict[int, int] = {}
    n = 0
    for b in range(256):
        if b in printable:
            continue
        table[256 + n] = b          # shifted code point -> the byte it stands for
        table[b] = 0xFFFF           # the byte's own code point is not a valid encoding
        n += 1
    return table


_GPT2_TABLE = _gpt2_unicode_to_byte_table()


def _bpe_bytes(text: bytes) -> bytes:
    try:
        return text.decode("utf-8").translate(_GPT2_TABLE).encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return b""      # llama.cpp would print an [UNK_BYTE_…] marker: never allow it


def _byte_token(text: bytes) -> bytes:
    # llama.cpp reads the two hex digits of "<0xNN>"
    try:
        return bytes([int(text[3:5], 16)])
    except ValueError:
        return b""


class Vocabulary:
    """Token id -> output bytes, plus the end-of-generation ids. Immutable once built."""

    __slots__ = ("tokens", "eos_ids", "name", "bos_id", "eos_id", "eot_id", "add_bos",
                 "special_texts", "model", "withheld_ids", "special_ids", "_fingerprint")

    def __init__(self, tokens: Sequence[bytes], eos_ids: Iterable[int] = (), *,
                 name: Optional[str] = None, bos_id: Optional[int] = None,
                 special_texts: Optional[Dict[int, bytes]] = None,
                 special_ids: Optional[Dict[int, str]] = None):
        toks: List[bytes] = []
        for i, t in enumerate(tokens):
            if not isinstance(t, (bytes, bytearray, memoryview)):
                raise TypeError(f"token {i} is {type(t).__name__}, expected bytes")
            toks.append(bytes(t))
        self.tokens: List[bytes] = toks
        n = len(toks)
        eos = frozenset(int(i) for i in eos_ids)
        bad = [i for i in eos if not 0 <= i < n]
        if bad:
            raise ValueError(f"eos ids {sorted(bad)} outside the vocabulary (size {n})")
        self.eos_ids: FrozenSet[int] = eos
        self.name = name
        self.bos_id = bos_id
        self.eos_id: Optional[int] = min(eos) if eos else None
        self.eot_id: Optional[int] = None
        self.add_bos = False
        self.model: Optional[str] = None
        # literal text of tokens that print nothing (control tokens such as <|im_end|>), for
        # chat templates and logs; never part of generated output
        self.special_texts: Dict[int, bytes] = dict(special_texts or {})
        # ids given b"" although llama.cpp might print them (see from_gguf): never allowed
        self.withheld_ids: FrozenSet[int] = frozenset()
        # id -> text of the tokens a grammar may name as special tokens (cengine.Special):
        # in this vocabulary as given they print their text or nothing; in the copy
        # with_special_tokens() makes, their bytes are the marked spelling
        self.special_ids: Dict[int, str] = dict(special_ids or {})
        self._fingerprint: Optional[str] = None

    # --- contract -------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.tokens)

    def token_bytes(self, token_id: int) -> bytes:
        return self.tokens[token_id]

    @property
    def fingerprint(self) -> str:
        """sha256 over the token bytes and eos ids: equal fingerprints, equal masks."""
        fp = self._fingerprint
        if fp is None:
            h = hashlib.sha256()
            lengths = np.fromiter((len(t) for t in self.tokens), dtype="<u4",
                                  count=len(self.tokens))
            h.update(len(self.tokens).to_bytes(8, "little"))
            h.update(lengths.tobytes())
            h.update(b"".join(self.tokens))
            h.update(np.array(sorted(self.eos_ids), dtype="<i8").tobytes())
            fp = self._fingerprint = h.hexdigest()
        return fp

    def __len__(self) -> int:
        return len(self.tokens)

    def with_special_tokens(self) -> "Vocabulary":
        """This vocabulary with each of `special_ids` spelled as `cengine.Special` spells it
        (its text between the marks 0xFE / 0xFF: cengine/special.py), so a grammar can ask
        for exactly that token; every other token holding a mark byte gets b"" (no UTF-8
        text holds one, so no grammar could use it anyway). Everything else is unchanged.
        The matcher's vocabulary; what a token prints stays `self.tokens` / the special
        token's text."""
        from .special import MARKS, special_bytes
        tokens = [b"" if MARKS.intersection(t) else t for t in self.tokens]
        for i, text in self.special_ids.items():
            tokens[i] = special_bytes(text)
        v = Vocabulary.__new__(Vocabulary)
        v.tokens = tokens
        v.eos_ids = self.eos_ids
        v.name = self.name
        v.bos_id = self.bos_id
        v.eos_id = self.eos_id
        v.eot_id = self.eot_id
        v.add_bos = self.add_bos
        v.special_texts = dict(self.special_texts)
        v.model = self.model
        v.withheld_ids = self.withheld_ids
        v.special_ids = dict(self.special_ids)
        v._fingerprint = None
        return v

    def special_token_texts(self) -> FrozenSet[str]:
        """The texts a grammar over this vocabulary may name with cengine.Special."""
        return frozenset(self.special_ids.values())

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<cengine.Vocabulary{label}: {self.size} tokens, eos {sorted(self.eos_ids)}>"

    # --- loading --------------------------------------------------------------------
    @classmethod
    def from_gguf(cls, path: Union[str, Path], *, name: Optional[str] = None) -> "Vocabulary":
        """The vocabulary of a GGUF file (a full model or a vocab-only file)."""
        keys = ["general.name", "tokenizer.ggml.model", "tokenizer.ggml.pre",
                "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
                "tokenizer.ggml.add_bos_token"]
        keys += [f"tokenizer.ggml.fim_{k}_token_id" for k in _FIM_TEXTS]
        # deprecated spellings of the FIM ids that llama.cpp still reads
        keys += ["tokenizer.ggml.prefix_token_id", "tokenizer.ggml.suffix_token_id",
                 "tokenizer.ggml.middle_token_id"]
        meta = read_metadata(path, keys)
        if "tokenizer.ggml.model" not in meta or "tokenizer.ggml.tokens" not in meta:
            raise ValueError(f"{path}: no tokenizer in this GGUF file")
        model = meta["tokenizer.ggml.model"].decode()
        if model not in _MODELS:
            raise ValueError(f"{path}: tokenizer model {model!r} is not supported "
                             f"(supported: {', '.join(sorted(_MODELS))})")
        kind, bos_default, eos_default = _MODELS[model]
        pre = meta.get("tokenizer.ggml.pre", b"").decode()
        if model == "gemma4":
            pre = "gemma4"
        texts: List[bytes] = meta["tokenizer.ggml.tokens"]
        n = len(texts)
        types = meta.get("tokenizer.ggml.token_type")
        if types is None:
            attrs = np.full(n, ATTR_NORMAL, dtype=np.int32)
        else:
            types = np.asarray(types[:n], dtype=np.int64)
            attrs = np.where((types >= 0) & (types < len(_TYPE_TO_ATTR)),
                             _TYPE_TO_ATTR[np.clip(types, 0, len(_TYPE_TO_ATTR) - 1)],
                             ATTR_UNDEFINED).astype(np.int32)

        def special_id(key: str, default: Optional[int]) -> Optional[int]:
            if default is not None and default >= n:
                default = None
            v = meta.get(key)
            if v is None or not 0 <= int(v) < n:
                return default
            return int(v)

        bos = special_id("tokenizer.ggml.bos_token_id", bos_default)
        eos = special_id("tokenizer.ggml.eos_token_id", eos_default)
        eot = special_id("tokenizer.ggml.eot_token_id", None)
        eom = special_id("tokenizer.ggml.eom_token_id", None)
        fim = {k: special_id(f"tokenizer.ggml.fim_{k}_token_id", None) for k in _FIM_TEXTS}
        for k, old in (("pre", "prefix"), ("suf", "suffix"), ("mid", "middle")):
            v = special_id(f"tokenizer.ggml.{old}_token_id", None)
            if v is not None:
                fim[k] = v

        vocab_name = name
        if vocab_name is None and "general.name" in meta:
            vocab_name = meta["general.name"].decode("utf-8", "replace")
        add_bos = meta.get("tokenizer.ggml.add_bos_token")
        return _assemble(
            cls, texts, attrs,
            escaped_ws=kind in ("spm", "wpm", "ugm") or pre in _ESCAPED_WHITESPACE_PRE,
            bos=bos, eos=eos, eot=eot, eom=eom, fim=fim, name=vocab_name, model=model,
            add_bos=bool(add_bos) if add_bos is not None else kind in ("spm", "wpm"))
    @classmethod
    def from_hf_tokenizer(cls, tokenizer: Any, *, vocab_size: Optional[int] = None,
                          eos_ids: Iterable[int] = (),
                          name: Optional[str] = None) -> "Vocabulary":
        """The vocabulary of a Hugging Face tokenizer: a `transformers` tokenizer (fast ones,
        and slow ones with `byte_decoder` or `sp_model`) or a `tokenizers.Tokenizer`.

        Read by duck typing (nothing here imports transformers or tokenizers). Token bytes
        follow the same rules as `from_gguf`, so the vocabulary equals the one built from the
        same model's GGUF: byte-level BPE undoes the GPT-2 byte mapping, SentencePiece-style
        vocabularies print `▁` as a space and `<0xNN>` (with byte fallback) as that byte,
        WordPiece prints `##x` as "x" and a word-initial `x` as " x"; special tokens print
        nothing (their text is in `special_texts`), other added tokens their literal text.
        `eos_ids`: the tokenizer's eos, the end-of-generation tokens from_gguf finds by text,
        plus these (e.g. a model's `generation_config.eos_token_id`). `vocab_size`: the model's
        number of logits when it is larger than the tokenizer (ids without a token get b"");
        ids at or above it are left out. A tokenizer of another kind (WordLevel, a BPE that
        is neither byte-level nor SentencePiece-style) raises ValueError."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None and callable(getattr(tokenizer, "to_str", None)) \
                and callable(getattr(tokenizer, "get_added_tokens_decoder", None)):
            backend = tokenizer                     # a tokenizers.Tokenizer itself
        unk: Optional[int] = None
        if backend is not None:
            spec = json.loads(backend.to_str())
            kind, byte_fallback, prefix = _hf_kind(spec)
            vocab = backend.get_vocab(with_added_tokens=True)
            added = {int(i): (str(t.content), bool(t.special))
                     for i, t in backend.get_added_tokens_decoder().items()}
            model_spec = spec.get("model") or {}
            if isinstance(model_spec.get("unk_id"), int):
                unk = model_spec["unk_id"]          # Unigram
            elif isinstance(model_spec.get("unk_token"), str):
                unk = vocab.get(model_spec["unk_token"])
            model = f"hf:{model_spec.get('type')}"
        elif callable(getattr(tokenizer, "get_vocab", None)):
            # a slow transformers tokenizer: its own byte mapping or SentencePiece model says
            # which kind it is
            if getattr(tokenizer, "byte_decoder", None) is not None:
                kind, byte_fallback, prefix = "bpe", False, ""
            elif getattr(tokenizer, "sp_model", None) is not None:
                kind, byte_fallback, prefix = "spm", True, ""
            else:
                raise ValueError(f"{type(tokenizer).__name__}: a slow tokenizer without "
                                 "byte_decoder (byte-level BPE) or sp_model (SentencePiece); "
                                 "cannot tell which bytes its tokens print")
            vocab = tokenizer.get_vocab()
            added = {int(i): (str(t.content), bool(t.special))
                     for i, t in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items()}
            model = f"hf:{type(tokenizer).__name__}"
        else:
            raise TypeError(f"expected a transformers tokenizer or a tokenizers.Tokenizer, "
                            f"got {type(tokenizer).__name__}")

        def tid(attr: str) -> Optional[int]:
            v = getattr(tokenizer, attr, None)
            return v if isinstance(v, int) and v >= 0 else None

        unk = tid("unk_token_id") if tid("unk_token_id") is not None else unk
        special = {i for i, (_, is_special) in added.items() if is_special}
        special.update(i for i in (getattr(tokenizer, "all_special_ids", None) or ())
                       if isinstance(i, int))
        id_to_text: Dict[int, str] = {int(i): t for t, i in vocab.items()}
        for i, (content, _) in added.items():
            id_to_text[i] = content
        n = max(id_to_text, default=-1) + 1
        if vocab_size is not None:
            n = int(vocab_size)
        texts: List[bytes] = [b""] * n
        attrs = np.full(n, ATTR_UNDEFINED, dtype=np.int32)
        for i, t in id_to_text.items():
            if not 0 <= i < n:
                continue
            if i in added:
                texts[i] = t.encode("utf-8")
                attrs[i] = ATTR_CONTROL if i in special else ATTR_USER_DEFINED
            elif i in special:
                texts[i] = t.encode("utf-8")
                attrs[i] = ATTR_CONTROL
            elif byte_fallback and _HF_BYTE_TOKEN.fullmatch(t):
                texts[i] = t.encode("utf-8")
                attrs[i] = ATTR_BYTE
            elif kind == "wpm":
                # spelled as llama.cpp's converter writes WordPiece into a GGUF, so the
                # SentencePiece rule below applies: "##x" -> "x", "x" -> "▁x"
                texts[i] = (t[len(prefix):] if t.startswith(prefix) else "▁" + t).encode("utf-8")
                attrs[i] = ATTR_NORMAL
            else:
                texts[i] = t.encode("utf-8")
                attrs[i] = ATTR_NORMAL
        if unk is not None and 0 <= unk < n:
            attrs[unk] = ATTR_UNKNOWN
        gaps = frozenset(i for i in range(n) if i not in id_to_text)

        def in_range(i: Optional[int]) -> Optional[int]:
            return i if i is not None and i < n else None

        extra = [int(i) for i in eos_ids]
        bad = [i for i in extra if not 0 <= i < n]
        if bad:
            raise ValueError(f"eos ids {sorted(bad)} outside the vocabulary (size {n})")
        add_bos = getattr(tokenizer, "add_bos_token", None)
        return _assemble(
            cls, texts, attrs, escaped_ws=kind in ("spm", "wpm"),
            bos=in_range(tid("bos_token_id")), eos=in_range(tid("eos_token_id")),
            eot=None, eom=None, fim={k: None for k in _FIM_TEXTS},
            name=name if name is not None else getattr(tokenizer, "name_or_path", None) or None,
            model=model, add_bos=bool(add_bos) if isinstance(add_bos, bool) else False,
            gaps=gaps, extra_eog=extra)


_HF_BYTE_TOKEN = re.compile(r"<0x[0-9A-Fa-f]{2}>")


def _hf_parts(node: Any) -> List[Dict[str, Any]]:
    """The steps of a tokenizer.json decoder / pre-tokenizer / normalizer, Sequences flattened."""
    if not isinstance(node, dict):
        return []
    inner = node.get("decoders") or node.get("pretokenizers") or node.get("normalizers")
    if node.get("type") == "Sequence" and isinstance(inner, list):
        return [p for sub in inner for p in _hf_parts(sub)]
    return [node]


def _hf_kind(spec: Dict[str, Any]) -> Tuple[str, bool, str]:
    """(kind, byte fallback, WordPiece continuation prefix) of a tokenizer.json: how its
    token strings map to bytes. "bpe": GPT-2 byte-level; "spm": "▁" for a space; "wpm"."""
    model = spec.get("model") or {}
    mtype = model.get("type")
    decoder = _hf_parts(spec.get("decoder"))
    dec_types = {d.get("type") for d in decoder}
    pre_types = {d.get("type") for d in _hf_parts(spec.get("pre_tokenizer"))}
    byte_fallback = bool(model.get("byte_fallback")) or "ByteFallback" in dec_types
    if mtype == "WordPiece":
        prefix = model.get("continuing_subword_prefix") or "##"
        if dec_types - {"WordPiece"}:
            raise ValueError(f"a WordPiece tokenizer with decoder steps {sorted(dec_types)}: "
                             "only the plain WordPiece decoder is supported")
        return "wpm", False, prefix
    if mtype in ("BPE", "Unigram"):
        if "ByteLevel" in dec_types or ("ByteLevel" in pre_types and not decoder):
            return "bpe", False, ""
        spaces = "Metaspace" in dec_types or any(
            d.get("type") == "Replace" and d.get("content") == " "
            and (d.get("pattern") or {}).get("String") == "▁" for d in decoder)
        if spaces:
            return "spm", byte_fallback, ""
    raise ValueError(f"cannot tell which bytes the tokens of this {mtype} tokenizer print "
                     f"(decoder {sorted(str(t) for t in dec_types)}): supported are byte-level "
                     "BPE, SentencePiece-style BPE/Unigram (▁ as space, <0xNN> byte fallback) "
                     "and WordPiece")


def _assemble(cls: type, texts: Sequence[bytes], attrs: np.ndarray, *, escaped_ws: bool,
              bos: Optional[int], eos: Optional[int], eot: Optional[int], eom: Optional[int],
              fim: Dict[str, Optional[int]], name: Optional[str], model: Optional[str],
              add_bos: bool, gaps: FrozenSet[int] = frozenset(),
              extra_eog: Iterable[int] = ()) -> Vocabulary:
    """The Vocabulary of token `texts` (as a GGUF spells them) with llama.cpp attributes
    `attrs`, after llama.cpp's repairs by token text (module docstring). Shared by from_gguf
    and from_hf_tokenizer, so both apply the same rules. `gaps`: ids the source has no token
    for (b"", and not withheld: nothing could print them); `extra_eog`: more end-of-generation
    ids the caller knows of."""
    n = len(texts)
    # text -> id for the texts llama.cpp looks for (its map keeps the last duplicate)
    wanted = {t.encode() for t in _EOT_TEXTS + _EOM_TEXTS + _EOG_TEXTS + _ALWAYS_RENDERED}
    wanted |= {t.encode() for ts in _FIM_TEXTS.values() for t in ts}
    wanted |= {b"<|return|>", b"<|call|>", b"<|calls|>", b"<|flush|>", b"<|end|>",
               b"</s>", b"<|plamo:eos|>"}
    by_text: Dict[bytes, int] = {}
    for i, t in enumerate(texts):
        if t in wanted:
            by_text[t] = i

    def present(cands) -> List[int]:
        return [by_text[c.encode()] for c in cands if c.encode() in by_text]

    force_control = set()
    withheld = set()
    eog = set()
    # eot/eom found by text when no key names them (all candidates are EOG texts, so
    # they are forced to CONTROL below); the id itself is ambiguous if several exist
    if eot is None:
        found = present(_EOT_TEXTS)
        eot = found[0] if len(found) == 1 else None
    if eom is None:
        found = present(_EOM_TEXTS)
        eom = found[0] if len(found) == 1 else None
    for k, cands in _FIM_TEXTS.items():
        if fim[k] is not None:
            continue
        found = present(cands)
        force_control.update(found)
        if len(found) == 1:
            if k in _FIM_EOG:
                eog.update(found)
        else:
            withheld.update(found)
        # with several candidates llama.cpp picks one by hash order and leaves the others
        # as they were: all of them get b"" and none ends generation here, so none is
        # ever allowed (safe whichever llama.cpp picked)
    for k in _FIM_EOG:
        if fim[k] is not None:
            eog.add(fim[k])
    eog_by_text = present(_EOG_TEXTS)
    eog.update(eog_by_text)
    force_control.update(eog_by_text)
    for i in force_control:
        attrs[i] |= ATTR_CONTROL
    # unused markers among control tokens change nothing here (both print nothing)
    for i in present(_ALWAYS_RENDERED):
        attrs[i] = ATTR_USER_DEFINED
    for i in (eos, eot, eom):
        if i is not None:
            eog.add(i)
    eog.update(extra_eog)
    # harmony / solar-open: "<|end|>" is not an end of generation there
    eog_texts = {texts[i] for i in eog}
    has_call = b"<|call|>" in eog_texts or b"<|calls|>" in eog_texts
    if b"<|end|>" in eog_texts and has_call \
            and (b"<|return|>" in eog_texts or b"<|flush|>" in eog_texts):
        end_id = by_text[b"<|end|>"]
        eog.discard(end_id)
        attrs[end_id] = ATTR_USER_DEFINED
    # gemma4 / plamo: "</s>" is a normal token when their own end markers exist
    if (b"<|tool_response>" in eog_texts or b"<|plamo:eos|>" in eog_texts) \
            and b"</s>" in eog_texts:
        s_id = by_text[b"</s>"]
        eog.discard(s_id)
        attrs[s_id] = ATTR_NORMAL

    tokens: List[bytes] = [b""] * n
    special_texts: Dict[int, bytes] = {}
    special_ids: Dict[str, int] = {}
    attr_list = attrs.tolist()
    for i in range(n):
        a = attr_list[i]
        t = texts[i]
        if not t:
            withheld.add(i)     # llama.cpp prints "[EMPTY_<i>]" for these
            continue
        if a & (ATTR_UNKNOWN | ATTR_CONTROL):
            special_texts[i] = bytes(t)
            if not a & ATTR_UNKNOWN and i not in eog:
                _add_special(special_ids, i, t)
        elif a & ATTR_USER_DEFINED:
            tokens[i] = bytes(t)
            if i not in eog and _looks_like_marker(t):
                _add_special(special_ids, i, t)
        elif a & ATTR_NORMAL:
            if escaped_ws:
                tokens[i] = t.replace(_SPACE_MARK, b" ")
            else:
                tokens[i] = _bpe_bytes(t)
        elif a & ATTR_BYTE:
            tokens[i] = _byte_token(t)
            if not tokens[i]:
                withheld.add(i)     # not "<0xNN>": llama.cpp would print some byte
    v = cls.__new__(cls)
    v.tokens = tokens
    v.eos_ids = frozenset(eog)
    v.name = name
    v.bos_id = bos
    v.eos_id = eos
    v.eot_id = eot
    v.add_bos = add_bos
    v.special_texts = special_texts
    v.model = model
    v.withheld_ids = frozenset(withheld - eog - gaps)
    v.special_ids = {i: text for text, i in special_ids.items()}
    v._fingerprint = None
    return v


_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")


def _looks_like_marker(text: bytes) -> bool:
    """A user-defined token that is framing (`<tool_call>`, `<|tool_call>`, `[ARGS]`), not text
    some vocabularies add as one token (runs of spaces, single accented letters). SentencePiece's
    space mark "▁" makes a token text, except inside closed framing: DeepSeek writes the spaces
    of `<｜tool▁calls▁begin｜>` with it. (The mark is a three-byte sequence: matched whole, so
    other characters sharing one of its bytes are not taken for it.)"""
    if len(text) < 3 or text[:1] not in (b"<", b"[") or _WHITESPACE.intersection(text):
        return False
    return _SPACE_MARK not in text or text[-1:] == {b"<": b">", b"[": b"]"}[text[:1]]


def _add_special(out: Dict[str, int], i: int, text: bytes) -> None:
    """Record token i as the special token of its text (text -> id); the first id of a
    duplicated text keeps it (a grammar names the text, so one id must answer it)."""
    try:
        out.setdefault(text.decode("utf-8"), i)
    except UnicodeDecodeError:
        pass
