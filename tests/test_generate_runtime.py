"""The llama.cpp runtime: batching, KV-cache prefix reuse, tokenisation, metadata."""
from __future__ import annotations

import fixture_model
import numpy as np
import pytest

from server.runtime.llama_backend import LlamaRuntime


@pytest.fixture(scope="module")
def runtimes(fixture_model_path):
    small = LlamaRuntime(str(fixture_model_path), n_ctx=256, n_batch=8)
    big = LlamaRuntime(str(fixture_model_path), n_ctx=256, n_batch=128)
    yield small, big
    small.close()
    big.close()


def test_batches_of_8_give_the_logits_of_one_batch(runtimes):
    small, big = runtimes
    ids = small.tokenize(b"The quick brown fox jumps over the lazy dog, " * 3,
                         add_special=True, parse_special=False)
    assert len(ids) > 8 * 3
    small.truncate(0)
    big.truncate(0)
    a = small.eval(ids)
    b = big.eval(ids)
    assert a.shape == (small.n_vocab,) and a.dtype == np.float32
    assert np.allclose(a, b, atol=1e-3)
    assert small.tokens == ids == big.tokens


def test_prefix_reuse_keeps_the_common_part_and_gives_the_same_logits(runtimes):
    rt, fresh = runtimes
    a = rt.tokenize(b"one two three four five six", add_special=True, parse_special=False)
    b = a[:4] + rt.tokenize(b" seven eight", add_special=False, parse_special=False)
    rt.truncate(0)
    rt.eval(a)
    keep = rt.reuse_prefix(b)
    assert keep == 4 and rt.tokens == b[:4]
    got = rt.eval(b[keep:])
    fresh.truncate(0)
    want = fresh.eval(b)
    assert np.allclose(got, want, atol=1e-3)
    # the whole prompt cached: the last token is evaluated again for its logits
    assert rt.reuse_prefix(b) == len(b) - 1


def test_context_overflow_is_refused_without_touching_the_cache(runtimes):
    rt, _ = runtimes
    rt.truncate(0)
    rt.eval([1, 2, 3])
    with pytest.raises(ValueError, match="context"):
        rt.eval([5] * rt.n_ctx)
    assert rt.tokens == [1, 2, 3]


def test_tokenise_detokenise_and_special_tokens(runtimes):
    rt, _ = runtimes
    text = b"<|im_start|>user\nhello<|im_end|>"
    special = rt.tokenize(text, add_special=False, parse_special=True)
    plain = rt.tokenize(text, add_special=False, parse_special=False)
    assert len(special) < len(plain)
    assert rt.token_text(special[0]) == "<|im_start|>"
    assert rt.detokenize(special, special=True) == text
    assert rt.detokenize(plain) == text
    im_end = special[-1]
    assert im_end in rt.eog_ids
    assert b"".join(rt.token_to_piece(t) for t in plain) == text


def test_metadata_and_shape(runtimes, fixture_model_path):
    rt, _ = runtimes
    assert rt.metadata["general.architecture"] == "llama"
    # longer than the first read buffer (1 KiB): read whole after growing it
    assert len(fixture_model.CHAT_TEMPLATE) > 1024
    assert rt.metadata["tokenizer.chat_template"] == fixture_model.CHAT_TEMPLATE
    assert rt.n_ctx == 256 and rt.n_vocab > 50000


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        LlamaRuntime(str(tmp_path / "nope.gguf"))


def test_branches_evaluate_beside_the_decoder_and_leave_it_untouched(runtimes):
    # two branches forked from the decoder's state, one token shared by both (one cell seen by
    # each), then a different continuation each, in one batch: every row is the row the
    # decoder's own sequence gives for the same tokens, and closing the branches leaves the
    # decoder's sequence and cache as they were
    import llama_cpp.llama_cpp as L
    _, rt = runtimes
    prompt = rt.tokenize(b"The quick brown fox", add_special=True, parse_special=False)
    a, b, c, d = rt.tokenize(b" jumps over lazy dogs", add_special=False, parse_special=False)[:4]
    rt.truncate(0)
    rt.eval(prompt)
    want_ab = np.stack(rt.eval_rows([a, b, d], 3)[0])
    rt.truncate(len(prompt))
    want_ac = np.stack(rt.eval_rows([a, c], 2)[0])
    rt.truncate(len(prompt))
    with rt.branches(2) as (s1, s2):
        rt.fork(s1, len(prompt))
        rt.fork(s2, len(prompt))
        assert [L.llama_memory_seq_pos_max(rt._memory, s) for s in (s1, s2)] == \
            [len(prompt) - 1] * 2
        [[shared]] = rt.eval_branches([([s1, s2], [a], False)])
        rows_b, rows_c = rt.eval_branches([([s1], [b, d], True), ([s2], [c], False)])
        assert rt.tokens == prompt
    assert np.allclose(shared, want_ab[0], atol=1e-4)
    assert np.allclose(rows_b[0], want_ab[1], atol=1e-4)
    assert np.allclose(rows_b[1], want_ab[2], atol=1e-4)
    assert np.allclose(rows_c[0], want_ac[1], atol=1e-4)
    assert [L.llama_memory_seq_pos_max(rt._memory, s) for s in (s1, s2)] == [-1, -1]
    assert L.llama_memory_seq_pos_max(rt._memory, 0) == len(prompt) - 1
    assert np.allclose(rt.eval([a, c]), want_ac[1], atol=1e-4)


def test_branches_are_bounded_by_the_context(runtimes):
    small, big = runtimes
    # one output per sequence is reserved, at most n_batch in all
    assert small.n_branches == small.n_batch - 1 == 7
    assert big.n_branches == 63
    with pytest.raises(ValueError, match="branches"):
        with small.branches(8):
            pass
    small.truncate(0)
    small.eval([1, 2, 3])
    with small.branches(1) as [s]:
        small.fork(s, 3)
        with pytest.raises(ValueError, match="context"):
            small.eval_branches([([s], [5] * small.n_ctx, False)])
    assert small.tokens == [1, 2, 3]


# (threads, threads_batch, n_gpu_layers): the counts reach the context, and prompt evaluation
# with other thread counts (or an offload request, which a CPU-only build ignores) gives the
# same logits
THREAD_CASES = [(1, None, 0), (1, 2, 0), (2, 1, 0), (1, 1, -1), (1, 1, 4)]


@pytest.mark.parametrize("threads, threads_batch, gpu_layers", THREAD_CASES)
def test_thread_counts_and_offload_reach_the_context(runtimes, fixture_model_path, threads,
                                                     threads_batch, gpu_layers):
    reference = runtimes[1]
    ids = reference.tokenize(b"Prompt evaluation on its own threads. " * 4, add_special=True,
                             parse_special=False)
    reference.truncate(0)
    want = reference.eval(ids)
    rt = LlamaRuntime(str(fixture_model_path), n_ctx=256, n_batch=128, n_threads=threads,
                      n_threads_batch=threads_batch, n_gpu_layers=gpu_layers)
    try:
        assert rt.n_threads == threads
        assert rt.n_threads_batch == (threads_batch or threads)
        assert rt.n_gpu_layers == gpu_layers
        assert np.allclose(rt.eval(ids), want, atol=1e-3)
    finally:
        rt.close()


def test_serve_passes_the_thread_and_offload_options(monkeypatch):
    """`llamay serve --threads-batch N --n-gpu-layers K` (or LLAMAY_N_GPU_LAYERS) reach the
    settings the app loads its model with."""
    from click.testing import CliRunner

    from server.cli import main
    seen = {}

    def fake_create_app(settings):
        seen.update(threads_batch=settings.n_threads_batch, gpu_layers=settings.n_gpu_layers)
        raise FileNotFoundError("stop here")
    monkeypatch.setattr("server.api.app.create_app", fake_create_app)
    runner = CliRunner()
    r = runner.invoke(main, ["serve", "--threads-batch", "3", "--n-gpu-layers", "-1"])
    assert r.exit_code != 0 and seen == {"threads_batch": 3, "gpu_layers": -1}
    r = runner.invoke(main, ["serve"], env={"LLAMAY_N_GPU_LAYERS": "12"})
    assert seen == {"threads_batch": None, "gpu_layers": 12}
    r = runner.invoke(main, ["serve", "--threads-batch", "0"])
    assert r.exit_code == 2 and "--threads-batch" in r.output
