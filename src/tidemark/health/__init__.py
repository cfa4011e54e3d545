"""tidemark's own health: its cycles, how far each mart is behind the newest landed event, and
the bytes the lake holds (contract §7 "health"; docs/decisions/0017-health.md).

``model`` is the pure part (the row shapes of ``tidemark.run_log`` and ``tidemark status``),
``read`` reads the lake's files without Spark, ``record`` writes a ``tidemark run`` cycle.
"""
