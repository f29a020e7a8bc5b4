"""Key languages and object parts shared across a grammar (cengine/schema/keys.py: one
hash-consed NFA per alphabet, DFA states off the names' trie shared; compiler: one rule per
equal member, extra member, object or array).

Two things per case: every key of a brute-force set gets the schema JSON Schema gives it
(a declared name its property, and the pattern's too if it matches, a key matching the
pattern the pattern's, any other key additionalProperties'), in every object of the
schema; and the grammar has fewer key-language rules than its objects compiled one by one
(the sharing happened)."""
from __future__ import annotations

import itertools
import json
import re

import pytest

import cengine
from cengine.schema import schema_to_ir

OPTIONS = dict(closed_objects=False, whitespace_budget=None)

# value schemas that tell the three cases apart: declared names take booleans, pattern keys
# integers, every other key strings
DECLARED, MATCHED, REST = {"type": "boolean"}, {"type": "integer"}, {"type": "string"}
SAMPLES = {"declared": True, "matched": 7, "rest": "s"}


def _object(names, pattern):
    return {"type": "object", "properties": {n: DECLARED for n in names},
            "patternProperties": {pattern: MATCHED}, "additionalProperties": REST}


def _schema(objects):
    """A root object whose members o0, o1, ... are the given objects (declared order)."""
    return {"type": "object", "properties": {f"o{i}": o for i, o in enumerate(objects)},
            "additionalProperties": False}


# the same names beside patterns none of them starts like: below the first character every
# key DFA state on the names' trie is (no pattern state, the same sub-trie) in every object
NAMES_ALIKE = ["tatatax", "xatatax", "ta_"]
PATTERNS_APART = ["^a$", "^b$", "^a_$"]

# (case, objects as (declared names, pattern)); the patterns of a case share tails or repeat
CASES = [
    ("same pattern, other names",
     [(["ta", "tab"], "^t_[ax]+$"), (["t_a", "xa"], "^t_[ax]+$"), ([], "^t_[ax]+$")]),
    ("patterns sharing a tail",
     [(["a"], "^(t_([ax]{1,2}(_x)?))$"), (["ta_"], "^(a_([ax]{1,2}(_x)?))$"),
      (["x"], "^(t_([ax]{1,2}(_x)?))$|^(a_([ax]{1,2}(_x)?))$")]),
    ("a loop after the prefix",
     [(["t"], "^t(_a|x)*$"), (["a_", "t_a"], "^a(_a|x)*$"), (["tx"], "^t(_a|x)*$")]),
    ("repeated objects",
     [(["ab"], "^a"), (["ab"], "^a"), (["b"], "^a")]),
    ("names alike, patterns apart", [(NAMES_ALIKE, p) for p in PATTERNS_APART]),
]

ALPHABET = "ta_x"
KEYS = ["".join(p) for n in range(6) for p in itertools.product(ALPHABET, repeat=n)]


def _expected(names, pattern, key) -> str:
    matched = re.search(pattern, key) is not None
    if key in names:
        # a declared name the pattern matches takes both schemas: boolean and integer
        return "none" if matched else "declared"
    return "matched" if matched else "rest"


def _accepts(g, doc) -> bool:
    m = g.matcher()
    return m.accept_bytes(json.dumps(doc).encode()) and m.is_accepting()


@pytest.mark.parametrize("order", ["any", "declared"])
@pytest.mark.parametrize("case, objects", CASES, ids=[c[0] for c in CASES])
def test_schema_key_sharing_language(case, objects, order):
    g = cengine.Grammar.from_ir(schema_to_ir(
        _schema([_object(n, p) for n, p in objects]), property_order=order, **OPTIONS))
    for i, (names, pattern) in enumerate(objects):
        for key in KEYS:
            want = _expected(names, pattern, key)
            for kind, value in SAMPLES.items():
                doc = {f"o{i}": {key: value}}
                assert _accepts(g, doc) == (kind == want), (case, i, key, kind)


def _key_rules(schema) -> int:
    """Rules of a grammar made for key languages (named <place>-key, <place>-key-<n>)."""
    g = schema_to_ir(schema, property_order="any", **OPTIONS)
    return sum(1 for n in g.rules if re.search(r"-key(-\d+)?$", n))


@pytest.mark.parametrize("case, objects", CASES, ids=[c[0] for c in CASES])
def test_schema_key_sharing_fewer_rules(case, objects):
    together = _key_rules(_schema([_object(n, p) for n, p in objects]))
    alone = sum(_key_rules(_schema([_object(n, p)])) for n, p in objects)
    # one rule per live DFA state of each object's two key languages, when nothing is shared
    assert together < alone, (together, alone)


def test_schema_key_sharing_names_trie():
    """States on the names' trie are shared by objects whose names (below a node) are the
    same: the objects after the first add less than half of the rules they make alone."""
    objects = [(NAMES_ALIKE, p) for p in PATTERNS_APART]
    together = _key_rules(_schema([_object(n, p) for n, p in objects]))
    alone = [_key_rules(_schema([_object(n, p)])) for n, p in objects]
    assert together - alone[0] < sum(alone[1:]) / 2, (together, alone)
