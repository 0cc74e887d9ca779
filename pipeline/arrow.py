"""Stream entries -> Arrow RecordBatches with exactly the source's declared schema.

    stream STRING, id STRING, ms LONG, seq LONG, fields MAP<STRING,STRING>

The read path receives XRANGE pages in the compact `Entries` form (ids, per-entry element
counts, all elements flat) and builds every column with Arrow's C kernels, never row by row
in Python: ids become a string array, `ms`/`seq` come from splitting ids at '-' and casting,
and `fields` is a MapArray over the flat elements (even positions keys, odd values) with
offsets from the counts. Spark requires the batch schema to equal the declared one exactly
(int64, a non-null map key), so batches are built against `SCHEMA`.

Values must be UTF-8 to be STRING: a page holding invalid UTF-8 has those values decoded with
U+FFFD replacements (documented; the stream itself is untouched). IDs above 2**63-1 in either
half are reinterpreted as signed LONGs (two's complement), as Spark has no unsigned type.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

DDL = "stream STRING, id STRING, ms LONG, seq LONG, fields MAP<STRING,STRING>"
FIELDS_TYPE = pa.map_(pa.string(), pa.string())
SCHEMA = pa.schema(
    [
        pa.field("stream", pa.string()),
        pa.field("id", pa.string()),
        pa.field("ms", pa.int64()),
        pa.field("seq", pa.int64()),
        pa.field("fields", FIELDS_TYPE),
    ]
)


_ZERO = pa.array([0], pa.int32())


def _strings(values: Sequence[bytes]) -> pa.Array:
    arr = pa.array(values, pa.binary())
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8 somewhere: decode with replacements
        return pa.array([v.decode("utf-8", "replace") for v in values], pa.string())


def batch(
    stream: str, ids: Sequence[bytes], counts: Sequence[int], elements: Sequence[bytes]
) -> pa.RecordBatch:
    """One RecordBatch from a page: ids[i] owns the next counts[i] elements (field, value...)."""
    n = len(ids)
    id_arr = pa.array(ids, pa.binary()).cast(pa.string())
    halves = pc.split_pattern(id_arr, "-", max_splits=1)
    ms = pc.list_element(halves, 0).cast(pa.uint64()).cast(pa.int64(), safe=False)
    seq = pc.list_element(halves, 1).cast(pa.uint64()).cast(pa.int64(), safe=False)
    flat = list(elements)
    keys = _strings(flat[0::2])
    items = _strings(flat[1::2])
    pairs = pc.shift_right(pa.array(counts, pa.int32()), 1)
    offsets = pa.concat_arrays([_ZERO, pc.cumulative_sum(pairs).cast(pa.int32())])
    fields = pa.MapArray.from_arrays(offsets, keys, items, type=FIELDS_TYPE)
    streams = pa.array([stream], pa.string()).take(pa.nulls(n, pa.int32()).fill_null(0))
    return pa.RecordBatch.from_arrays([streams, id_arr, ms, seq, fields], schema=SCHEMA)
