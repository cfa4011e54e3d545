"""Driving tidemark and dbt exactly as a user would: real commands in subprocesses.

Each call gets the test's own ``TIDEMARK_LAKE`` and its own dbt target and log folders, so tests
(and developers running dbt by hand) never share state.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyarrow.dataset as ds

from tests.ports import free_port as free_port
from tidemark.lake import Lake
from tidemark.spark.settings import resources_folder

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> Result:
        assert self.returncode == 0, f"exit {self.returncode}\n{self.stdout}\n{self.stderr}"
        return self


PARSE_CACHE = ROOT / ".cache" / "dbt-parse"


def _project_key() -> str:
    """A digest of what dbt parses: the installed dbt, dbt_project.yml and profiles.yml, and the
    files of every folder dbt_project.yml names (``model-paths``, ``macro-paths`` and the rest)."""
    from importlib.metadata import version

    import yaml

    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    folders = [name for key, names in project.items() if key.endswith("-paths") for name in names]
    paths = [ROOT / "dbt_project.yml", ROOT / "profiles.yml"]
    paths += sorted(path for folder in folders for path in (ROOT / folder).rglob("*"))
    digest = hashlib.sha256(version("dbt-core").encode())
    for path in paths:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def saved_parse() -> Path:
    """dbt's saved parse of the project (``partial_parse.msgpack``), made once per version of
    the project's files and kept in .cache/dbt-parse/.

    Every test's dbt target folder starts from a copy, so its first dbt command parses only what
    the test changes (vars, target) instead of the whole project: 3.0 s instead of 5.6 s a
    command, and the suite runs a few dozen. The project reads no ``TIDEMARK_LAKE``, so one parse
    serves every lake. Parsing takes some 12 s on two cores: `make test`'s controller starts it
    (``python -m tests.e2e.harness``) while the workers collect, and a lock makes every process
    that needs it wait for that one instead of parsing again.
    """
    key = _project_key()
    saved = PARSE_CACHE / key / "partial_parse.msgpack"
    PARSE_CACHE.mkdir(parents=True, exist_ok=True)
    with open(PARSE_CACHE / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.is_file():
            day_ago = time.time() - 86_400
            for old in PARSE_CACHE.iterdir():  # parses cut short, other versions unused a day
                if old.name.startswith(f".{key}.") or old.stat().st_mtime < day_ago:
                    if old.is_dir():
                        shutil.rmtree(old, ignore_errors=True)
                    else:
                        old.unlink()
            target = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=PARSE_CACHE))
            env = {**os.environ, "DBT_TARGET_PATH": str(target)}
            env.update(DBT_LOG_PATH=str(target / "logs"), DBT_SEND_ANONYMOUS_USAGE_STATS="false")
            subprocess.run(
                [str(BIN / "dbt"), "parse"], cwd=ROOT, env=env, capture_output=True, check=True,
                timeout=300,
            )  # fmt: skip
            target.rename(saved.parent)
        os.utime(saved.parent)  # in use: kept by the clean-up above
    return saved


def environment(lake: Lake, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    work = lake.root.parent / ".dbt"
    if not (work / "target").exists():
        (work / "target").mkdir(parents=True)
        shutil.copy(saved_parse(), work / "target")
    env.update(
        {
            "TIDEMARK_LAKE": str(lake.root),
            "DBT_TARGET_PATH": str(work / "target"),
            "DBT_LOG_PATH": str(work / "logs"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "TIDEMARK_SHUFFLE_PARTITIONS": env.get("TIDEMARK_SHUFFLE_PARTITIONS", "2"),
            "TIDEMARK_DRIVER_MEMORY": env.get("TIDEMARK_DRIVER_MEMORY", "2g"),
        }
    )
    env.update(extra)
    return env


def run(args: list[str], lake: Lake, timeout: float = 900, **extra: str) -> Result:
    done = subprocess.run(
        args,
        cwd=ROOT,
        env=environment(lake, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def tidemark(*args: str, lake: Lake, **extra: str) -> Result:
    return run([str(BIN / "tidemark"), *args], lake, **extra)


def dbt(*args: str, lake: Lake, **extra: str) -> Result:
    return run([str(BIN / "dbt"), *args], lake, **extra)


class TidemarkRun:
    """`tidemark run ARGS` as a user starts it, in the lake's environment: ``next_cycle`` waits
    for its next cycle's line; leaving the ``with`` block kills it if it still runs."""

    def __init__(self, lake: Lake, *args: str) -> None:
        self.process = subprocess.Popen(
            [str(BIN / "tidemark"), "run", *args], cwd=ROOT, env=environment(lake),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.seen: list[str] = []

    def next_cycle(self) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.seen.append(line)
            if line.startswith("tidemark run: cycle "):
                return line
        raise AssertionError("tidemark run ended early:\n" + "".join(self.seen))

    def __enter__(self) -> TidemarkRun:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ThriftReader:
    """Queries through a running Thrift endpoint (`tidemark serve`, `tidemark run --serve`), for a
    lake another process holds: ``sql_rows`` as WarmLake's."""

    def __init__(self, port: int) -> None:
        self.port = port

    def sql_rows(self, query: str) -> list[dict]:
        from pyhive import hive

        connection = hive.connect(host="127.0.0.1", port=self.port, username="tests")
        try:
            cursor = connection.cursor()
            cursor.execute(query)
            names = [column[0].split(".")[-1] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            connection.close()


def _live_files(lake: Lake, schema: str, names, warm=None) -> dict[str, list[str] | None]:
    """The data files each table of ``names`` reads now, asked of Spark in one query; None for a
    table no build published into (its folder holds its rows and nothing else).

    A published table's partitions lie in version folders below its own, beside the folders
    publishes replaced and keep for a while (docs/decisions/0015): only the metastore says which
    are its rows. ``warm``, a WarmLake or a ThriftReader, asks the session of the process that
    holds the lake: no other process can open its metastore meanwhile."""
    from urllib.parse import unquote, urlparse

    folder = lake.warehouse / f"{schema}.db"
    found: dict[str, list[str] | None] = {
        name: None if not (folder / name / "_tidemark_versions").exists() else [] for name in names
    }
    published = [name for name, files in found.items() if files is not None]
    if not published:
        return found
    query = " union all ".join(
        f"select distinct '{name}' as name, _metadata.file_path as path from {schema}.{name}"
        for name in published
    )
    if warm is not None:
        rows = warm.sql_rows(query)
    else:
        out = tidemark("sql", query, "--format", "jsonl", lake=lake).check().stdout
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for row in rows:
        found[row["name"]].append(unquote(urlparse(row["path"]).path))
    return found


def _dataset(lake: Lake, schema: str, name: str, files: list[str] | None):

    if files is None:
        return ds.dataset(lake.warehouse / f"{schema}.db" / name, format="parquet",
                          partitioning="hive")  # fmt: skip
    return ds.dataset(files, format="parquet", partitioning="hive")


def warehouse_rows(
    lake: Lake, schema: str, name: str, job_id: str | None = None, warm=None
) -> list[dict]:
    """A warehouse table's rows, read from its parquet files (hive partition columns included);
    only ``job_id``'s when given; no rows when the table was never built. Spark is asked which
    files are the table's only when a build published into it (``_live_files``)."""

    if not (lake.warehouse / f"{schema}.db" / name).exists():
        return []
    where = None if job_id is None else ds.field("job_id") == job_id
    files = _live_files(lake, schema, [name], warm)[name]
    return _dataset(lake, schema, name, files).to_table(filter=where).to_pylist()


def warehouse_tables(
    lake: Lake,
    schema: str = "tidemark",
    ignore: dict[str, set[str]] | None = None,
    names: tuple[str, ...] | None = None,
) -> dict[str, list[tuple]]:
    """Every table of `schema` in the lake's warehouse (or those of ``names``): its columns,
    then its rows as sorted tuples of column values (floats to 1e-6), without the columns
    ``ignore`` names per table."""
    folder = lake.warehouse / f"{schema}.db"
    found = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.exists() else []
    wanted = [n for n in found if n != "run_log" and (names is None or n in names)]
    live = _live_files(lake, schema, wanted)
    tables = {}
    for name in wanted:
        left_out = (ignore or {}).get(name, set())
        table = None if live[name] == [] else _dataset(lake, schema, name, live[name]).to_table()
        if table is None or table.num_rows == 0:
            # A build that wrote no row wrote no file (published or not): Spark has the columns.
            tables[name] = [tuple(sorted(set(_columns(lake, schema, name)) - left_out))]
            continue
        columns = sorted(set(table.column_names) - left_out)
        rows = [tuple(_canonical(row[c]) for c in columns) for row in table.to_pylist()]
        tables[name] = [tuple(columns), *sorted(rows, key=repr)]
    return tables


def _columns(lake: Lake, schema: str, name: str) -> list[str]:
    """A table's columns, partition columns included, as Spark describes them."""
    query = f"describe table {schema}.{name}"
    out = tidemark("sql", query, "--format", "jsonl", lake=lake).check().stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    columns = []
    for row in rows:
        if not row["col_name"] or row["col_name"].startswith("#"):
            break
        columns.append(row["col_name"])
    return columns


def _canonical(value: object) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    return str(value) if value is not None else None


if __name__ == "__main__":  # tests/conftest.py: parse ahead of the workers
    saved_parse()


@dataclass
class Server:
    """A running `tidemark serve`: its lake, port and process."""

    lake: Lake
    port: int
    process: subprocess.Popen


@contextmanager
def serving(lake: Lake) -> Iterator[Server]:
    """`tidemark serve --refresh-s 1` over ``lake``, started as a user starts it, killed on exit
    if still running. Before it starts, the lake holds what an earlier server left in its
    resources folder: an empty session folder, which the new server deletes, and one with a
    file, which it keeps (test_serve checks both)."""
    (resources_folder(lake) / "earlier-server").mkdir(parents=True)
    (resources_folder(lake) / "earlier-with-a-file").mkdir()
    (resources_folder(lake) / "earlier-with-a-file" / "udf.jar").write_bytes(b"jar")
    errors = lake.root.parent / "serve.stderr"
    port = free_port()
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [str(BIN / "tidemark"), "serve", "--port", str(port), "--refresh-s", "1"],
            cwd=ROOT, env=environment(lake), stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert "listening on 127.0.0.1" in line, errors.read_text()[-3000:]
        yield Server(lake, port, process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
