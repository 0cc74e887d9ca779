"""The `xstream` PySpark data source: batch and streaming reads, batch and streaming writes.

Spark glue only; planning and reading live in reading.py, writing in writing.py.

    spark.read.format("xstream").option("streams", "events")
         .option("replicas", "10.0.0.2:7701,10.0.0.3:7701").load()

Process model (PySpark 4.x Python data sources): readers and writers are built on the driver
(or a planner process), pickled and shipped; `read()`/`write()` run in Python workers. So
these objects hold only options and plain data, and every channel is opened lazily in the
process that uses it (nodes.py). Options are parsed in `__init__`-free accessors on first
use, on the driver, so bad options fail the query before any task runs.

Streaming offsets are {"<stream>": "<last ID read>"}, kept only in Spark's checkpoint: the
server is never written to, so a streaming read works against read-only replicas, and a
restarted query resumes exactly where its checkpoint says.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from . import arrow, nodes, reading
from .options import Options, parse
from .writing import XStreamStreamWriter, XStreamWriter


class XStreamPartition(InputPartition):
    def __init__(self, part: reading.Part | None) -> None:  # None: an empty batch read
        super().__init__(part)
        self.part = part


class XStreamDataSource(DataSource):
    """format("xstream"): entries of Redis-compatible streams served by xstream nodes."""

    @classmethod
    def name(cls) -> str:
        return "xstream"

    def schema(self) -> str:
        return arrow.DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse(self.options, mode="read"))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return StreamReader(parse(self.options, mode="read", streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> XStreamWriter:
        return XStreamWriter(parse(self.options, mode="write"), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> XStreamStreamWriter:  # noqa: N802
        return XStreamStreamWriter(parse(self.options, mode="write"), schema)


class BatchReader(DataSourceReader):
    def __init__(self, opts: Options) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        parts = reading.plan(self.opts, reading.batch_ranges(self.opts))
        return [XStreamPartition(p) for p in parts] or [XStreamPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, XStreamPartition)
        if partition.part is None:
            return iter(())
        return reading.read_part(partition.part)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of (start, end] per stream; admission control with ReadMaxRows."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.target: dict[str, str] | None = None  # availableNow: never read past this

    def initialOffset(self) -> dict[str, str]:  # noqa: N802
        out = {}
        for stream in self.opts.streams:
            _, state = reading.freshest(self.opts, stream)
            out[stream] = reading.resolve_start(self.opts, stream, state)
        return out

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        n = self.opts.max_records_per_batch
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.target = {s: reading.applied(self.opts, s) for s in self.opts.streams}

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:  # noqa: N802
        start = self._complete(start)
        ends = {}
        for stream in self.opts.streams:
            top = self.target[stream] if self.target else reading.applied(self.opts, stream)
            ends[stream] = max(top, start[stream], key=reading.id_key)
        max_rows = getattr(limit, "max_rows", None)
        if isinstance(limit, ReadMaxRows) and max_rows:
            ends = self._admit(start, ends, max_rows)
        return ends

    def _complete(self, offset: dict[str, str]) -> dict[str, str]:
        """A checkpointed offset with streams added to the query since: from their start."""
        missing = [s for s in self.opts.streams if s not in offset]
        if not missing:
            return offset
        out = dict(offset)
        for stream in missing:
            _, state = reading.freshest(self.opts, stream)
            out[stream] = reading.resolve_start(self.opts, stream, state)
        return out

    def _admit(self, start: dict[str, str], ends: dict[str, str], max_rows: int) -> dict[str, str]:
        """Clamp (start, end] so all streams together hold at most `max_rows` entries."""
        address = self.opts.read_nodes[0]
        avail = {}
        for stream in self.opts.streams:
            if reading.id_key(ends[stream]) <= reading.id_key(start[stream]):
                avail[stream] = 0
                continue
            st = nodes.splits(address, stream, f"({start[stream]}", ends[stream], tls=self.opts.tls)
            avail[stream] = sum(st.counts)
        total = sum(avail.values())
        if total <= max_rows:
            return ends
        out = dict(ends)
        budget = max_rows
        for stream in self.opts.streams:
            if not avail[stream]:
                continue
            share = max(1, min(budget, max_rows * avail[stream] // total))
            budget -= share
            if share < avail[stream]:
                st = nodes.splits(
                    address, stream, f"({start[stream]}", ends[stream], 1, share, self.opts.tls
                )
                out[stream] = st.end_id
        return out

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        start = self._complete(start)
        ranges = {s: (start[s], end[s]) for s in self.opts.streams if s in end}
        return [XStreamPartition(p) for p in reading.plan(self.opts, ranges)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, XStreamPartition) and partition.part is not None
        return reading.read_part(partition.part)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, never on the server."""

    def stop(self) -> None:
        """Nothing to release: channels belong to the processes that opened them."""


def register(spark: Any) -> None:
    """Register the source explicitly (it is also found automatically: pyspark_xstream)."""
    spark.dataSource.register(XStreamDataSource)
