"""Auto-registration: Spark registers `DefaultSource` of every top-level `pyspark_*` module.

Installing xstream makes `spark.read.format("xstream")` work with no `register` call.
"""

from xstream.pipeline.source import XStreamDataSource as DefaultSource

__all__ = ["DefaultSource"]
