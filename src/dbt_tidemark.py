"""dbt plugin: prepares tidemark's embedded Spark session before dbt-spark's ``session`` method.

dbt-core imports every installed top-level module whose name starts with ``dbt_`` and instantiates
the classes listed in its ``plugins`` when a project loads (``dbt/plugins/manager.py``). dbt-spark's
session method then calls ``SparkSession.builder.getOrCreate()``, which returns the session made
here: warehouse and metastore under ``TIDEMARK_LAKE``, UDFs registered, ``bronze.*`` resolvable. So
plain ``dbt build`` works from the repository root with no wrapper script.

Spark is started only for the tidemark project, only when the selected target uses the Spark
``session`` method, and only for commands that run SQL (not ``parse``, ``deps``, ``ls``, nor
MetricFlow's ``mf``).
The rule is :func:`tidemark.spark.settings.needs_embedded_spark`, which imports no dbt.
See docs/decisions/0002-one-spark-session-factory.md.
"""

from __future__ import annotations

from dbt.plugins.manager import dbtPlugin

from tidemark import threadsafe_ast
from tidemark.spark.settings import needs_embedded_spark

# dbt's threads parse Python literals while rendering; CPython 3.11 fails one of two at once at
# random (tidemark/threadsafe_ast.py). The plugin is imported by every dbt process, the
# CLI's and tidemark's own.
threadsafe_ast.install()


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
