"""Bronze tables as Spark views: ``bronze.timer_events`` and the rest, read as Delta snapshots.

By default (``TIDEMARK_DELTA=deltars``) delta-rs reads each table's Delta log and lists the data
files of its current snapshot; Spark reads exactly those files. Files that a compaction or an
overwrite removed stay on disk until vacuum, and are not read: globbing the folder would read them.
With ``TIDEMARK_DELTA=native`` Spark's own Delta reader does the same. Either way the views sit in
the ``bronze`` database (Spark's global temporary database under that name), so every session of
the application, including each Thrift connection, resolves ``bronze.<table>``.
"""

from __future__ import annotations

from tidemark.ingest.schema import BRONZE_SCHEMAS
from tidemark.lake import Lake
from tidemark.spark.settings import delta_mode

# Reader features delta-rs' file listing fully accounts for; anything else (deletion vectors,
# column mapping) changes what the files mean, so it is refused rather than misread.
_READABLE_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}


class BronzeReadError(RuntimeError):
    pass


def register_bronze(spark, lake: Lake) -> dict[str, int]:
    """(Re)create the ``bronze.*`` views over the current snapshots; returns files per table."""
    from pyspark.sql.pandas.types import from_arrow_schema

    native = delta_mode() == "native"
    counts = {}
    for name, schema in BRONZE_SCHEMAS.items():
        path = lake.bronze_table(name)
        spark_schema = from_arrow_schema(schema)
        if native and (path / "_delta_log").exists():
            frame = spark.read.format("delta").load(str(path))
            counts[name] = -1
        else:
            uris = snapshot_files(str(path))
            counts[name] = len(uris)
            if uris:
                frame = spark.read.schema(spark_schema).parquet(*uris)
            else:
                frame = spark.createDataFrame([], spark_schema)
        frame.createOrReplaceGlobalTempView(name)
    return counts


def snapshot_files(path: str) -> list[str]:
    """The data files of a Delta table's current snapshot ([] when there is no table yet)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return []
    table = DeltaTable(path)
    protocol = table.protocol()
    features = set(protocol.reader_features or [])
    unknown = features - _READABLE_FEATURES
    if unknown or protocol.min_reader_version > 3:
        raise BronzeReadError(
            f"{path} uses Delta reader features {sorted(unknown)} that the delta-rs file listing "
            "cannot honour; read it with TIDEMARK_DELTA=native on a cluster with Delta's jars"
        )
    if table.metadata().partition_columns:
        raise BronzeReadError(f"{path} is partitioned; tidemark's bronze tables never are")
    return list(table.file_uris())
