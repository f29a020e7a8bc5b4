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
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Union

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


def _assemble(cls: type, texts: Sequence[bytes], attrs: np.ndarray, *, escaped_ws: bool,
              bos: Optional[int], eos: Optional[int], eot: Optional[int], eom: Optional[int],
              fim: Dict[str, Optional[int]], name: Optional[str], model: Optional[str],
              add_bos: bool, gaps: FrozenSet[int] = frozenset()) -> Vocabulary:
    """The Vocabulary of token `texts` (as a GGUF spells them) with llama.cpp attributes
    `attrs`, after llama.cpp's repairs by token text (module docstring). Shared by from_gguf
    and from_hf_tokenizer, so both apply the same rules. `gaps`: ids the source has no token
    for (b"", and not withheld: nothing could print them)."""
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
