"""The Delta-log follower bronze's summary and the health share (tidemark.delta_log)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from tidemark import delta_log

ROOT = Path(__file__).resolve().parents[2]


def _rows(*values: int) -> pa.Table:
    return pa.table({"job_id": pa.array(["a"] * len(values), pa.string()),
                     "seq": pa.array(values, pa.int64())})  # fmt: skip


def _paths(commits: delta_log.Commits | None, root: Path) -> list[Path]:
    assert commits is not None
    return [delta_log.local_path(add["path"], root) for add in commits.adds]


def test_the_commits_appended_since_are_their_adds_in_order(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _rows(1))
    write_deltalake(tmp_path, _rows(2), mode="append")
    write_deltalake(tmp_path, _rows(3, 4), mode="append")
    added = _paths(delta_log.commits_since(tmp_path, 0), tmp_path)
    assert [pq.read_table(p)["seq"].to_pylist() for p in added] == [[2], [3, 4]]
    assert delta_log.commits_since(tmp_path, 0).version == 2  # type: ignore[union-attr]
    assert delta_log.commits_since(tmp_path, 2) == delta_log.Commits(2, [])  # nothing new


def test_an_empty_table_has_no_adds_and_a_missing_one_no_commits(tmp_path: Path) -> None:
    DeltaTable.create(tmp_path / "t", schema=_rows().schema)
    assert delta_log.commits_since(tmp_path / "t", 0) == delta_log.Commits(0, [])
    write_deltalake(tmp_path / "t", _rows(1), mode="append")
    assert len(_paths(delta_log.commits_since(tmp_path / "t", 0), tmp_path / "t")) == 1
    assert delta_log.commits_since(tmp_path / "none", 0) is None
    assert delta_log.commits_since(tmp_path / "t", -1) is None  # nothing read yet: read it whole


def test_a_commit_that_removes_rows_cannot_be_followed_a_compaction_is_passed_over(
    tmp_path: Path,
) -> None:
    for seq in range(3):
        write_deltalake(tmp_path, _rows(seq), mode="append")
    DeltaTable(tmp_path).optimize.compact()  # rows moved, not changed
    assert delta_log.commits_since(tmp_path, 2) == delta_log.Commits(3, [])
    DeltaTable(tmp_path).delete("seq = 1")
    assert delta_log.commits_since(tmp_path, 3) is None
    assert delta_log.commits_since(tmp_path, 4) == delta_log.Commits(4, [])  # after it: fine


def test_a_commit_that_left_the_log_cannot_be_followed(tmp_path: Path) -> None:
    for seq in range(4):
        write_deltalake(tmp_path, _rows(seq), mode="append")
    DeltaTable(tmp_path).create_checkpoint()
    for version in range(3):  # cleaned up after the checkpoint
        (tmp_path / "_delta_log" / f"{version:020d}.json").unlink()
    assert delta_log.commits_since(tmp_path, 1) is None
    assert delta_log.commits_since(tmp_path, 3) == delta_log.Commits(3, [])  # up to date


def test_local_paths_of_the_log() -> None:
    root = Path("/lake/bronze/t")
    assert delta_log.local_path("day=1/part%201.parquet", root) == root / "day=1/part 1.parquet"
    assert delta_log.local_path("file:///lake/x%20y.parquet", root) == Path("/lake/x y.parquet")
    assert delta_log.local_path("/lake/bronze/t") == root
    with pytest.raises(ValueError, match="local file system"):
        delta_log.local_path("s3://bucket/t", root)


def test_following_the_log_never_imports_pyspark() -> None:
    code = "import sys, tidemark.delta_log; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
