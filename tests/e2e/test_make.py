"""The Makefile and the suite agree on the machine's files they share."""

from __future__ import annotations

import subprocess

from tests.conftest import ROOT, archive_for_this_machine


def make_variable(name: str) -> str:
    shown = subprocess.run(
        ["make", "-s", "--no-print-directory", f"--eval=show: ; @echo $({name})", "show"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return shown.stdout.strip()


def test_make_demo_writes_the_class_archive_the_suite_maps_in() -> None:
    """`make demo` writes Spark's class archive where the tests look for it (decision 0013):
    a quick start's `make test` then starts every JVM with it instead of writing its own."""
    assert make_variable("JVM_ARCHIVE") == archive_for_this_machine()
