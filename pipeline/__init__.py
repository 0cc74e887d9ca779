"""xstream's data pipeline on Spark: the `xstream` PySpark data source and an example job.

    options.py   the source's options, validated on the driver
    session.py   the one local SparkSession builder: loopback only, quiet (log4j2.properties)
    nodes.py     lazily opened per-process channels; XSPLITS (cut points, freshness, trims)
    arrow.py     XNODES pages (decoded node bytes) -> Arrow RecordBatches of the declared schema
    reading.py   planning (after, last] parts over replicas; reading them with checks
    source.py    the DataSource, batch and streaming readers (Spark glue)
    writing.py   Arrow writers: pipelined, idempotent XADDs into the primary
    example.py   `xstream pipeline example`: per-minute aggregates of an `events` stream

Importing this package does not import pyspark; `source` and `writing` do.
"""
