"""cengine.contrib.vllm against vLLM's own classes: the logits-processor plugin loaded by
vLLM's loader from its FQCN, built with a real VllmConfig (a tiny Llama config and GPT-2's
tokenizer saved to a folder; no weights), fed vLLM's BatchUpdates (added, removed, moved,
swapped) and SamplingParams with `extra_args`, and asked to validate params as vLLM's frontend
asks; the StructuredOutputBackend driven as vLLM's StructuredOutputManager drives one
(compile, fill_bitmask per request, accept_tokens, validate_tokens for drafts, rollback,
reset). Logits are random, so every valid document came from the masks alone.

Needs vllm (with torch), which the test extra does not install: skipped without it.
scripts/check_engine_adapters.sh builds the environment these ran in (docs/integrations.md).
"""
from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest

import cengine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("vllm.v1.structured_output.backend_types")
pytest.importorskip("gguf")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputOptions  # noqa: E402

from adapter_cases import GBNF, REGEX, SCHEMA, gbnf_ok, regex_ok  # noqa: E402
from adapter_cases import schema_ok as _schema_ok  # noqa: E402
from cengine.contrib import vllm as adapter  # noqa: E402

FQCN = "cengine.contrib.vllm:LlamayLogitsProcessor"
CHOICES = ["red", "green", "blue sky"]


CASES = [      # (extra_args, check of the finished text)
    ({"llamay_json_schema": json.dumps(SCHEMA)}, _schema_ok),
    ({"llamay_regex": REGEX}, regex_ok),
    ({"llamay_grammar": GBNF}, gbnf_ok),
    ({"llamay_choice": CHOICES}, lambda t: t in CHOICES),
    ({"llamay_structural_tag": json.dumps({"type": "structural_tag", "format": {
        "type": "tag", "begin": "<call>", "end": "</call>",
        "content": {"type": "json_schema", "json_schema": SCHEMA}}})},
     lambda t: t.startswith("<call>") and t.endswith("</call>") and _schema_ok(t[6:-7])),
]


@pytest.fixture(scope="module")
def tokenizer(gpt2_hf_tokenizer):
    return gpt2_hf_tokenizer


@pytest.fixture(scope="module")
def vllm_config(tokenizer, tmp_path_factory):
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer.save_pretrained(folder)
    transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=256,
                             eos_token_id=tokenizer.eos_token_id,
                             architectures=["LlamaForCausalLM"]).save_pretrained(folder)
    model = ModelConfig(model=str(folder), tokenizer=str(folder), max_model_len=256,
                        dtype="float32")
    return VllmConfig(model_config=model, device_config=DeviceConfig(device="cpu"))


@pytest.fixture(scope="module")
def lp():
    """vLLM's V1 logits-processor interface (vLLM <= 0.33)."""
    return pytest.importorskip("vllm.v1.sample.logits_processor")


@pytest.fixture()
def processor(lp, vllm_config):
    [cls] = lp._load_logitsprocs_by_fqcns([FQCN])     # vLLM's own loader
    return cls(vllm_config, torch.device("cpu"), False)


def _text(ids, vocab):
    return cengine.plain_text(b"".join(vocab.tokens[t] for t in ids)).decode("utf-8")


def _run(proc, builder, outputs, *, seed, steps=300, eos_bias=2.0, alive=None):     # V1
    """The model runner's loop: update_state (with the batch update, if any), apply to the
    batch's logits, sample, append to each request's output list."""
    gen = torch.Generator().manual_seed(seed)
    alive = set(range(len(outputs))) if alive is None else alive
    eos = proc.tokenizer.eos_token_id
    for _ in range(steps):
        proc.update_state(builder.get_and_reset(len(outputs)))
        if not alive:
            break
        logits = torch.randn(len(outputs), proc.vocab_size, generator=gen) * 3
        logits[:, eos] += eos_bias
        proc.apply(logits)
        picks = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0].tolist()
        for b in sorted(alive):
            outputs[b].append(picks[b])
            if picks[b] == eos:
                alive.discard(b)
    proc.update_state(builder.get_and_reset(len(outputs)))      # the last tokens, synced
    return outputs


def test_plugin_loads_and_is_a_vllm_logits_processor(lp, processor):
    assert isinstance(processor, lp.LogitsProcessor)
    assert processor.vocab_size == 50257 and processor.tokenizer.eos_token_id in processor.eos_ids
    assert not processor.is_argmax_invariant()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_of_every_kind_gives_valid_documents(lp, processor, seed):
    builder = lp.BatchUpdateBuilder()
    outputs = [[] for _ in CASES]
    for i, (extra, _) in enumerate(CASES):
        builder.added.append((i, SamplingParams(extra_args=extra, max_tokens=300), [1], outputs[i]))
    _run(processor, builder, outputs, seed=seed)
    for (extra, check), out in zip(CASES, outputs):
        assert out[-1] == processor.tokenizer.eos_token_id, extra
        vocab = processor.slots[outputs.index(out)].matcher.vocab
        assert check(_text(out[:-1], vocab)), extra


def test_unconstrained_rows_are_left_alone(lp, processor):
    builder = lp.BatchUpdateBuilder()
    outputs = [[], []]
    builder.added.append((0, SamplingParams(max_tokens=10), [1], outputs[0]))
    builder.added.append((1, SamplingParams(extra_args={"llamay_regex": "a+"}), [1], outputs[1]))
    processor.update_state(builder.get_and_reset(2))
    logits = torch.zeros(2, processor.vocab_size)
    processor.apply(logits)
    assert torch.isfinite(logits[0]).all()
    assert torch.isfinite(logits[1]).sum() < 100


def test_removed_moved_and_swapped_rows_follow_their_requests(lp, processor):
    builder = lp.BatchUpdateBuilder()
    outputs = [[], [], []]
    kinds = [{"llamay_regex": "x{3}"}, {"llamay_regex": "y{3}"}, {"llamay_regex": "z{3}"}]
    for i, extra in enumerate(kinds):
        builder.added.append((i, SamplingParams(extra_args=extra), [1], outputs[i]))
    processor.update_state(builder.get_and_reset(3))
    # request 0 finishes and leaves; 2 moves into its slot; then 1 and 0 swap
    builder.removed_append(0)
    builder.moved.append((2, 0, lp.MoveDirectionality.UNIDIRECTIONAL))
    processor.update_state(builder.get_and_reset(2))
    builder.moved.append((0, 1, lp.MoveDirectionality.SWAP))
    processor.update_state(builder.get_and_reset(2))
    logits = torch.zeros(2, processor.vocab_size)
    processor.apply(logits)
    top = [processor.tokenizer.decode([int(i)]) for i in logits.argmax(-1)]
    allowed = [{processor.tokenizer.decode([int(t)]) for t in torch.isfinite(row).nonzero()}
               for row in logits]
    assert all(set(a) <= {"y"} for a in allowed[0]) and top[0].startswith("y")
    assert all(set(a) <= {"z"} for a in allowed[1]) and top[1].startswith("z")


@pytest.mark.parametrize("budget", [6, 10, 16])
def test_budget_cut_is_closed_inside_max_tokens(lp, processor, budget):
    """With llamay_close on (the default), the document is complete when max_tokens ends
    generation: the closer's ending takes the last tokens. The step loop stops at the budget,
    as vLLM's scheduler does. (The shortest document here takes 4 tokens: a smaller budget
    cannot hold one.)"""
    schema = {"type": "object", "properties": {"note": {"type": "string"}},
              "required": ["note"], "additionalProperties": False}
    builder = lp.BatchUpdateBuilder()
    outputs = [[]]
    builder.added.append((0, SamplingParams(extra_args={"llamay_json_schema": json.dumps(schema)},
                                            max_tokens=budget), [1], outputs[0]))
    for seed in range(3):
        outputs[0].clear()
        builder.added.append((0, SamplingParams(
            extra_args={"llamay_json_schema": json.dumps(schema)}, max_tokens=budget), [1],
            outputs[0]))
        _run(processor, builder, outputs, seed=seed, steps=budget, eos_bias=-50)
        out = outputs[0]
        assert len(out) <= budget
        ids = out[:-1] if out[-1] == processor.tokenizer.eos_token_id else out
        jsonschema.validate(json.loads(_text(ids, processor.slots[0].matcher.vocab)), schema)


def test_budget_cut_without_the_closer_is_left_open(lp, processor):
    schema = {"type": "object", "properties": {"note": {"type": "string"}},
              "required": ["note"]}
    builder = lp.BatchUpdateBuilder()
    outputs = [[]]
    builder.added.append((0, SamplingParams(extra_args={
        "llamay_json_schema": json.dumps(schema), "llamay_close": 0}, max_tokens=4), [1],
        outputs[0]))
    _run(processor, builder, outputs, seed=0, steps=4, eos_bias=-50)
    assert not processor.slots[0].matcher.is_accepting()


@pytest.mark.parametrize("extra, word", [
    ({"llamay_json_schema": json.dumps({"type": "string", "pattern": "(?=a)"})}, "pattern"),
    ({"llamay_grammar": "root ::= nowhere"}, "nowhere"),
    ({"llamay_choice": []}, "choice"),
    ({"llamay_regex": "a", "llamay_grammar": 'root ::= "a"'}, "one llamay constraint"),
    ({"llamay_regex": "a", "llamay_close": "maybe"}, "llamay_close is 1 or 0"),
])
def test_validate_params_refuses_as_vllm_frontend_asks(lp, extra, word):
    from vllm.exceptions import VLLMValidationError
    with pytest.raises(VLLMValidationError, match=re.escape(word)):
        lp.validate_logits_processors_parameters([FQCN], SamplingParams(extra_args=extra))
    lp.validate_logits_processors_parameters([FQCN], SamplingParams(
        extra_args={"llamay_regex": "a+"}))


# --- the StructuredOutputBackend ------------------------------------------------------------

@pytest.fixture()
def backend(vllm_config, tokenizer):
    return adapter.LlamayBackend(vllm_config, tokenizer, len(tokenizer))


@pytest.mark.parametrize("kind, spec, check", [
    (StructuredOutputOptions.JSON, json.dumps(SCHEMA), _schema_ok),
    (StructuredOutputOptions.JSON_OBJECT, "", lambda t: isinstance(json.loads(t), dict)),
    (StructuredOutputOptions.REGEX, REGEX, regex_ok),
    (StructuredOutputOptions.GRAMMAR, GBNF, lambda t: t in ("yes", "no") or t[:6] == "maybe "),
    (StructuredOutputOptions.CHOICE, json.dumps(CHOICES), lambda t: t in CHOICES),
])
def test_backend_as_the_structured_output_manager_drives_it(backend, tokenizer, kind, spec,
                                                            check):
    eos = tokenizer.eos_token_id
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.dtype == torch.int32 and bitmask.shape == (4, (len(tokenizer) + 31) // 32)
    grammar = backend.compile_grammar(kind, spec, stop_token_ids={eos})
    gen = torch.Generator().manual_seed(0)
    out = []
    while not grammar.is_terminated() and len(out) < 400:
        grammar.fill_bitmask(bitmask, 2)
        logits = torch.randn(1, len(tokenizer), generator=gen) * 3
        logits[0, eos] += 2
        adapter._apply(logits, bitmask[2:3])
        t = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
        # a draft of three tokens: validate_tokens leaves the state as it was
        assert grammar.validate_tokens([t, t, t])[:1] == [t]
        assert grammar.accept_tokens("req-0", [t])
        out.append(t)
    assert grammar.is_terminated() and out[-1] == eos
    assert check(_text(out[:-1], backend_vocab(grammar)))
    n = grammar.num_processed_tokens
    grammar.rollback(2)
    assert grammar.num_processed_tokens == n - 2 and not grammar.is_terminated()
    assert grammar.accept_tokens("req-0", out[-2:]) and grammar.is_terminated()
    grammar.reset()
    assert grammar.num_processed_tokens == 0 and not grammar.matcher.is_accepting() \
        or kind == StructuredOutputOptions.JSON_OBJECT


def backend_vocab(grammar):
    return grammar.vocab


def test_backend_refuses_what_it_cannot_enforce(backend):
    with pytest.raises(ValueError, match="Lark"):
        backend.compile_grammar(StructuredOutputOptions.GRAMMAR,
                                "start: NUMBER\n%import common.NUMBER")
    with pytest.raises(ValueError, match="minContains|contains"):
        backend.compile_grammar(StructuredOutputOptions.JSON, json.dumps(
            {"type": "array", "contains": {"type": "integer"}, "minContains": 2,
             "maxItems": 3}))


def test_backend_stop_tokens_end_the_document(backend, tokenizer):
    """vLLM passes the request's eos and stop tokens: each ends the document, once complete."""
    g = backend.compile_grammar(StructuredOutputOptions.REGEX, "ab", stop_token_ids={13})
    assert g.validate_tokens([13]) == []                        # not complete yet
    assert g.accept_tokens("r", tokenizer.encode("ab")) and not g.is_terminated()
    assert g.validate_tokens([tokenizer.eos_token_id]) == [tokenizer.eos_token_id]
    assert g.accept_tokens("r", [13]) and g.is_terminated()


# --- the V2 model runner's interface (vLLM >= 0.33) ------------------------------------------

class _Runner:
    """What vLLM's V2 model runner keeps and hands a logits processor: request slots, the
    token buffer (`all_token_ids`), prompt lengths, and each step's LogitsContext."""

    def __init__(self, v2, vocab_size, slots=4, max_len=512):
        from types import SimpleNamespace
        self.v2 = v2
        self.tokens = torch.zeros(slots, max_len, dtype=torch.int64)
        self.prompt = np.zeros(slots, np.int32)
        self.total = np.zeros(slots, np.int32)
        self.state = SimpleNamespace(
            device=torch.device("cpu"), max_num_reqs=slots, vocab_size=vocab_size,
            all_token_ids=SimpleNamespace(gpu=self.tokens),
            prompt_len=SimpleNamespace(np=self.prompt), prefill_len=SimpleNamespace(np=self.prompt),
            total_len=SimpleNamespace(gpu=torch.from_numpy(self.total)))

    def admit(self, procs, slot, params, prompt=(1, 2, 3)):
        self.tokens[slot, :len(prompt)] = torch.tensor(prompt)
        self.prompt[slot] = self.total[slot] = len(prompt)
        return [p.add_request(slot, params) for p in procs]

    def ctx(self, slots, drafts=None):
        """One logits row per slot (at its last token), plus draft rows after it."""
        drafts = drafts or {}
        mapping, local, ids, pos = [], [], [], []
        for s in slots:
            p = int(self.total[s]) - 1
            mapping.append(s), local.append(0), ids.append(int(self.tokens[s, p])), pos.append(p)
            for k, t in enumerate(drafts.get(s, ()), 1):
                mapping.append(s), local.append(k), ids.append(t), pos.append(p + k)
        t = lambda x: torch.tensor(x, dtype=torch.int64)      # noqa: E731
        return self.v2.LogitsContext(
            expanded_idx_mapping=t(mapping), idx_mapping=t(list(slots)),
            idx_mapping_np=np.array(slots), expanded_local_pos=t(local), input_ids=t(ids),
            pos=t(pos), seq_lens_upper_bound_np=self.total[list(slots)] + 1)

    def commit(self, slot, token):
        self.tokens[slot, self.total[slot]] = token
        self.total[slot] += 1

    def output(self, slot):
        return self.tokens[slot, self.prompt[slot]:self.total[slot]].tolist()


@pytest.fixture(scope="module")
def v2():
    return pytest.importorskip("vllm.v1.worker.gpu.sample.logits_processor")


@pytest.fixture()
def runner_and_proc(v2, vllm_config, tokenizer):
    runner = _Runner(v2, len(tokenizer))
    procs = v2.build_custom_logits_processors(vllm_config, runner.state, False, [FQCN])
    [proc] = [p for p in procs if isinstance(p, adapter.LlamayLogitsProcessor)]
    return runner, proc


def _step(runner, proc, slots, gen, eos_bias=2.0, drafts=None):
    ctx = runner.ctx(slots, drafts)
    logits = torch.randn(len(ctx.expanded_idx_mapping), proc.vocab_size, generator=gen) * 3
    logits[:, proc.tokenizer.eos_token_id] += eos_bias
    out = proc.apply(logits, ctx)
    return out, ctx


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_v2_batch_of_every_kind_gives_valid_documents(runner_and_proc, seed):
    runner, proc = runner_and_proc
    assert isinstance(proc, adapter.LlamayLogitsProcessor) and proc.v2
    eos = proc.tokenizer.eos_token_id
    gen = torch.Generator().manual_seed(seed)
    cases = CASES[:4]
    for slot, (extra, _) in enumerate(cases):
        assert runner.admit([proc], slot, SamplingParams(extra_args=extra, max_tokens=300)) \
            == [True]
    live = list(range(len(cases)))
    for _ in range(300):
        if not live:
            break
        logits, ctx = _step(runner, proc, live, gen)
        picks = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0].tolist()
        for slot, t in zip(live, picks):
            runner.commit(slot, t)
        live = [s for s in live if runner.output(s)[-1] != eos]
    for slot, (extra, check) in enumerate(cases):
        out = runner.output(slot)
        assert out[-1] == eos, extra
        assert check(_text(out[:-1], proc.slots[slot].matcher.vocab)), extra


def test_v2_rows_without_a_key_are_declined_and_left_alone(runner_and_proc):
    runner, proc = runner_and_proc
    assert runner.admit([proc], 0, SamplingParams(max_tokens=5)) == [False]
    assert runner.admit([proc], 1, SamplingParams(extra_args={"llamay_regex": "a+"})) == [True]
    logits, _ = _step(runner, proc, [0, 1], torch.Generator().manual_seed(0))
    assert torch.isfinite(logits[0]).all() and torch.isfinite(logits[1]).sum() < 100
    # a recycled slot is re-initialised by add_request
    assert runner.admit([proc], 1, SamplingParams()) == [False]
    logits, _ = _step(runner, proc, [1], torch.Generator().manual_seed(0))
    assert torch.isfinite(logits).all()


def test_v2_reads_a_gap_from_the_token_buffer_and_rolls_back_rejected_drafts(
        runner_and_proc, tokenizer):
    runner, proc = runner_and_proc
    runner.admit([proc], 2, SamplingParams(extra_args={"llamay_regex": "abc(x|y)+"}))
    for t in tokenizer.encode("ab"):            # committed while no step reached us
        runner.commit(2, t)
    _step(runner, proc, [2], torch.Generator().manual_seed(0))
    row = proc.slots[2]
    assert row.fed == len(tokenizer.encode("ab"))
    assert row.matcher.completion() == b"cx"
    # two drafts after "c": row k's mask is the state after the drafts before it
    c, x, bad = tokenizer.encode("c")[0], tokenizer.encode("x")[0], tokenizer.encode("q")[0]
    runner.commit(2, c)
    logits, ctx = _step(runner, proc, [2], torch.Generator().manual_seed(0),
                        drafts={2: [x, bad]})
    allowed = [set(torch.isfinite(r).nonzero()[:, 0].tolist()) for r in logits]
    assert x in allowed[0] and bad not in allowed[0]
    assert x in allowed[1] and tokenizer.eos_token_id in allowed[1]
    assert torch.isfinite(logits[2]).all()      # after a refused draft: left for rejection
    # the verifier accepted x; then the runner takes it back (a rejected draft)
    n_ab = len(tokenizer.encode("ab"))
    runner.commit(2, x)
    _step(runner, proc, [2], torch.Generator().manual_seed(0))
    assert proc.slots[2].accepted == n_ab + 2
    runner.total[2] -= 1
    _step(runner, proc, [2], torch.Generator().manual_seed(0))
    assert proc.slots[2].fed == n_ab + 1 and proc.slots[2].matcher.completion() == b"x"


@pytest.mark.parametrize("budget", [6, 10, 16])
def test_v2_budget_cut_is_closed_inside_max_tokens(runner_and_proc, budget):
    runner, proc = runner_and_proc
    schema = {"type": "object", "properties": {"note": {"type": "string"}},
              "required": ["note"], "additionalProperties": False}
    eos = proc.tokenizer.eos_token_id
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        runner.admit([proc], 0, SamplingParams(
            extra_args={"llamay_json_schema": json.dumps(schema)}, max_tokens=budget))
        while len(runner.output(0)) < budget and (not runner.output(0)
                                                  or runner.output(0)[-1] != eos):
            logits, _ = _step(runner, proc, [0], gen, eos_bias=-50)
            runner.commit(0, int(torch.multinomial(torch.softmax(logits, -1), 1,
                                                   generator=gen)[0, 0]))
        out = runner.output(0)
        ids = out[:-1] if out[-1] == eos else out
        jsonschema.validate(json.loads(_text(ids, proc.slots[0].matcher.vocab)), schema)


def test_v2_params_validator_refuses(v2):
    from vllm.exceptions import VLLMValidationError
    validate = v2.build_custom_logits_processors_params_validator([FQCN])
    with pytest.raises(VLLMValidationError, match="pattern"):
        validate(SamplingParams(extra_args={"llamay_json_schema": json.dumps(
            {"type": "string", "pattern": "(?=a)"})}))
    validate(SamplingParams(extra_args={"llamay_regex": "a+"}))
