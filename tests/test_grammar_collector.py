"""cengine.freeze_after_compiles: after a compile (none other running) the collector collects,
then freezes what survives; garbage is collected, never frozen; off by default, and a caller
that disabled the collector is left alone."""
import gc
import weakref

import pytest

import cengine
from cengine.grammar import GrammarCache
from cengine.regex import regex_to_ir
from paused import compile_running_elsewhere


class Node:
    pass


@pytest.fixture(autouse=True)
def restore_collector():
    was = gc.isenabled()
    yield
    cengine.freeze_after_compiles(False)
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def garbage_cycle() -> weakref.ref:
    """A cycle that only the collector can free, made while it cannot run."""
    gc.disable()
    node = Node()
    node.me = node
    ref = weakref.ref(node)
    del node
    return ref


def compile_fresh(fails=False):
    def build():
        if fails:
            raise cengine.CompileError("no")
        return cengine.Grammar.from_ir(regex_to_ir("a+b"))
    try:
        GrammarCache(1 << 20).get_or_compile(("k",), build)
    except cengine.CompileError:
        pass


# (name, freeze_after_compiles, collector enabled by the caller, the compile fails,
#  objects frozen, the earlier garbage cycle freed)
CASES = [
    ("off: nothing frozen", False, True, False, False, None),
    ("on: collected, then frozen", True, True, False, True, True),
    ("on, the compile fails: the same", True, True, True, True, True),
    ("on, collector disabled by the caller: left alone", True, False, False, False, False),
]


@pytest.mark.parametrize("name,on,enabled,fails,frozen,freed", CASES, ids=[c[0] for c in CASES])
def test_freeze_after_compiles(name, on, enabled, fails, frozen, freed):
    gc.collect()
    gc.unfreeze()
    cengine.freeze_after_compiles(on)
    ref = garbage_cycle()
    (gc.enable if enabled else gc.disable)()
    compile_fresh(fails)
    assert (gc.get_freeze_count() > 0) == frozen
    assert gc.isenabled() == enabled
    if freed is not None:
        assert (ref() is None) == freed


def test_no_freeze_while_another_compile_runs():
    # a compile still running holds half-built IR: freezing it would keep its cycles forever
    gc.collect()
    gc.unfreeze()
    gc.enable()
    cengine.freeze_after_compiles(True)
    counts = []
    with compile_running_elsewhere():
        compile_fresh()
        counts.append(gc.get_freeze_count())
    counts.append(gc.get_freeze_count())
    assert counts[0] == 0 and counts[1] > 0


# schemas whose compiles go through every recursive helper of the front end and the build:
# any-order object states, array tails, the free-key trie of an open object, the length
# counter, productive_rules, the inlining pass
NO_CYCLE_CASES = [
    ("any-order object", {"type": "object", "properties": {"a": {"type": "integer"},
                                                          "b": {"type": "string"}},
                          "required": ["a"]}, "any"),
    ("declared object", {"type": "object", "properties": {"a": {"type": "boolean"}}},
     "declared"),
    ("prefix items", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "null"}],
                      "maxItems": 4}, "any"),
    ("long string", {"type": "string", "minLength": 5000, "maxLength": 32767}, "any"),
    ("anything", True, "any"),
]


@pytest.mark.parametrize("label, schema, order", NO_CYCLE_CASES, ids=[c[0] for c in NO_CYCLE_CASES])
def test_compile_leaves_no_cyclic_garbage(label, schema, order):
    # Why: a compile's IR left in a reference cycle stays until a full collection walks it
    # (hundreds of thousands of objects on large schemas, on whatever thread allocates next)
    cengine.compile_json_schema({"type": "object"}, closed_objects=False)  # imports, caches
    gc.collect()
    gc.disable()
    cengine.CACHE.clear()
    g = cengine.compile_json_schema(schema, closed_objects=False, property_order=order)
    assert g.automaton.n_positions > 0
    del g
    cengine.CACHE.clear()
    assert gc.collect() == 0
