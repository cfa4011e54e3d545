"""dbt plugin: prepares tidemark's embedded Spark session before dbt-spark's ``session`` method.

dbt-core imports every installed top-level module whose name starts with ``dbt_`` and instantiates
the classes listed in its ``plugins`` when a project loads (``dbt/plugins/manager.py``). dbt-spark's
session method then calls ``SparkSession.builder.getOrCreate()``, which returns the session made
here: warehouse and metastore under ``TIDEMARK_LAKE``, UDFs registered, ``bronze.*`` resolvable. So
plain ``dbt build`` works from the repository root with no wrapper script.

Spark is started only for the tidemark project, only when the selected target uses the Spark
``session`` method, and only for commands that run SQL (not ``parse``, ``deps``, ``ls``, nor
MetricFlow's ``mf``).
See docs/decisions/0002-one-spark-session-factory.md.
"""

from __future__ import annotations

from dbt.plugins.manager import dbtPlugin

PROJECT = "tidemark"
# dbt commands that run SQL (flags.WHICH): only these get a Spark session. Anything else, dbt's
# own `parse`, `deps`, `ls` or a tool that loads the project (MetricFlow's `mf`), does not.
SQL_COMMANDS = frozenset(
    {
        "build",
        "run",
        "test",
        "seed",
        "snapshot",
        "show",
        "compile",
        "debug",
        "run-operation",
        "freshness",
        "generate",
        "retry",
        "clone",
    }
)


def needs_embedded_spark(project_name: str, command: str | None, credentials: object) -> bool:
    """Whether this dbt invocation should get tidemark's embedded Spark session."""
    if project_name != PROJECT or command not in SQL_COMMANDS:
        return False
    kind = getattr(credentials, "type", None)
    method = getattr(credentials, "method", None)
    return kind == "spark" and str(getattr(method, "value", method)) == "session"


def _invocation() -> tuple[str | None, object]:
    import click

    context = click.get_current_context(silent=True)
    if context is None or not isinstance(context.obj, dict):
        return None, None
    flags = context.obj.get("flags")
    profile = context.obj.get("profile")
    return getattr(flags, "WHICH", None), getattr(profile, "credentials", None)


class TidemarkSparkSession(dbtPlugin):
    """Starts the embedded Spark session for ``dbt`` runs of the tidemark project."""

    def initialize(self) -> None:
        command, credentials = _invocation()
        if not needs_embedded_spark(self.project_name, command, credentials):
            return
        from tidemark.spark.session import spark_session

        spark_session()


plugins = [TidemarkSparkSession]
