"""Bronze tables as Spark views: ``bronze.timer_events`` and the rest, read as Delta snapshots.

By default (``TIDEMARK_DELTA=deltars``) delta-rs reads each table's Delta log and lists the data
files of its current snapshot; Spark reads exactly those files. Files that a compaction or an
overwrite removed stay on disk until vacuum, and are not read: globbing the folder would read them.
With ``TIDEMARK_DELTA=native`` Spark's own Delta reader does the same. Either way the views sit in
the ``bronze`` database (Spark's global temporary database under that name), so every session of
the application, including each Thrift connection, resolves ``bronze.<table>``.

Each view also has the column ``data_file``: the name of the data file a row is in. Read through
delta-rs, every table with ``ingest_id`` gets a second view, ``bronze.<table>_files``: one row per
data file of the same snapshot with the smallest and largest ``ingest_id`` and ``ts_ms`` the Delta
log records for it. Incremental models choose files by it while compiling
(``macros/tidemark_bronze_reach.sql``), and Spark opens only those.
"""

from __future__ import annotations

from urllib.parse import unquote

import pyarrow as pa

from tidemark.ingest.schema import BRONZE_SCHEMAS
from tidemark.lake import Lake
from tidemark.spark.settings import delta_mode

# Reader features delta-rs' file listing fully accounts for; anything else (deletion vectors,
# column mapping) changes what the files mean, so it is refused rather than misread.
_READABLE_FEATURES = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}


class BronzeReadError(RuntimeError):
    pass


# The columns of ``bronze.<table>_files``: a data file and its bounds from the Delta log.
FILE_BOUNDS = ("ingest_id", "ts_ms")


def register_bronze(spark, lake: Lake) -> dict[str, int]:
    """(Re)create the ``bronze.*`` views over the current snapshots; returns files per table."""
    from pyspark.sql import functions as F
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
            table = _delta_table(str(path))
            uris = snapshot_files(table)
            counts[name] = len(uris)
            if uris:
                frame = spark.read.schema(spark_schema).parquet(*uris)
            else:
                frame = spark.createDataFrame([], spark_schema)
            if "ingest_id" in schema.names:
                bounds = file_bounds(table, schema)
                files = spark.createDataFrame(bounds.to_pandas(), from_arrow_schema(bounds.schema))
                files.createOrReplaceGlobalTempView(f"{name}_files")
        if counts[name]:
            # The filter, always true, is what keeps a query that never reads data_file from
            # reading every field of _metadata: once a view names _metadata, Spark's file scan
            # produces all of its fields (the row index too) unless a query reads a field of
            # it, and only then prunes it to the fields read.
            file_name = F.col("_metadata.file_name")
            frame = frame.select("*", file_name.alias("data_file")).where(file_name != "")
        else:
            frame = frame.withColumn("data_file", F.lit(None).cast("string"))
        frame.createOrReplaceGlobalTempView(name)
    return counts


def file_bounds(table, schema: pa.Schema) -> pa.Table:
    """Per data file of ``table`` (a DeltaTable or None): its name and, for each column of
    FILE_BOUNDS that ``schema`` has, the smallest and largest value the Delta log records (NULL
    when it records none: such a file can hold anything)."""
    fields = [pa.field("data_file", pa.string())]
    for column in FILE_BOUNDS:
        fields += [pa.field(f"{edge}_{column}", pa.int64()) for edge in ("min", "max")]
    if table is None:
        return pa.Table.from_pylist([], pa.schema(fields))
    actions = pa.table(table.get_add_actions(flatten=True))
    names = [unquote(path.rsplit("/", 1)[-1]) for path in actions.column("path").to_pylist()]
    columns = [pa.array(names, pa.string())]
    for column in FILE_BOUNDS:
        for edge in ("min", "max"):
            stat = f"{edge}.{column}"
            if column in schema.names and stat in actions.column_names:
                columns.append(actions.column(stat).cast(pa.int64()))
            else:
                columns.append(pa.nulls(len(names), pa.int64()))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _delta_table(path: str):
    """The Delta table at ``path``, or None when there is none yet."""
    from deltalake import DeltaTable

    return DeltaTable(path) if DeltaTable.is_deltatable(path) else None


def snapshot_files(table) -> list[str]:
    """The data files of a Delta table's current snapshot (a path or a DeltaTable; [] when there
    is no table yet)."""
    if isinstance(table, str):
        table = _delta_table(table)
    if table is None:
        return []
    path = table.table_uri
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
