"""tidemark: Flink runtime metrics, exact and per second, in the lakehouse."""

__version__ = "0.1.0"
