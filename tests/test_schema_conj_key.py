"""The text _conj_rule keys conjunctions by (one rule per distinct conjunction) is exactly
json.dumps of the node, though the compiler spells what it made (nodes, lists of containers,
dicts holding nodes) member by member and keeps the texts of dicts, lists and nodes once per
compile."""
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
    Node({1: Node({"a": [Node()]}), "b": {2: Node()}, "c": {"d": Node({3: [SHARED]})}}),
    # values json.dumps writes apart by a hair: numbers and literals, tuples, keys that are
    # numbers or literals
    Node({"v": [1, 1.0, True, "1", None, -0.0, math.nan, -math.inf, (1,), [(1.0,)]],
          "k": {1: [2], 1.5: [Node()], False: [Node()], None: Node(), "x": {"y": Node()}}}),
]


@pytest.mark.parametrize("node", CASES)
def test_conj_key_is_the_json_text(node):
    c = _Compiler(ir.GrammarIR(), {}, "s-", False)
    assert c._json_text(node) == json.dumps(node)
    assert c._json_text(node) == json.dumps(node)       # again, from the kept texts
    assert c._json_text(json.loads(json.dumps(node))) == json.dumps(node)


def test_conj_key_of_a_kept_object_is_not_another_objects():
    # a kept text belongs to its object: another object at a reused id is written afresh
    c = _Compiler(ir.GrammarIR(), {}, "s-", False)
    for i in range(50):
        d = {"minimum": i, "x": [Node({"i": i})]}
        assert c._json_text(Node({"allOf": [d]})) == json.dumps({"allOf": [d]})
