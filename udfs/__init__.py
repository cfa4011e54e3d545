"""Code that Spark's Python workers run.

Each feature has a pure, typed core with no Spark imports (a test checks that importing it does not
load pyspark) and a thin adapter in ``udfs.spark`` that registers the core with Spark.
"""
