"""How long cengine.alternatives.value_alternatives takes at a decision point.

    python scripts/bench_alternatives.py [--repeat 200] [--vocab llama-bpe]

Prints a markdown table: per case the number of alternatives found (or None) and the time per
call, median over --repeat calls, with the matcher's allowed_bytes() (the fast path) and
through the contract API only (copy/accept_bytes, 256 candidates a byte). With --vocab the
matchers are made with that vocabulary (tests/material.py downloads it) instead of byte-level.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cengine  # noqa: E402
from cengine.alternatives import value_alternatives  # noqa: E402

INTENTS10 = ["refund", "cancel_order", "track_package", "change_address", "billing_question",
             "technical_support", "product_information", "complaint", "compliment", "other"]


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


def tools_union(n):
    return {"anyOf": [obj(name={"const": f"tool_number_{i}"}, arguments={"type": "object"})
                      for i in range(n)]}


CASES = [
    ("10-value string enum in an object", obj(intent={"enum": INTENTS10}), b'{"intent":'),
    ("boolean member", obj(urgent={"type": "boolean"}), b'{"urgent":'),
    ("10-value number enum", obj(n={"enum": [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]}), b'{"n":'),
    ("64-value string enum", {"enum": [f"label_{i:02d}" for i in range(64)]}, b""),
    ("6-tool name (const-discriminated anyOf)", tools_union(6), b'{"name":'),
    ("free string (None)", obj(text={"type": "string"}), b'{"text":'),
    ("free number (None)", obj(x={"type": "number"}), b'{"x":'),
]


class ContractOnly:
    def __init__(self, m):
        self._m = m

    def copy(self):
        return ContractOnly(self._m.copy())

    def accept_bytes(self, data):
        return self._m.accept_bytes(data)

    def is_accepting(self):
        return self._m.is_accepting()


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        out.append(time.perf_counter() - t)
    return result, statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--vocab", default=None, help="a tests/material.py vocabulary, e.g. llama-bpe")
    args = ap.parse_args()
    vocab = None
    if args.vocab:
        sys.path.insert(0, str(ROOT / "tests"))
        from material import vocab_gguf
        vocab = cengine.Vocabulary.from_gguf(vocab_gguf(args.vocab))
    print(f"matcher: {'vocabulary ' + args.vocab if vocab else 'byte-level (no vocabulary)'}, "
          f"median of {args.repeat} calls\n")
    print("| decision point | alternatives | allowed_bytes path | contract API only |")
    print("|---|---|---|---|")
    for name, schema, prefix in CASES:
        m = cengine.compile_json_schema(schema).matcher(vocab)
        assert m.accept_bytes(prefix)
        result, fast = timed(lambda: value_alternatives(m), args.repeat)
        slow_result, slow = timed(lambda: value_alternatives(ContractOnly(m)),
                                  max(1, args.repeat // 10))
        assert slow_result == result
        count = "None" if result is None else str(len(result))
        print(f"| {name} | {count} | {fast * 1e3:.3f} ms | {slow * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
