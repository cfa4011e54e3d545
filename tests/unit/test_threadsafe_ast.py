"""dbt's threads parse Python literals at once (tidemark/threadsafe_ast.py, cpython#106905)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Four threads parse literals while the collector runs finalizers that let another thread in:
# on CPython 3.11 some parse fails with "AST constructor recursion depth mismatch".
RACE = """
import ast, gc, sys, threading, time
{setup}
class Yield:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it
    def __del__(self):
        time.sleep(0)  # lets another thread run inside the parse
errors = []
def work():
    text = "[" + ",".join("(%d, {{'a': [%d]}})" % (i, i) for i in range(200)) + "]"
    for _ in range(40):
        Yield()
        try:
            assert ast.literal_eval(text)[-1] == (199, {{'a': [199]}})
        except SystemError as exc:
            errors.append(exc)
gc.set_threshold(50)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors))
"""


def _failed_parses(setup: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", RACE.format(setup=setup)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return int(done.stdout.strip())


def test_dbt_plugin_serialises_parsing_so_threads_never_fail() -> None:
    """Without the lock this Python fails parses at random; with the plugin imported, none."""
    if _failed_parses("") == 0:
        pytest.skip("this Python's parser has no race to prevent")
    assert _failed_parses("from tidemark import threadsafe_ast; threadsafe_ast.install()") == 0


def test_the_dbt_plugin_installs_the_lock() -> None:
    """Every dbt process imports the plugin (dbt_tidemark.py), and with it the lock."""
    done = subprocess.run(
        [sys.executable, "-c", "import ast, dbt_tidemark; print(ast.parse.tidemark_locked)"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "True"
