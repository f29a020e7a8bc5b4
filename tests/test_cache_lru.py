"""cengine.lru.ByteLRU, the one byte-bounded LRU behind both engine caches (compiled grammars,
shared mask tables): eviction order, byte accounting, and the GrammarCache built on it."""
import threading

import pytest

import cengine
from cengine import _tables
from cengine.grammar import GrammarCache
from cengine.lru import ByteLRU
from cengine.regex import regex_to_ir
from paused import compile_running_elsewhere


class Sized:
    def __init__(self, n):
        self.n = n

    def nbytes(self):
        return self.n


# (name, max_bytes, operations: (key, size) puts or ("get KEY", 0), keys left, bytes left)
CASES = [
    ("fits", 100, [("a", 40), ("b", 50)], ["a", "b"], 90),
    ("oldest out first", 100, [("a", 40), ("b", 50), ("c", 30)], ["b", "c"], 80),
    ("a get makes it recent", 100, [("a", 40), ("b", 50), ("get a", 0), ("c", 30)],
     ["a", "c"], 70),
    ("the newest stays however large", 100, [("a", 40), ("big", 500)], ["big"], 500),
    ("a second put keeps the first value", 100, [("a", 40), ("a", 90)], ["a"], 40),
]


@pytest.mark.parametrize("name,max_bytes,ops,keys,nbytes", CASES, ids=[c[0] for c in CASES])
def test_lru_eviction_and_accounting(name, max_bytes, ops, keys, nbytes):
    lru = ByteLRU(max_bytes)
    for key, size in ops:
        if key.startswith("get "):
            assert lru.get(key[4:]) is not None
        else:
            lru.put(key, Sized(size))
    assert [k for k in keys if lru.get(k) is not None] == keys
    assert len(lru) == len(keys)
    assert lru.nbytes() == nbytes


def test_lru_sizes_are_taken_once():
    # a value that grows after it went in (tables are filled lazily) is evicted by the size
    # it was counted with, so the total never drifts
    lru = ByteLRU(100)
    v = Sized(60)
    lru.put("a", v)
    v.n = 1000
    lru.put("b", Sized(60))
    assert lru.get("a") is None and lru.nbytes() == 60


def test_lru_get_or_make_makes_once_and_counts():
    lru = ByteLRU(1 << 20)
    made = []

    def make():
        made.append(1)
        return Sized(10)

    first = lru.get_or_make("k", make)
    assert lru.get_or_make("k", make) is first
    assert made == [1]
    assert (lru.hits, lru.misses) == (1, 1)
    lru.clear()
    assert len(lru) == 0 and lru.nbytes() == 0


def test_lru_concurrent_makers_agree_on_one_value():
    lru = ByteLRU(1 << 20)
    barrier = threading.Barrier(4)
    got = []

    def worker():
        barrier.wait()
        got.append(lru.get_or_make("k", lambda: Sized(1)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(v) for v in got}) == 1


def test_grammar_cache_is_a_byte_lru():
    cache = GrammarCache(max_bytes=1)
    g1 = cache.get_or_compile("one", lambda: cengine.Grammar.from_ir(regex_to_ir("a+")))
    assert cache.get_or_compile("one", lambda: pytest.fail("compiled twice")) is g1
    cache.get_or_compile("two", lambda: cengine.Grammar.from_ir(regex_to_ir("b+")))
    # over budget: only the newest grammar stays, counted by its tables' bytes
    assert len(cache) == 1 and cache.nbytes() == cache.get("two").nbytes()


def test_shared_tables_use_the_byte_lru():
    assert isinstance(_tables.SHARED_TABLES, ByteLRU)
    assert _tables.shared_tables_nbytes() == _tables.SHARED_TABLES.nbytes()


# (collector enabled before, the compile raises) -> the collector is paused during the compile
# and left as it was found
PAUSE_CASES = [(True, False), (True, True), (False, False), (False, True)]


@pytest.mark.parametrize("enabled,fails", PAUSE_CASES)
def test_grammar_cache_pauses_the_collector_while_compiling(enabled, fails):
    import gc
    cache = GrammarCache(1 << 20)
    seen = []

    def build():
        seen.append(gc.isenabled())
        if fails:
            raise cengine.CompileError("no")
        return cengine.Grammar.from_ir(regex_to_ir("a+"))

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        if fails:
            with pytest.raises(cengine.CompileError):
                cache.get_or_compile(("k", enabled), build)
        else:
            cache.get_or_compile(("k", enabled), build)
        assert seen == [False]
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_collector_pause_nests_across_threads():
    import gc
    from cengine.grammar import COLLECTOR_PAUSE
    assert gc.isenabled()
    states = []
    with compile_running_elsewhere():
        with COLLECTOR_PAUSE:
            states.append(gc.isenabled())
        states.append(gc.isenabled())        # the other thread still compiles
    states.append(gc.isenabled())
    assert states == [False, False, True]
