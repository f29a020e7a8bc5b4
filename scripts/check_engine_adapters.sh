#!/usr/bin/env bash
# The SGLang and vLLM adapters (cengine/contrib/sglang.py, vllm.py) against the real packages,
# on a CPU: builds a virtualenv with the CPU build of torch, SGLang and vLLM (their wheels
# without their GPU dependencies: only what importing their grammar and logits-processor
# classes needs), then runs tests/test_contrib_sglang.py and tests/test_contrib_vllm.py.
#
#     bash scripts/check_engine_adapters.sh [VENV]      # default .adapters-venv (git-ignored)
#
# The default test command skips those two files (torch is not in the test extra). cengine is
# taken from this checkout (PYTHONPATH), so build its extensions first:
# `python setup.py build_ext --inplace`. torch stays pinned to the CPU build: a constraints
# file keeps every later install from replacing it with a CUDA build of several GB.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.adapters-venv}
TORCH=${TORCH_VERSION:-2.13.0}
SGLANG=${SGLANG_VERSION:-0.5.23}
VLLM=${VLLM_VERSION:-0.34.0}
XGRAMMAR=${XGRAMMAR_VERSION:-0.2.8}

python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip
# PyTorch's CPU index; where it cannot be reached, pip's own (a machine with the wheel on disk)
"$PY" -m pip install -q --retries 0 --timeout 10 "torch==$TORCH" \
    --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple \
    || "$PY" -m pip install -q "torch==$TORCH"
CONSTRAINTS="$VENV/constraints.txt"
"$PY" -m pip freeze | grep -i '^torch==' > "$CONSTRAINTS"
"$PY" -m pip install -q --no-deps "sglang==$SGLANG" "vllm==$VLLM" "xgrammar==$XGRAMMAR"
# what importing SGLang's constrained/ and vLLM's v1 structured-output and logits-processor
# modules (and a VllmConfig on a CPU) needs, found by importing them in a bare environment
"$PY" -m pip install -q -c "$CONSTRAINTS" \
    transformers numpy orjson psutil pybase64 requests triton packaging pillow starlette \
    msgspec pydantic pyzmq tqdm ipython aiohttp openai partial-json-parser cloudpickle \
    cachetools uvloop py-cpuinfo llguidance apache-tvm-ffi ninja tiktoken sentencepiece \
    blake3 cbor2 fastapi prometheus-client pyyaml regex safetensors lark gguf einops \
    openai-harmony \
    pytest hypothesis jsonschema
"$PY" -m pip list 2>/dev/null | grep -iE '^(torch|sglang|vllm|xgrammar|transformers) '
cd tests
PYTHONPATH="$PWD/.." "$PY" -m pytest -q -p no:cacheprovider test_contrib_sglang.py \
    test_contrib_vllm.py test_contrib_hf.py
