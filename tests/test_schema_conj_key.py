"""The number _conj_rule keys conjunctions by (one rule per distinct conjunction) stands for
json.dumps of the node: two values get the same number exactly when json.dumps writes them
alike, though the compiler numbers a container from its members' numbers and keeps the
numbers of the document's dicts and lists once per compile."""
import itertools
import json
import math

import pytest

from cengine import ir
from cengine.schema.compiler import _Compiler
from cengine.schema.drafts import Node

SHARED = {"type": "string", "enum": ["é", "\u2028", "a\"b"], "minLength": 1.0}

CASES = [
    Node(),
    Node({"allOf": [SHARED, {"type": "integer"}]}),
    Node({"allOf": [SHARED, SHARED], "x": [True, False, None, 1, -0.0, 1e300, math.inf]}),
    Node({"properties": {"a": Node({"const": math.nan}), "b": SHARED}, "required": ("a",)}),
    Node({"é\n": Node({"k": Node({})}), "n": 12345678901234567890, "f": 0.1}),
    Node({"nested": [[], {}, [SHARED, [SHARED]]]}),
    # containers the merges make: lists and maps holding nodes and the document's schemas
    Node({"allOf": [Node({"allOf": [SHARED, {"properties": {"p": Node({"k": [SHARED]}),
                                                             "q": SHARED}}]}),
                    {1: SHARED, "a": Node()}, (SHARED, Node({"t": (1, "x")})), [math.inf]]}),
]

# values json.dumps writes alike or apart by a hair: numbers and literals, key order, a
# tuple and a list, a node and a dict, keys that are numbers or literals, containers beside
# scalars
HAIRS = [
    1, 1.0, True, "1", None, "null", math.inf, -math.inf, math.nan, 0, -0.0, 0.0,
    [1], [1.0], (1,), [True], ["1"], [[1]], [(1,)], [[1.0]], [], (), {}, Node(),
    {"a": 1, "b": [2]}, {"b": [2], "a": 1}, Node({"a": 1, "b": [2]}), {"a": 1, "b": (2,)},
    {"a": [1]}, Node({"a": [1]}), {"a": (1,)}, {"a": [1.0]}, {"a": {"b": []}},
    {1: [2]}, {"1": [2]}, {1.0: [2]}, {True: [2]}, {"true": [2]}, {None: [2]}, {"null": [2]},
    {1: 2}, {"1": 2}, {1: 2, "1": 2}, {"1": [2], 1: [2]},
    [SHARED], [dict(SHARED)], [Node(SHARED)], {"x": SHARED}, {"x": dict(SHARED)},
    [SHARED, SHARED], ["a\"b"], ["é"], ["\u00e9"],
]


@pytest.mark.parametrize("node", CASES)
def test_conj_key_is_the_json_text(node):
    # equal numbers for equal texts, within one compiler: the node and a copy of it through
    # json, and a fresh node again (from the kept numbers)
    c = _Compiler(ir.GrammarIR(), {}, "s-", False)
    key = c._json_key(node)
    assert c._json_key(json.loads(json.dumps(node))) == key
    assert c._json_key(node) == key
    others = [c._json_key(x) for x in CASES if json.dumps(x) != json.dumps(node)]
    assert key not in others


def test_conj_key_tells_apart_what_json_writes_apart():
    c = _Compiler(ir.GrammarIR(), {}, "s-", False)
    for x, y in itertools.product(HAIRS, repeat=2):
        assert (c._json_key(x) == c._json_key(y)) == (json.dumps(x) == json.dumps(y)), (x, y)


def test_conj_key_of_a_kept_object_is_not_another_objects():
    # a kept number belongs to its object: another object at a reused id is numbered afresh
    c = _Compiler(ir.GrammarIR(), {}, "s-", False)
    keys = set()
    for i in range(50):
        d = {"minimum": i, "x": [i]}
        keys.add(c._json_key(Node({"allOf": [d]})))
    assert len(keys) == 50
