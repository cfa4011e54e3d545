"""bench/capture_throughput.py's reading of each thread's CPU time (/proc, Linux)."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from bench.capture_throughput import thread_cpu_s

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_each_thread_is_named_and_its_cpu_time_grows_while_it_runs() -> None:
    done = threading.Event()
    other = threading.Thread(target=done.wait, daemon=True)
    other.start()
    native = f"{other.native_id} "
    before = thread_cpu_s(os.getpid())
    main = f"{threading.main_thread().native_id} "
    assert [t for t in before if t.startswith(native)], before  # "<tid> <the thread's name>"
    started = time.process_time()
    while time.process_time() - started < 0.3:  # the main thread burns 0.3 s of CPU
        pass
    after = thread_cpu_s(os.getpid())
    done.set()
    [key] = [t for t in after if t.startswith(main)]
    assert after[key] - before[key] >= 0.2  # clock ticks: 10 ms each


def test_a_process_that_is_gone_has_no_threads() -> None:
    assert thread_cpu_s(2**22 + 7) == {}  # above Linux's largest pid
