"""One least-recently-used cache bounded by the bytes its values hold.

Both engine caches use it: compiled grammars (`cengine.CACHE`, a `GrammarCache`) and the mask
tables shared across grammars (`cengine._tables.SHARED_TABLES`). A value's size is taken once,
when it goes in, so eviction subtracts exactly what insertion added. Thread-safe; the value
itself is built outside the lock (`get_or_make`), so a slow compile never blocks readers.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Optional, Tuple, TypeVar

V = TypeVar("V")


class ByteLRU(Generic[V]):
    """LRU of values with an `nbytes()` method, holding at most `max_bytes` of them (the most
    recently used value always stays, however large)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: "OrderedDict[Hashable, Tuple[V, int]]" = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Optional[V]:
        """The value under key (now the most recently used), or None; counts a hit or a miss."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: V) -> V:
        """Store value under key unless a value is already there; returns the stored one."""
        size = value.nbytes()
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                return item[0]
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, (_, old_size) = self._items.popitem(last=False)
                self._bytes -= old_size
            return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value under key, made (outside the lock) and stored when absent. Two threads
        missing at once may both make it; the first stored wins and both return that one."""
        value = self.get(key)
        if value is None:
            value = self.put(key, make())
        return value

    def nbytes(self) -> int:
        """Bytes held, as the values reported them when they went in."""
        return self._bytes

    def values(self) -> list:
        with self._lock:
            return [v for v, _ in self._items.values()]

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
