"""cengine inside transformers, SGLang and vLLM: tokens/s with and without a constraint, on a
small random Llama generated from a config (nothing downloaded).

    python scripts/bench_engines_gpu.py [--engines transformers,sglang,vllm] [--device cuda]
        [--batch 8] [--tokens 128] [--hidden 512] [--layers 4] [--tokenizer DIR]

Made for a machine with a GPU and the engines installed (`pip install sglang vllm`); on a CPU
only the transformers path runs (`--device cpu --engines transformers`). The model: a
LlamaForCausalLM of the given size, random weights (seed 0), saved with GPT-2's tokenizer
(transformers' conversion of llama.cpp's vocab file, or `--tokenizer DIR` for one saved
before, e.g. on a machine without the llama-cpp-python sdist) to a temporary folder, which
SGLang and vLLM load as a model. Each engine generates `--batch` sequences of `--tokens`
tokens (ignore_eos where the engine has it; the constraint's closer then ends the document)
twice, unconstrained and under one JSON schema through the llamay adapter:

- transformers: `generate()` with `cengine.contrib.hf.LogitsProcessor`;
- SGLang: `sglang.Engine(grammar_backend="llamay")`, the request's `json_schema`;
- vLLM: `vllm.LLM(logits_processors=[LlamayLogitsProcessor])`, `extra_args` with
  `llamay_json_schema`.

Prints one row per engine: completion tokens/s unconstrained, constrained, and the ratio. A
random model's constrained output is a valid document of random content, which is what the
mask costs are measured on.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 40},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 8},
    "score": {"type": "number"}}, "required": ["name", "tags", "score"]}
PROMPT = "Describe a city as JSON:"


def make_model(folder: Path, args) -> None:
    import torch
    import transformers
    if args.tokenizer:
        tok = transformers.AutoTokenizer.from_pretrained(args.tokenizer)
    else:
        from tests.material import vocab_gguf
        path = vocab_gguf("gpt-2")
        tok = transformers.PreTrainedTokenizerFast.from_pretrained(str(path.parent),
                                                                   gguf_file=path.name)
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=args.hidden, intermediate_size=args.hidden * 2,
        num_hidden_layers=args.layers, num_attention_heads=8, num_key_value_heads=4,
        max_position_embeddings=2048, eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id, torch_dtype="float16")
    transformers.LlamaForCausalLM(config).to(torch.float16).save_pretrained(folder)


def timed(fn, rounds: int = 3) -> tuple:
    """(tokens, seconds) of the fastest of `rounds` runs after a warm one (compiles, graphs,
    and the first visits of a grammar's states, which random content keeps finding)."""
    fn()
    best = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = fn()
        dt = time.perf_counter() - t0
        if best is None or n / dt > best[0] / best[1]:
            best = (n, dt)
    return best


def run_transformers(folder: Path, args) -> list:
    import torch
    import transformers

    import cengine
    from cengine.contrib.hf import LogitsProcessor, StoppingCriteria
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    dtype = torch.float16 if args.device != "cpu" else torch.float32
    model = transformers.LlamaForCausalLM.from_pretrained(folder, torch_dtype=dtype
                                                          ).to(args.device).eval()
    vocab = cengine.Vocabulary.from_hf_tokenizer(tok, vocab_size=model.config.vocab_size,
                                                 eos_ids=[tok.eos_token_id])
    grammar = cengine.compile_json_schema(SCHEMA)
    inputs = tok([PROMPT] * args.batch, return_tensors="pt", padding=True).to(args.device)

    def once(constrained: bool) -> int:
        extra = {}
        if constrained:
            proc = LogitsProcessor(grammar, vocab)
            extra = {"logits_processor": [proc], "stopping_criteria": [StoppingCriteria(proc)]}
        out = model.generate(**inputs, max_new_tokens=args.tokens, do_sample=True, top_k=0,
                             pad_token_id=tok.eos_token_id, **extra)
        new = out[:, inputs["input_ids"].shape[1]:]
        return int((new != tok.eos_token_id).sum())
    return [timed(lambda: once(c)) for c in (False, True)]


def run_sglang(folder: Path, args) -> list:
    import sglang

    from cengine.contrib import sglang as adapter
    adapter.register()
    engine = sglang.Engine(model_path=str(folder), grammar_backend="llamay",
                           mem_fraction_static=0.5, log_level="error")

    def once(constrained: bool) -> int:
        params = {"max_new_tokens": args.tokens, "temperature": 1.0}
        if constrained:
            params["json_schema"] = json.dumps(SCHEMA)
        else:
            params["ignore_eos"] = True
        outs = engine.generate([PROMPT] * args.batch, params)
        return sum(o["meta_info"]["completion_tokens"] for o in outs)
    try:
        return [timed(lambda: once(c)) for c in (False, True)]
    finally:
        engine.shutdown()


def run_vllm(folder: Path, args) -> list:
    import vllm

    from cengine.contrib.vllm import LlamayLogitsProcessor
    llm = vllm.LLM(model=str(folder), logits_processors=[LlamayLogitsProcessor],
                   gpu_memory_utilization=0.5, max_model_len=1024)

    def once(constrained: bool) -> int:
        extra = {"llamay_json_schema": json.dumps(SCHEMA)} if constrained else None
        params = vllm.SamplingParams(max_tokens=args.tokens, temperature=1.0,
                                     ignore_eos=not constrained, extra_args=extra)
        outs = llm.generate([PROMPT] * args.batch, params, use_tqdm=False)
        return sum(len(o.outputs[0].token_ids) for o in outs)
    return [timed(lambda: once(c)) for c in (False, True)]


RUNNERS = {"transformers": run_transformers, "sglang": run_sglang, "vllm": run_vllm}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engines", default="transformers,sglang,vllm")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--tokenizer", default=None, help="a saved tokenizer folder to use")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_model(folder, args)
        print(f"random Llama {args.layers} layers x {args.hidden}, batch {args.batch}, "
              f"{args.tokens} new tokens, device {args.device}\n")
        print("| engine | unconstrained tok/s | constrained tok/s | ratio |")
        print("|---|---:|---:|---:|")
        for name in args.engines.split(","):
            try:
                (free_n, free_s), (cons_n, cons_s) = RUNNERS[name](folder, args)
            except Exception as e:          # an engine that cannot start here: say so, go on
                print(f"| {name} | not run: {type(e).__name__}: {str(e)[:80]} | | |",
                      flush=True)
                continue
            a, b = free_n / free_s, cons_n / cons_s
            print(f"| {name} | {a:.0f} | {b:.0f} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
