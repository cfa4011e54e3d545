"""`--landed-files`: a capture file that landed is deleted or moved; one that failed is left, and
the same content delivered again is still a duplicate (issue 44)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.events import timer, write_jsonl
from tidemark.ingest.landed import LandedFiles
from tidemark.ingest.landing import ingest
from tidemark.lake import Lake


def test_the_setting_is_keep_delete_or_move_to_a_folder(tmp_path: Path) -> None:
    assert LandedFiles.parse("keep") == LandedFiles("keep")
    assert LandedFiles.parse("move:archive").archive == Path("archive").absolute()
    for bad in ("remove", "move:", "move: "):
        with pytest.raises(ValueError, match="--landed-files takes keep, delete or move:DIR"):
            LandedFiles.parse(bad)


def test_landed_files_are_moved_below_their_folder_and_a_failed_one_stays(
    tmp_path: Path, lake: Lake
) -> None:
    capture = tmp_path / "capture"
    (capture / "host-a").mkdir(parents=True)
    good = write_jsonl(capture / "host-a" / "one.jsonl", [timer(0), timer(1)])
    content = good.read_bytes()
    bad = capture / "host-a" / "two.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b not gzip at all")
    report = ingest([capture], lake)
    assert [bool(f.error) for f in report.files] == [False, True]
    moved = LandedFiles.parse(f"move:{tmp_path / 'landed'}").dispose(report, [capture])
    assert moved == 1
    assert (tmp_path / "landed" / "host-a" / "one.jsonl").read_bytes() == content
    assert not good.exists() and bad.exists()
    (tmp_path / "again.jsonl").write_bytes(content)

    # Delivered again, its content is recognised: nothing lands twice.
    again = ingest([tmp_path / "again.jsonl"], lake)
    assert (again.accepted, again.duplicates) == (0, 2)
    assert LandedFiles.parse("delete").dispose(again, [tmp_path / "again.jsonl"]) == 1
    assert not (tmp_path / "again.jsonl").exists()
