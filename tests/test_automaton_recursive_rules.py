"""The inlining pass's recursion test (_build_inline._recursive_rules, Tarjan's components): a
rule is recursive exactly when it reaches itself, compared with a search from every rule on random
call graphs, and linear on a chain thousands of rules deep."""
import random

import pytest

from cengine._build_inline import _recursive_rules
# the oracle's: a search from every rule
from oracles.inline_reference import _recursive_rules as _reaches_itself


CASES = [
    ({"a": set()}, set()),
    ({"a": {"a"}}, {"a"}),
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, {"a", "b"}),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, set()),
    ({"a": {"b", "c"}, "b": {"c"}, "c": {"b"}, "d": {"d", "a"}}, {"b", "c", "d"}),
]


@pytest.mark.parametrize("refs,want", CASES)
def test_recursive_rules_cases(refs, want):
    assert _recursive_rules(refs) == want


def test_recursive_rules_match_a_search_from_every_rule():
    rng = random.Random(0)
    for _ in range(3000):
        n = rng.randint(1, 12)
        p = rng.random() * 0.4
        refs = {i: {j for j in range(n) if rng.random() < p} for i in range(n)}
        assert _recursive_rules(refs) == _reaches_itself(refs), refs


def test_recursive_rules_on_a_deep_chain():
    n = 50_000
    chain = {i: {i + 1} for i in range(n)}
    chain[n] = set()
    assert _recursive_rules(chain) == set()
    chain[n] = {0}
    assert len(_recursive_rules(chain)) == n + 1
