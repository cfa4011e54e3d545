"""Thin Spark adapters: register tidemark's pure Python cores as Spark UDFs and UDTFs.

SQL models call them by the names registered here. Nothing in ``udfs`` but this module imports
pyspark.
"""

from __future__ import annotations


def register_udfs(spark) -> list[str]:
    """Register every tidemark function on ``spark``; returns their SQL names."""
    return []
