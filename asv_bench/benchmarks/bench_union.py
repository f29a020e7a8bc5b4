"""A union of N tool schemas as the server composes it (server/tools/hermes.py), and an enum
of N strings: compile, first mask, masks along a call, peak memory, as N grows.

The tools are scripts/bench_union.py's: testdata/bench_schemas/tools in name order (those
llamay compiles), cycled with suffixed names past the end. scripts/bench_union.py prints the
same measurements beside llguidance's."""
import json

import numpy as np

from . import ROOT  # noqa: F401  (sets sys.path)

WHITESPACE_BUDGET = 64
MAX_DEPTH = 64

_STATE = {}


def _env():
    if not _STATE:
        import cengine
        import bench_union
        from tests.material import vocab_gguf
        vocab = cengine.Vocabulary.from_gguf(str(vocab_gguf("llama-bpe")))
        cengine.prepare(vocab)
        _STATE.update(vocab=vocab, defs=bench_union.tool_files(cengine), bu=bench_union)
    return _STATE


def _cold():
    import cengine
    from cengine import _tables
    cengine.CACHE.clear()
    _tables.SHARED_TABLES.clear()


class ToolUnion:
    params = [1, 4, 16, 64]
    param_names = ["tools"]
    timeout = 600

    def setup(self, n):
        import cengine
        env = _env()
        self.vocab = env["vocab"]
        tools = env["bu"].tool_specs(env["defs"], n)
        self.part = env["bu"].union_ours(cengine, tools)
        # the last tool's call: the masks past the name are inside the union's last branch
        name, _, inst = tools[-1]
        self.text = env["bu"].call_text(name, inst).encode()
        self.out = np.zeros(cengine.mask_words(self.vocab.size), np.int32)

    def _compile(self):
        import cengine
        return cengine.compile_structural(self.part, whitespace_budget=WHITESPACE_BUDGET,
                                          max_depth=MAX_DEPTH)

    def time_compile_first_mask(self, n):
        _cold()
        self._compile().matcher(self.vocab).fill_mask(self.out)

    def time_walk_call(self, n):
        # compile (cold) and mask every 4-byte piece of one call, as a request does
        _cold()
        m = self._compile().matcher(self.vocab)
        for i in range(0, len(self.text), 4):
            m.fill_mask(self.out)
            if not m.accept_bytes(self.text[i:i + 4]):
                raise RuntimeError("call refused")

    def peakmem_compile(self, n):
        _cold()
        self._compile().matcher(self.vocab).fill_mask(self.out)


class LargeEnum:
    params = [100, 1000, 3000, 10000, 20000]
    param_names = ["values"]
    timeout = 600

    def setup(self, n):
        import cengine
        env = _env()
        self.vocab = env["vocab"]
        values = env["bu"].enum_values(n)
        self.schema = {"enum": values}
        self.text = json.dumps(values[n // 2]).encode()
        self.out = np.zeros(cengine.mask_words(self.vocab.size), np.int32)

    def _compile(self):
        import cengine
        return cengine.compile_json_schema(self.schema, closed_objects=False,
                                           whitespace_budget=None)

    def time_compile_first_mask(self, n):
        _cold()
        self._compile().matcher(self.vocab).fill_mask(self.out)

    def time_walk_value(self, n):
        _cold()
        m = self._compile().matcher(self.vocab)
        for i in range(0, len(self.text), 4):
            m.fill_mask(self.out)
            if not m.accept_bytes(self.text[i:i + 4]):
                raise RuntimeError("value refused")

    def peakmem_compile(self, n):
        _cold()
        self._compile().matcher(self.vocab).fill_mask(self.out)
