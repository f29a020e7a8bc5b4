"""The tiny random fixture model: loads in llama.cpp, gives logits, is reproducible."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

import fixture_model

llama_cpp = pytest.importorskip("llama_cpp")

N_VOCAB = 50257 + len(fixture_model.EXTRA_TOKENS)


@pytest.fixture(scope="module")
def llm_all_logits(fixture_model_path):
    # logits_all so that .scores holds a row per evaluated position
    return llama_cpp.Llama(model_path=str(fixture_model_path), n_ctx=256, logits_all=True,
                           seed=0, verbose=False)


def test_metadata(fixture_model_path):
    import gguf
    r = gguf.GGUFReader(str(fixture_model_path))
    f = r.fields
    assert f["general.architecture"].contents() == "llama"
    assert f["llama.block_count"].contents() == 2
    assert f["llama.embedding_length"].contents() == 64
    assert f["llama.attention.head_count"].contents() == 4
    assert f["llama.feed_forward_length"].contents() == 128
    assert f["llama.context_length"].contents() == 2048
    assert f["tokenizer.ggml.model"].contents() == "gpt2"
    assert len(f["tokenizer.ggml.tokens"].data) == N_VOCAB
    assert len(f["tokenizer.ggml.merges"].data) == 50000
    assert f["tokenizer.chat_template"].contents() == fixture_model.CHAT_TEMPLATE
    names = {t.name for t in r.tensors}
    assert "token_embd.weight" in names and "output.weight" in names
    assert {f"blk.{i}.ffn_down.weight" for i in range(2)} <= names


def test_loads_and_gives_logits(llm_all_logits):
    m = llm_all_logits
    assert m.n_vocab() == N_VOCAB
    m.reset()
    toks = m.tokenize(b"The capital of France is", add_bos=False)
    m.eval(toks)
    logits = np.asarray(m.scores[: m.n_tokens])
    assert logits.shape == (len(toks), N_VOCAB)
    assert np.isfinite(logits).all()
    # a random model, but not a degenerate one: rows differ and are not flat
    assert logits[-1].std() > 0.5
    assert not np.allclose(logits[-1], logits[-2])


def test_greedy_matches_argmax_and_is_deterministic(fixture_model_path, llm_all_logits):
    m = llm_all_logits
    prompt = b'{"name": "'
    m.reset()
    toks = m.tokenize(prompt, add_bos=False)
    m.eval(toks)
    expected_first = int(np.argmax(m.scores[m.n_tokens - 1]))

    def greedy(llm, n=16):
        llm.reset()
        got = []
        for t in llm.generate(toks, temp=0.0, top_k=1, reset=True):
            got.append(t)
            if len(got) == n:
                break
        return got

    a = greedy(m)
    b = greedy(m)
    other = llama_cpp.Llama(model_path=str(fixture_model_path), n_ctx=256, seed=123,
                            verbose=False)
    c = greedy(other)
    assert a[0] == expected_first
    assert a == b == c
    assert len(set(a)) > 1   # not stuck repeating one token


@pytest.mark.parametrize("special_text,kind", [
    ("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool_call>", 4), ("</tool_call>", 4),
])
def test_chatml_tokens_are_single_tokens(fixture_llama, special_text, kind):
    ids = fixture_llama.tokenize(special_text.encode(), add_bos=False, special=True)
    assert len(ids) == 1 and ids[0] >= 50257
    # user-defined tokens detokenize to their text even without special=True; control don't
    plain = fixture_llama.detokenize(ids, special=False)
    assert plain == (special_text.encode() if kind == 4 else b"")
    assert fixture_llama.detokenize(ids, special=True) == special_text.encode()


def test_eot_is_im_end(fixture_llama):
    im_end = fixture_llama.tokenize(b"<|im_end|>", add_bos=False, special=True)[0]
    eot = llama_cpp.llama_vocab_eot(llama_cpp.llama_model_get_vocab(fixture_llama.model))
    assert eot == im_end


def test_same_seed_same_bytes_other_seed_differs(tmp_path, fixture_model_path):
    a = fixture_model.build_fixture_model(tmp_path / "a.gguf")
    b = fixture_model.build_fixture_model(tmp_path / "b.gguf", seed=1)
    assert fixture_model.file_sha256(a) == fixture_model.file_sha256(fixture_model_path)
    assert fixture_model.file_sha256(b) != fixture_model.file_sha256(a)


def test_cache_key_depends_on_parameters():
    assert fixture_model.fixture_key() == fixture_model.fixture_key(seed=0)
    assert fixture_model.fixture_key() != fixture_model.fixture_key(seed=1)
    assert fixture_model.fixture_key() != fixture_model.fixture_key(n_layer=3)
    with pytest.raises(TypeError):
        fixture_model.fixture_key(n_layers=3)


def _generate_in(root):
    return str(fixture_model.fixture_model_path(cache_root=Path(root), n_layer=1))


def test_parallel_generation_is_atomic(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        paths = pool.map(_generate_in, [str(tmp_path)] * 2)
    assert paths[0] == paths[1]
    d = tmp_path / "fixtures"
    assert [p.name for p in d.glob("*.gguf")] == [Path(paths[0]).name]
    assert not list(d.glob("*.tmp"))
    llm = llama_cpp.Llama(model_path=paths[0], n_ctx=64, verbose=False)
    assert llm.n_vocab() == N_VOCAB


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def _render(trim: bool, **kw):
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=trim,
                                        lstrip_blocks=trim)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    return env.from_string(fixture_model.CHAT_TEMPLATE).render(**kw)


@pytest.mark.parametrize("trim", [True, False])
def test_chat_template_plain(trim):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    out = _render(trim, messages=msgs, add_generation_prompt=True)
    assert out == ("<|im_start|>system\nBe brief.<|im_end|>\n"
                   "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("trim", [True, False])
def test_chat_template_tools_and_tool_messages(trim):
    msgs = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "sunny"},
    ]
    out = _render(trim, messages=msgs, tools=TOOLS, add_generation_prompt=True)
    lines = out.split("\n")
    assert lines[0] == "<|im_start|>system"
    assert json.loads(lines[2]) == TOOLS[0]["function"]
    assert "<tool_call>{\"name\": <tool name>" in out
    assert ("<|im_start|>assistant\n<tool_call>{\"name\": \"get_weather\", \"arguments\": "
            "{\"city\": \"Paris\"}}</tool_call><|im_end|>\n") in out
    assert "<|im_start|>tool\n[get_weather] sunny<|im_end|>\n" in out
    assert out.endswith("<|im_start|>assistant\n")
    # the call rendered inside the template is itself valid JSON
    call = out.split("<tool_call>")[-1].split("</tool_call>")[0]
    assert json.loads(call) == {"name": "get_weather", "arguments": {"city": "Paris"}}


def test_chat_template_through_llama_cpp(fixture_llama):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    fmt = Jinja2ChatFormatter(template=fixture_model.CHAT_TEMPLATE, eos_token="<|endoftext|>",
                              bos_token="<|endoftext|>")
    r = fmt(messages=[{"role": "user", "content": "Hi"}], tools=TOOLS)
    assert r.prompt.startswith("<|im_start|>system\nYou can call these tools.")
    assert r.prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    fixture_llama.reset()
    res = fixture_llama.create_chat_completion(
        messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0.0)
    assert res["choices"][0]["finish_reason"] in ("length", "stop")
