"""What the live tests install on first use (Java runtimes, Flink's jars, PyFlink environments)
comes from a script each; when one cannot install, the live session fails with one line that
names it and its last error (tests/live/flink_job.py, ``_installed``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.flink_job import LiveSetupError, _installed


def _script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "install.sh"
    script.write_text("#!/usr/bin/env bash\n" + body)
    script.chmod(0o755)
    return str(script)  # absolute: the repository's root does not prefix it


def test_the_path_the_script_prints_last_is_what_it_installed(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    script = _script(tmp_path, f'echo "installing $1" >&2\necho noise\necho {tmp_path}/lib\n')
    assert _installed(script, "2.3.0", "unused") == tmp_path / "lib"


def test_a_failing_script_is_a_setup_error_with_its_last_error_line(tmp_path: Path) -> None:
    script = _script(
        tmp_path, 'echo "downloading $1" >&2\necho "no such version: $1" >&2\nexit 1\n'
    )
    with pytest.raises(LiveSetupError) as failed:
        _installed(script, "9.9.9", "PyFlink 9.9.9 could not be installed")
    assert str(failed.value) == (
        f"PyFlink 9.9.9 could not be installed by {script}: no such version: 9.9.9"
    )


def test_a_printed_path_that_does_not_exist_is_a_setup_error(tmp_path: Path) -> None:
    script = _script(tmp_path, f"echo {tmp_path}/missing\n")
    with pytest.raises(LiveSetupError, match="could not be installed by .*: no output"):
        _installed(script, "2.3.0", "Flink 2.3.0's jars could not be installed")
