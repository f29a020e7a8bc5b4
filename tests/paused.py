"""A compile held open in another thread (inside cengine.grammar.COLLECTOR_PAUSE), for the
tests of what the collector policy does while another compile runs."""
from __future__ import annotations

import contextlib
import threading

from cengine.grammar import COLLECTOR_PAUSE


@contextlib.contextmanager
def compile_running_elsewhere():
    """Inside the block another thread is within COLLECTOR_PAUSE; it leaves on exit."""
    inside, release = threading.Event(), threading.Event()

    def hold():
        with COLLECTOR_PAUSE:
            inside.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    inside.wait(5)
    try:
        yield
    finally:
        release.set()
        t.join(5)
