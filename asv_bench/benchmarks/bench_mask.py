"""Per-token mask time at a mid-document state, and peak memory of a compile."""
import json

import numpy as np

from . import ROOT  # noqa: F401  (sets sys.path)

TOOLS = ROOT / "testdata" / "bench_schemas" / "tools"
# schemas cengine compiles today, with different shapes: flat enum/bool, free strings,
# array of objects, nested tool-call envelope with anyOf
SCHEMAS = ["get_weather", "edit_file", "create_chart", "multi_tool_call"]


def _load(name):
    d = json.loads((TOOLS / f"{name}.json").read_text(encoding="utf-8"))
    return d["parameters"], d["instances"][0]


_VOCAB = None


def _vocab():
    global _VOCAB
    if _VOCAB is None:
        import cengine
        from tests.material import vocab_gguf
        _VOCAB = cengine.Vocabulary.from_gguf(str(vocab_gguf("llama-bpe")))
        # what a server does at model load: trie, whitespace-run split, slices, shared tables
        cengine.prepare(_VOCAB)
    return _VOCAB


class MaskAtMidDocument:
    params = SCHEMAS
    param_names = ["schema"]
    timeout = 300

    def setup(self, name):
        import cengine
        schema, instance = _load(name)
        vocab = _vocab()
        self.grammar = cengine.compile_json_schema(schema, closed_objects=False)
        text = json.dumps(instance).encode()
        m = self.grammar.matcher(vocab)
        # walk byte by byte to the middle of the document (no tokenizer needed here)
        if not m.accept_bytes(text[:len(text) // 2]):
            raise RuntimeError(f"{name}: instance prefix refused")
        self.matcher = m
        self.out = np.zeros(cengine.mask_words(vocab.size), np.int32)
        # build the lazy token tables outside the timing (a first visit of a narrow position
        # walks the trie directly; the second builds its table)
        self.matcher.fill_mask(self.out)
        self.matcher.fill_mask(self.out)

    def time_fill_mask(self, name):
        self.matcher.fill_mask(self.out)

    def peakmem_compile(self, name):
        import cengine
        schema, _ = _load(name)
        cengine.CACHE.clear()
        cengine.compile_json_schema(schema, closed_objects=False)


class ColdDocument:
    """A fresh schema's whole document: compile, then per token a mask and the token, as
    MaskBench walks it (the first visit of every position builds or walks its table). The
    tokens are the bytes of json.dumps cut every 4 bytes (no tokenizer here), so the states
    masked are the ones a 4-byte tokenizer would reach. Includes the long bounded strings
    (summarize_document, maxLength 2000) and bounded numbers (book_flight)."""
    params = SCHEMAS + ["summarize_document", "book_flight"]
    param_names = ["schema"]
    timeout = 300

    def setup(self, name):
        import cengine
        self.schema, instance = _load(name)
        self.vocab = _vocab()
        text = json.dumps(instance).encode()
        self.pieces = [text[i:i + 4] for i in range(0, len(text), 4)]
        self.out = np.zeros(cengine.mask_words(self.vocab.size), np.int32)

    def time_compile_and_walk(self, name):
        import cengine
        cengine.CACHE.clear()
        m = cengine.compile_json_schema(self.schema, closed_objects=False).matcher(self.vocab)
        for piece in self.pieces:
            m.fill_mask(self.out)
            if not m.accept_bytes(piece):
                raise RuntimeError(f"{name}: piece refused")
