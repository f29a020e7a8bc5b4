"""The floor of a mask on this machine, beside what masks cost, on the llama-bpe vocabulary
(128,256 tokens: a mask is 4,008 int32 words), one core.

- write: setting every word of a mask (numpy `fill`), the least any mask costs;
- copy: one table bitset copied into the mask (what a warm position with one table does);
- trie walk: a first visit that must walk the whole token trie: `AnyText()`'s first mask with
  nothing cached (the vocabulary's shared tables cleared), where every token is checked
  (UTF-8) and every one is allowed; then the same on a fresh grammar with the shared tables
  warm (a later request's);
- then, for scale, a warm mask, and the first masks of a bounded string (`maxLength` 100) and
  of an unbounded one, at its first and at its 40th character, cold and with the shared
  tables warm (the compile itself is not timed, only the fill).

Each figure is the median of --repeat runs (fresh grammars where it says first visit).

    python scripts/bench_mask_floor.py [--repeat 50]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def median_us(fn, repeat: int) -> float:
    """fn() returns the ns it timed itself, or None: the whole call is timed."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        own = fn()
        times.append(own if own is not None else time.perf_counter_ns() - t0)
    return float(np.median(times)) / 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args(argv)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import cengine
    from cengine import _trie
    from tests.material import vocab_gguf
    vocab = cengine.Vocabulary.from_gguf(vocab_gguf("llama-bpe"))
    cengine.prepare(vocab)
    words = cengine.mask_words(vocab.size)
    mask = np.zeros(words, np.int32)
    table = np.full(words, -1, np.int32)
    trie = _trie.trie_of(vocab)
    rows = []

    from cengine import _tables

    def first_fill(make, prefix=b"", cold=False):
        """The first mask of a fresh grammar at `prefix`: only the fill is timed. cold: the
        vocabulary's shared tables cleared too (what a process's very first request pays)."""
        def run():
            cengine.CACHE.clear()
            if cold:
                _tables.SHARED_TABLES.clear()
            m = make().matcher(vocab)
            if prefix:
                m.accept_bytes(prefix)
            t0 = time.perf_counter_ns()
            m.fill_mask(mask)
            return time.perf_counter_ns() - t0
        return run

    rows.append(("write a mask (numpy fill)", median_us(lambda: mask.fill(0), args.repeat)))
    rows.append(("copy one table bitset", median_us(lambda: np.copyto(mask, table),
                                                     args.repeat)))
    any_text = lambda: cengine.compile_structural(cengine.AnyText())     # noqa: E731
    rows.append((f"AnyText()'s first mask, cold: the shared tables rebuilt, the whole trie "
                 f"({trie.n_nodes:,} nodes) walked",
                 median_us(first_fill(any_text, cold=True), args.repeat)))
    rows.append(("AnyText()'s first mask, a fresh grammar, shared tables warm",
                 median_us(first_fill(any_text), args.repeat)))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    warm = cengine.compile_json_schema(schema).matcher(vocab)
    warm.accept_bytes(b'{"city": "Os')
    warm.fill_mask(mask)
    rows.append(("warm mask: inside a string of a compiled schema",
                 median_us(lambda: warm.fill_mask(mask), args.repeat)))
    for label, schema in (("unbounded string", {"type": "string"}),
                          ("string maxLength 100", {"type": "string", "maxLength": 100})):
        def make(schema=schema):
            return cengine.compile_json_schema(schema)
        for cold in (True, False):
            rows.append((f"{label}: first mask inside it, "
                         f"{'cold' if cold else 'a fresh grammar, shared tables warm'}",
                         median_us(first_fill(make, b'"', cold), args.repeat)))
            rows.append((f"{label}: the 40th character's mask, "
                         f"{'cold' if cold else 'a fresh grammar, shared tables warm'}",
                         median_us(first_fill(make, b'"' + b"a" * 39, cold), args.repeat)))
    print(f"llama-bpe, {vocab.size:,} tokens, {words:,} words a mask; median of "
          f"{args.repeat}, one core\n")
    print("| what | µs |\n|---|---:|")
    for name, us in rows:
        print(f"| {name} | {us:,.2f} |")


if __name__ == "__main__":
    main()
