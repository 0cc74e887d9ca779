"""Planning and reading ranges of streams: the part of the source that is not Spark glue.

A read is a set of `Part`s, each a half-open ID range `(after, last]` of one stream pinned to
one node:

    stream "events":   (after ............................................. last]
    XSPLITS cuts:      (after ...... c1] (c1 ...... c2] (c2 ................ last]
    nodes:               replica A         replica B       replica A  (round robin)

Offsets are last IDs included, per stream, exactly as the Structured Streaming checkpoint
stores them ({"events": "1700000000000-5"}); "0-0" means before everything.

Invariants a reader relies on:
* Freshness: a part is read only once its node reports `last-generated-id >= last`. Every
  node applies the primary's log in order and IDs only grow, so such a node holds every entry
  <= last that the primary holds (minus later deletions). A lagging node is waited for (up to
  replicaWaitMs), then the task fails: it never silently returns fewer rows.
* Data loss: a trim removes entries from the head and raises the stream's trim watermark
  (`max-trimmed-entry-id`). Entries after `after` were trimmed away iff after < watermark.
  Checked when planning and again in the task before reading (failOnDataLoss=true fails,
  false skips what is gone and reads the rest). A trim racing with a running task is
  caught after the read when the task got fewer rows than planned and the watermark passed
  `after`.
* Determinism: a range's rows depend only on (after, last] and the stream's content, not on
  the cut points or the node, so a replayed micro-batch reads the same rows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from xstream.engine import columns

from . import arrow, nodes
from .options import Options, TlsFiles, end_for, start_for

log = logging.getLogger("xstream.pipeline")
EARLIEST = "0-0"
MAX_HALF = (1 << 64) - 1  # the largest ms or seq of an ID


class DataLossError(RuntimeError):
    """Entries of the requested range were trimmed away (failOnDataLoss=true)."""


class StaleReplicaError(RuntimeError):
    """A node did not apply the end of a range within replicaWaitMs."""


@dataclass(frozen=True)
class Part:
    stream: str
    after: str  # exclusive
    last: str  # inclusive
    node: str
    planned: int  # live entries in the range when planned
    fail_on_data_loss: bool
    wait_ms: int
    fetch_size: int
    tls: TlsFiles | None = None  # the query's TLS to its nodes


def id_key(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


def freshest(opts: Options, stream: str) -> tuple[str, nodes.StreamState]:
    """The node (primary first, else the replica furthest ahead) and its state of `stream`."""
    candidates = ([opts.primary] if opts.primary else []) + list(opts.replicas)
    best: tuple[str, nodes.StreamState] | None = None
    errors = []
    for address in candidates:
        try:
            state = nodes.state(address, stream, opts.tls)
        except nodes.NodeError as e:
            errors.append(str(e))
            continue
        if address == opts.primary:
            return address, state
        if best is None or id_key(state.last_id) > id_key(best[1].last_id):
            best = (address, state)
    if best is None:
        raise nodes.NodeError("no node answered: " + "; ".join(errors))
    return best


def applied(opts: Options, stream: str) -> str:
    """The last ID every reachable read node has applied (the streaming `latest`)."""
    lasts = []
    for address in opts.read_nodes:
        try:
            lasts.append(nodes.state(address, stream, opts.tls).last_id)
        except nodes.NodeError as e:
            log.warning("read node unreachable, planning without it: %s", e)
    if not lasts:
        raise nodes.NodeError(f"no read node reachable for stream {stream!r}")
    return min(lasts, key=id_key)


def resolve_start(opts: Options, stream: str, state: nodes.StreamState) -> str:
    start = start_for(opts, stream)
    if start == "earliest":
        return state.max_trimmed if state.exists else EARLIEST
    if start == "latest":
        return state.last_id if state.exists else EARLIEST
    return start


def check_loss(stream: str, after: str, state: nodes.StreamState, fail: bool) -> str:
    """The start to read from: `after`, or past what was trimmed (or DataLossError)."""
    if state.exists and id_key(after) < id_key(state.max_trimmed):
        msg = (
            f"stream {stream!r}: entries after {after} up to {state.max_trimmed} were trimmed "
            "before they were read"
        )
        if fail:
            raise DataLossError(
                msg + " (set failOnDataLoss=false to skip them and read what remains)"
            )
        log.warning("%s; skipping them (failOnDataLoss=false)", msg)
        return state.max_trimmed
    return after


def plan(
    opts: Options, ranges: dict[str, tuple[str, str]], min_parts: int | None = None
) -> list[Part]:
    """Cut each stream's (after, last] into parts, spread over the read nodes."""
    read_nodes = opts.read_nodes
    want = max(min_parts or opts.min_partitions or len(read_nodes), 1)
    states: dict[str, tuple[str, str, nodes.StreamState]] = {}
    for stream, (requested, last) in ranges.items():
        if id_key(requested) >= id_key(last):
            continue
        address, _ = freshest(opts, stream)
        state = nodes.splits(address, stream, f"({requested}", last, tls=opts.tls)
        after = check_loss(stream, requested, state, opts.fail_on_data_loss)
        if id_key(after) >= id_key(last) or not state.exists:
            continue
        if after != requested:  # re-count what remains after the trimmed part
            state = nodes.splits(address, stream, f"({after}", last, tls=opts.tls)
        states[stream] = (after, address, state)
    total = sum(sum(st.counts) for _, _, st in states.values()) or 1
    parts: list[Part] = []
    for stream, (after, address, state) in states.items():
        n = max(1, round(want * sum(state.counts) / total))
        end = ranges[stream][1]
        cut = nodes.splits(address, stream, f"({after}", end, n, tls=opts.tls) if n > 1 else state
        bounds = [after, *cut.splits, ranges[stream][1]]
        for i, count in enumerate(cut.counts):
            node = read_nodes[len(parts) % len(read_nodes)]
            parts.append(
                Part(
                    stream,
                    bounds[i],
                    bounds[i + 1],
                    node,
                    count,
                    opts.fail_on_data_loss,
                    opts.replica_wait_ms,
                    opts.fetch_size,
                    opts.tls,
                )
            )
    return parts


def batch_ranges(opts: Options) -> dict[str, tuple[str, str]]:
    """(after, last] per stream for a batch query, from startingOffsets/endingOffsets."""
    out = {}
    for stream in opts.streams:
        _, state = freshest(opts, stream)
        if not state.exists:
            continue
        after = resolve_start(opts, stream, state)
        end = end_for(opts, stream)
        last = state.last_id if end == "latest" else end
        out[stream] = (after, last)
    return out


def read_part(part: Part) -> Iterator[pa.RecordBatch]:
    """Yield the part's entries as Arrow batches, after checking freshness and data loss."""
    state = _wait_fresh(part)
    after = check_loss(part.stream, part.after, state, part.fail_on_data_loss)
    rows = 0
    for cols in _pages(part, after):
        rows += len(cols)
        yield arrow.batch(part.stream, cols)
    if rows < part.planned:
        after_read = nodes.state(part.node, part.stream, part.tls)
        if id_key(after_read.max_trimmed) > id_key(after):
            check_loss(part.stream, after, after_read, part.fail_on_data_loss)


def _pages(part: Part, after: str) -> Iterator[columns.Columns]:
    """(after, last] in pages of about fetch_size entries: XNODES pages (whole nodes, see
    engine/commands/xnodes.py) decoded into columns, keeping the live entries in range. Each
    page is one atomic read of the node; the next one starts at the first node not sent, and
    keeps only entries from there on (the node before it may be sent again if that one was
    freed meanwhile: its entries were in an earlier page).

    The next page is asked for as soon as a page arrives, before this one is decoded and
    handed to Spark: the node reads it and gRPC carries it meanwhile (the same requests, in
    the same order, one ahead). A reader stopped early drops the one in flight."""
    lo = _after(after)
    hi = id_key(part.last)
    pending = _xnodes(part, lo)
    try:
        while True:
            value = pending.value()
            if value.WhichOneof("kind") != "array":
                raise nodes.NodeError(f"{part.node}: unexpected XNODES reply {value!r:.200}")
            items = value.array.items
            more = items[0].WhichOneof("kind") == "bulk"  # nil: no node of the range is left
            if more:
                following = id_key(items[0].bulk.decode())
                pending = _xnodes(part, following)
            cols = columns.Columns()
            for i in range(1, len(items), 2):
                ms, _, seq = items[i].bulk.partition(b"-")
                columns.decode_node(cols, items[i + 1].bulk, int(ms), int(seq), *lo, *hi)
            if len(cols):
                yield cols
            if not more:
                return
            lo = following
    finally:
        pending.cancel()


def _xnodes(part: Part, lo: tuple[int, int]) -> nodes.Pending:
    """XNODES from `lo` (inclusive) to the part's end, sent."""
    cursor = f"{lo[0]}-{lo[1]}"
    return nodes.send(
        part.node, "XNODES", part.stream, cursor, part.last, "COUNT", part.fetch_size,
        tls=part.tls,
    )  # fmt: skip


def _after(entry_id: str) -> tuple[int, int]:
    """The first ID after `entry_id` (inclusive bound); ranges never start after the last
    possible ID (plan() skips empty ranges)."""
    ms, seq = id_key(entry_id)
    return (ms, seq + 1) if seq < MAX_HALF else (ms + 1, 0)


def _wait_fresh(part: Part) -> nodes.StreamState:
    deadline = time.monotonic() + part.wait_ms / 1000
    delay = 0.01
    while True:
        state = nodes.state(part.node, part.stream, part.tls)
        if state.exists and id_key(state.last_id) >= id_key(part.last):
            return state
        if time.monotonic() >= deadline:
            have = state.last_id if state.exists else "nothing (no such stream)"
            raise StaleReplicaError(
                f"node {part.node} has applied stream {part.stream!r} only up to {have}, "
                f"before the end of this range {part.last}, after waiting {part.wait_ms} ms "
                "(replicaWaitMs)"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
