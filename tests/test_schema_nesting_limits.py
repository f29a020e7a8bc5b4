"""Nesting past what a compile can follow is a LimitError, never a crash or a RecursionError.

A `$ref` chain nests deep in a shallow document (the server's bound on a schema's nesting
does not see it), and the front end recurses once per subschema: a RecursionError anywhere in
a compile (grammar.GrammarCache.get_or_compile; the cache key's JSON text of a schema nested
~1,000 deep in compile_json_schema) becomes a LimitError, which the server answers with a
400. GBNF groups are bounded like regex groups (`gbnf.MAX_GROUP_DEPTH`). The chains run in a
child process, on a thread (the server compiles on threads), so that a crash fails the test
instead of ending the run.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cengine
from cengine import gbnf

# (shape, one link of the chain: the schema a{i} with r the reference to a{i+1})
CHAIN_SHAPES = [
    ("alias", 'R'),
    ("items", '{"type": "array", "items": R}'),
    ("not", '{"not": R}'),
    ("anyOf", '{"anyOf": [R, {"type": "null"}]}'),
    ("properties", '{"type": "object", "properties": {"x": R}}'),
    ("dependentSchemas", '{"type": "object", "dependentSchemas": {"x": R}}'),
    ("contains", '{"type": "array", "contains": R}'),
    ("additionalProperties", '{"type": "object", "additionalProperties": R}'),
    ("prefixItems", '{"type": "array", "prefixItems": [R]}'),
    ("allOf", '{"allOf": [R, {"type": "array"}]}'),
    ("oneOf", '{"oneOf": [R, {"type": "null"}]}'),
]

_CHILD = r"""
import json, sys, threading
import cengine
link, n = sys.argv[1], int(sys.argv[2])
defs = {f"a{i}": json.loads(link.replace("R", json.dumps({"$ref": f"#/$defs/a{i + 1}"})))
        for i in range(n)}
defs[f"a{n}"] = {"type": "string"}
out = {}
def run():
    try:
        cengine.compile_json_schema({"$defs": defs, "$ref": "#/$defs/a0"}, max_depth=1 << 20)
        out["result"] = "compiled"
    except cengine.CompileError as e:
        out["result"] = type(e).__name__ + ": " + str(e)
    except BaseException as e:
        out["result"] = "UNEXPECTED " + type(e).__name__ + ": " + str(e)
t = threading.Thread(target=run)
t.start(); t.join()
print(json.dumps(out))
"""


def _chain(link: str, n: int) -> str:
    done = subprocess.run([sys.executable, "-c", _CHILD, link, str(n)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])["result"]


@pytest.mark.parametrize("shape,link", CHAIN_SHAPES, ids=[s for s, _ in CHAIN_SHAPES])
def test_schema_ref_chains_are_refused_not_crashed(shape, link):
    # 20,000 links: a refusal of every shape (before, a RecursionError out of the compile)
    result = _chain(link, 20_000)
    assert result.startswith(("LimitError", "CompileError")), result
    if shape in ("alias", "items", "not", "anyOf", "properties", "additionalProperties"):
        assert result.startswith("LimitError") and "nests too deeply" in result, result


def test_schema_short_ref_chains_still_compile():
    assert _chain('{"type": "array", "items": R}', 100) == "compiled"


def test_schema_deeper_than_the_json_encoder_is_a_limit_error():
    schema: dict = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(cengine.LimitError, match="nests too deeply"):
        cengine.compile_json_schema(schema)


def test_recursion_error_inside_a_compile_is_a_limit_error(monkeypatch):
    from cengine import grammar

    def too_deep():
        raise RecursionError("maximum recursion depth exceeded")
    with pytest.raises(cengine.LimitError, match="nests too deeply"):
        grammar.CACHE.get_or_compile(("test", "recursion"), too_deep)


@pytest.mark.parametrize("depth,ok", [(gbnf.MAX_GROUP_DEPTH, True),
                                      (gbnf.MAX_GROUP_DEPTH + 1, False), (5000, False)])
def test_gbnf_group_nesting_is_bounded(depth, ok):
    text = "root ::= " + "(" * depth + '"a"' + ")" * depth
    if ok:
        assert cengine.compile_gbnf(text).matcher().accept_bytes(b"a")
        return
    with pytest.raises(cengine.LimitError, match=f"groups nest more than {gbnf.MAX_GROUP_DEPTH}") \
            as info:
        cengine.compile_gbnf(text)
    assert (info.value.line, info.value.column) == (1, 10 + gbnf.MAX_GROUP_DEPTH)
