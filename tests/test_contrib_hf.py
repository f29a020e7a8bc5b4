"""cengine.contrib.hf in transformers' generate(): a tiny random LlamaForCausalLM built from a
config (no download) and a real tokenizer (GPT-2's, converted by transformers from llama.cpp's
vocab file). Every row's output, with the closer's suffix where the budget cut it, is a
document of its own constraint.

Needs torch, which is not in the test extra (the index's torch is 554 MB before its CUDA
packages): skipped without it. Run here with the CPU wheel (torch 2.13.0+cpu).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest

import cengine
import material

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from cengine.contrib.hf import LogitsProcessor, StoppingCriteria  # noqa: E402

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                           "days": {"type": "integer", "minimum": 1}},
          "required": ["city", "days"], "additionalProperties": False}
CALL = {"type": "object", "properties": {
    "name": {"const": "get_weather"},
    "arguments": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}},
                  "required": ["unit"], "additionalProperties": False}},
    "required": ["name", "arguments"], "additionalProperties": False}
GBNF = 'root ::= "yes" | "no" | "maybe " [0-9]'
REGEX = "[a-z]{2,5}-[0-9]{1,3}"


@pytest.fixture(scope="module")
def tokenizer():
    path = material.vocab_gguf("gpt-2")
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                               gguf_file=path.name)
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32,
                                      intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=256,
                                      eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.eos_token_id)
    return transformers.LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def vocab(tokenizer, model):
    return cengine.Vocabulary.from_hf_tokenizer(tokenizer, vocab_size=model.config.vocab_size,
                                                eos_ids=[tokenizer.eos_token_id])


def generate(model, tokenizer, vocab, grammars, prompts, *, max_new_tokens, seed=0,
             n_threads=1, stop=True):
    inputs = tokenizer(prompts, return_tensors="pt", padding=True)
    proc = LogitsProcessor(grammars, vocab, n_threads=n_threads)
    torch.manual_seed(seed)
    out = model.generate(**inputs, logits_processor=[proc], do_sample=True, top_k=0,
                         max_new_tokens=max_new_tokens,
                         stopping_criteria=[StoppingCriteria(proc)] if stop else None,
                         pad_token_id=tokenizer.eos_token_id)
    tails = proc.completions(out)
    texts = []
    for row, tail in zip(out.tolist(), tails):
        body = b""
        for t in row[proc.prompt_length:]:
            if t == tokenizer.eos_token_id:
                break
            body += cengine.plain_text(vocab.tokens[t])
        texts.append((body + tail).decode("utf-8"))
    return texts, proc, out


def check(kind, text):
    if kind == "schema":
        jsonschema.validate(json.loads(text), SCHEMA)
    elif kind == "call":
        jsonschema.validate(json.loads(text), CALL)
    elif kind == "gbnf":
        assert re.fullmatch(r"yes|no|maybe [0-9]", text), text
    else:
        assert re.fullmatch(REGEX, text), text


GRAMMARS = {"schema": lambda: cengine.compile_json_schema(SCHEMA),
            "call": lambda: cengine.compile_json_schema(CALL),
            "gbnf": lambda: cengine.compile_gbnf(GBNF),
            "regex": lambda: cengine.compile_regex(REGEX)}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_threads", [1, 4])
def test_a_batch_of_four_with_different_constraints(model, tokenizer, vocab, seed, n_threads):
    kinds = ["schema", "call", "gbnf", "regex"]
    texts, proc, _ = generate(model, tokenizer, vocab, [GRAMMARS[k]() for k in kinds],
                              ["Plan a trip:", "Call a tool:", "Answer:", "A code:"],
                              max_new_tokens=48, seed=seed, n_threads=n_threads)
    for kind, text in zip(kinds, texts):
        check(kind, text)


@pytest.mark.parametrize("budget", [1, 3, 6])
def test_a_budget_cut_is_closed_by_the_closer(model, tokenizer, vocab, budget):
    texts, proc, out = generate(model, tokenizer, vocab, GRAMMARS["schema"](),
                                ["Plan a trip:"] * 3, max_new_tokens=budget, stop=False)
    assert out.shape[1] - proc.prompt_length <= budget
    for text in texts:
        check("schema", text)
    assert any(proc.completions(out))       # at least one row was cut inside its document


def test_a_complete_document_stops_its_row(model, tokenizer, vocab):
    # "yes" / "no" end the document: the row stops there, without waiting for an end token
    texts, proc, out = generate(model, tokenizer, vocab, cengine.compile_gbnf(
        'root ::= "yes" | "no"'), ["Answer:"], max_new_tokens=40)
    assert texts[0] in ("yes", "no")
    assert out.shape[1] - proc.prompt_length < 40
    assert proc.done(0)


def test_num_return_sequences_share_their_prompts_grammar(model, tokenizer, vocab):
    inputs = tokenizer(["Plan a trip:", "Answer:"], return_tensors="pt", padding=True)
    proc = LogitsProcessor([GRAMMARS["schema"](), GRAMMARS["gbnf"]()], vocab)
    torch.manual_seed(3)
    out = model.generate(**inputs, logits_processor=[proc], do_sample=True, top_k=0,
                         num_return_sequences=2, max_new_tokens=32,
                         stopping_criteria=[StoppingCriteria(proc)],
                         pad_token_id=tokenizer.eos_token_id)
    tails = proc.completions(out)
    for i, (row, tail) in enumerate(zip(out.tolist(), tails)):
        body = b"".join(cengine.plain_text(vocab.tokens[t]) for t in
                        row[proc.prompt_length:] if t != tokenizer.eos_token_id)
        check("schema" if i < 2 else "gbnf", (body + tail).decode())


def test_a_token_the_grammar_refuses_is_an_error(tokenizer, vocab):
    proc = LogitsProcessor(cengine.compile_gbnf('root ::= "yes"'), vocab)
    ids = torch.tensor([[1, 2]])
    proc(ids, torch.zeros(1, vocab.size))
    bad = tokenizer.encode("no")[0]
    with pytest.raises(ValueError, match="not allowed"):
        proc(torch.tensor([[1, 2, bad]]), torch.zeros(1, vocab.size))


def test_importing_cengine_contrib_loads_no_torch():
    code = ("import sys, cengine, cengine.contrib; "
            "print(sorted(m for m in ('transformers', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
