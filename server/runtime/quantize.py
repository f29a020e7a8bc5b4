"""Quantising a GGUF with llama.cpp's own quantiser (llama_model_quantize through
llama-cpp-python), cached: `llamay ladder`'s rungs.

A rung's file is `<cache>/<source stem>-<first 16 hex of the source's sha256>-<TYPE>.gguf`,
made once (written beside, then renamed into place) and reused while the source is unchanged.
The cache folder is $LLAMAY_CACHE/quants, else $XDG_CACHE_HOME/llamay/quants, else
~/.cache/llamay/quants.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Dict, Optional, Tuple

DEFAULT_LADDER = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K")


def quant_types() -> Dict[str, int]:
    """Type name -> llama.cpp ftype, for every `LLAMA_FTYPE_MOSTLY_*` llama-cpp-python has."""
    import llama_cpp
    prefix = "LLAMA_FTYPE_MOSTLY_"
    out = {name[len(prefix):]: int(getattr(llama_cpp, name)) for name in dir(llama_cpp)
           if name.startswith(prefix)}
    out["F32"] = int(llama_cpp.LLAMA_FTYPE_ALL_F32)
    return out


def cache_dir() -> Path:
    root = os.environ.get("LLAMAY_CACHE")
    if root:
        return Path(root) / "quants"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "llamay" / "quants"


def source_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def rung_path(source: Path, quant: str, digest: str, cache: Path) -> Path:
    return cache / f"{source.stem}-{digest}-{quant}.gguf"


def quantize(source: Path, quant: str, out: Path, *, threads: int = 0) -> None:
    """Write `source` quantised to `quant` at `out` (llama.cpp's quantiser; an already
    quantised source is requantised). ValueError for a type llama.cpp does not have."""
    import llama_cpp

    from .llama_backend import _init_backend
    _init_backend()             # llama.cpp's log quiet (LLAMAY_LLAMA_LOG=1 shows it)
    types = quant_types()
    if quant not in types:
        raise ValueError(f"unknown quantisation type {quant!r}; llama.cpp has: "
                         f"{', '.join(sorted(types))}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = types[quant]
    params.nthread = threads
    params.allow_requantize = True
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".part{os.getpid()}")
    try:
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
        if rc != 0 or not tmp.is_file():
            raise RuntimeError(f"llama.cpp could not quantise {source.name} to {quant} "
                               f"(status {rc})")
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def rung(source: Path, quant: str, *, cache: Optional[Path] = None, digest: Optional[str] = None,
         threads: int = 0) -> Tuple[Path, bool]:
    """(the rung's file, whether it was made now): from the cache when it is there."""
    cache = cache_dir() if cache is None else cache
    path = rung_path(source, quant, digest or source_digest(source), cache)
    if path.is_file():
        return path, False
    quantize(source, quant, path, threads=threads)
    return path, True


def describe(path: Path) -> Tuple[Optional[int], Optional[str]]:
    """(number of weights, type name of `general.file_type`) of a GGUF, from llama.cpp (the
    file is mapped, not read); (None, None) where llama.cpp cannot load it."""
    import ctypes

    import llama_cpp

    from .llama_backend import _init_backend
    _init_backend()
    mparams = llama_cpp.llama_model_default_params()
    mparams.use_mmap = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), mparams)
    if not model:
        return None, None
    try:
        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_model_meta_val_str(model, b"general.file_type", buf, 64)
        names = {v: k for k, v in quant_types().items()}
        ftype = names.get(int(buf.value)) if n > 0 and buf.value.isdigit() else None
        return int(llama_cpp.llama_model_n_params(model)), ftype
    finally:
        llama_cpp.llama_model_free(model)
