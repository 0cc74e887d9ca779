"""A replica's own cost per applied record and per entry, in-process, without gRPC's transport.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/replica_apply.py                       # both shapes, CPU figures
    .venv/bin/python benchmarks/replica_apply.py --shape ingest -n 40 --quiet  # under callgrind

The records are made as a primary makes them, by the primary's own code on an engine of its
own, then encoded (node/records.py), grouped into Records messages as the primary's sender
groups them (whole records, up to --message-bytes, or --per-message records), serialized as
the wire's protobuf, and fed to a Replica (its log in a temporary directory, fsync everysec)
the way its link feeds them: PrimaryMessage parsed from bytes, then Replica.on_records. Shapes:

    pipeline   a RESP pipeline of 16 `XADD mystream * user_id __rand_int__ action click
               amount 42` (resp_bench.py's redis-benchmark -c8 -P16 XADD, issue 13) through
               Batch.run_writes: one record (an XAPPEND of 16)
    xadds      the same 16 XADDs run one by one (Batch.run): one record of 16 explicit-ID
               XADD effects (what EXEC or a mixed pipeline ships)
    ingest     Engine.xadd_many of --entries rows {user_id: 12 digits, action: click,
               amount: 42} (service_bench's Ingest, issue 15): one record, an XAPPEND

What is counted: the protobuf parse, the log's write(2), the scan and checksum, the decode,
the apply, the backlog and the replica's bookkeeping; not gRPC's receive nor the event loop.

Instructions per record: run it under callgrind twice, with two values of -n and the same
--warm, and divide the difference of the totals by the difference of -n. Start-up and the
making of the records cancel out only if both runs make as many: --make (at least --warm
plus the larger -n) fixes that; PYTHONHASHSEED=0 keeps both runs' dicts alike. -n is rounded
up to whole messages (pick multiples of --per-message):

    for n in 240 720; do PYTHONHASHSEED=0 valgrind --tool=callgrind \\
        --callgrind-out-file=/dev/null .venv/bin/python benchmarks/replica_apply.py \\
        --shape pipeline -n $n --warm 192 --make 960 --quiet 2>&1 | grep refs; done

XSTREAM_ENGINE chooses the builds as for the server (xstream/builds.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from xstream.engine import Engine
from xstream.node import records
from xstream.node.batch import Batch
from xstream.node.store import Store
from xstream.replica.replica import Replica
from xstream.v1 import xstream_pb2 as pb

KEY = b"mystream"
PIPELINE = 16  # redis-benchmark -P16
NOW_MS = 1_800_000_000_000
UNARY = [b"user_id", b"__rand_int__", b"action", b"click", b"amount", b"42"]  # resp_bench's


def pipeline_records(n: int, one_by_one: bool) -> list[bytes]:
    """`n` records of a 16-XADD pipeline each, as the primary's write_batch logs them."""
    engine = Engine()
    argvs = [[b"XADD", KEY, b"*", *UNARY] for _ in range(PIPELINE)]
    out = []
    for r in range(n):
        batch = Batch()
        if one_by_one:
            for argv in argvs:
                batch.run(engine, argv, NOW_MS + r // 8)
        else:
            batch.run_writes(engine, argvs, NOW_MS + r // 8)
        out.append(records.encode(batch.result.effects))
    return out


def ingest_records(n: int, entries: int) -> list[bytes]:
    """`n` records of an Ingest batch of `entries` rows each, as Engine.xadd_many logs them."""
    engine = Engine()
    out = []
    uid = 100_000_000_000
    for r in range(n):
        rows = []
        for _ in range(entries):
            uid = (uid * 6364136223846793005 + 1442695040888963407) % 10**12  # 12 digits, mostly
            rows.append([b"user_id", b"%012d" % uid, b"action", b"click", b"amount", b"42"])
        out.append(records.encode(engine.xadd_many(KEY, rows, NOW_MS + r).effects))
    return out


def messages(recs: list[bytes], max_bytes: int, per_message: int) -> list[tuple[int, bytes]]:
    """(start offset, serialized PrimaryMessage) of each Records message, whole records each
    (the primary's sender: a backlog read of ~max_bytes; per_message bounds the records)."""
    out = []
    pos = 0
    i = 0
    while i < len(recs):
        j = i + 1
        size = len(recs[i])
        while j < len(recs) and j - i < per_message and size < max_bytes:
            size += len(recs[j])
            j += 1
        data = b"".join(recs[i:j])
        msg = pb.PrimaryMessage(
            records=pb.Records(start=pos, data=data, time_ms=0, primary_offset=pos + size)
        )
        out.append((j - i, msg.SerializeToString()))
        pos += size
        i = j
    return out


def feed(replica: Replica, wire: list[tuple[int, bytes]]) -> int:
    """Apply each message as the link does; the records applied."""
    applied = 0
    for count, raw in wire:
        r = pb.PrimaryMessage.FromString(raw).records
        replica.check_epoch(r.epoch)
        replica.on_records(r.start, r.data, r.primary_offset, r.time_ms, r.ack_now)
        applied += count
    return applied


def split(wire: list[tuple[int, bytes]], records_first: int) -> int:
    """The index of the first message after `records_first` records."""
    seen = 0
    for k, (count, _) in enumerate(wire):
        if seen >= records_first:
            return k
        seen += count
    return len(wire)


def run(data: Path, args: argparse.Namespace) -> tuple[float, int, int]:
    """(CPU seconds of the measured records, records measured, entries in them)."""
    made = max(args.make, args.warm + args.n)
    if args.shape == "ingest":
        recs = ingest_records(made, args.entries)
        per_record = args.entries
    else:
        recs = pipeline_records(made, args.shape == "xadds")
        per_record = PIPELINE
    wire = messages(recs, args.message_bytes, args.per_message)
    store = Store(data, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    replica = Replica(engine, store, 0, "r", "", "127.0.0.1:1", snapshot_bytes=1 << 62)
    replica.linking()  # as its link starts: the collector settled (collector.py)
    k = split(wire, args.warm)
    warmed = feed(replica, wire[:k])
    stop = split(wire, warmed + args.n)
    t0 = time.process_time()
    measured = feed(replica, wire[k:stop])
    spent = time.process_time() - t0
    if args.check:
        engine.check_integrity()
        primary = Engine()
        for rec in recs[: warmed + measured]:
            primary.apply_record(records.decode_payload(rec[records.HEADER.size :]))
        assert engine.digest() == primary.digest(), "the replica's state differs"
    store.close()
    return spent, measured, measured * per_record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=("pipeline", "xadds", "ingest"), default="pipeline")
    p.add_argument("-n", type=int, default=0, help="records measured (default per shape)")
    p.add_argument("--warm", type=int, default=0, help="records applied first, not measured")
    p.add_argument("--make", type=int, default=0, help="records made (at least warm + n)")
    p.add_argument("--entries", type=int, default=4000, help="rows per ingest record")
    p.add_argument("--message-bytes", type=int, default=256 << 10, help="bytes per message")
    p.add_argument(
        "--per-message",
        type=int,
        default=16,
        help="records per message at most (the sender's 2 ms of -c8 -P16)",
    )
    p.add_argument("--check", action="store_true", help="check integrity and digest after")
    p.add_argument("--quiet", action="store_true", help="print nothing (under callgrind)")
    args = p.parse_args()
    if not args.n:
        args.n = 50 if args.shape == "ingest" else 5000
    if not args.warm:
        args.warm = 5 if args.shape == "ingest" else 192
    with tempfile.TemporaryDirectory(prefix="replica-apply-") as d:
        spent, n, entries = run(Path(d) / "data", args)
    if not args.quiet:
        from xstream.builds import ENGINE, RESP_CODEC  # noqa: PLC0415

        print(f"engine: {ENGINE.build()}; RESP codec: {RESP_CODEC.build()}")
        print(f"{args.shape}: {n} records, {entries} entries: {spent / n * 1e6:.2f} CPU us per "
              f"record, {spent / entries * 1e6:.3f} per entry")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
