"""The engine's own cost of one XADD, as the primary calls it: for callgrind's instruction counts.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/xadd_cost.py                    # CPU us per XADD, both shapes
    for n in 20000 60000; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/xadd_cost.py --shape unary -n $n --quiet 2>&1 | grep refs; done

Two shapes, each `XADD s * user_id <12 digits> action click amount 42` (unary_cost.py's):

  unary     Engine.execute(argv, now_ms, 0), once per XADD: what Primary.write calls for one
            command (a RESP -P1 client, a gRPC Execute).
  batch     Batch.run_writes(engine, argvs, now_ms, 0) on `--batch` argvs at a time: what
            Primary.write_batch calls for a pipeline's run of writes (one Engine.xadd_many per
            run of plain XADDs to one key), the Batch's bookkeeping included.

The clock advances by 1 ms every `--per-ms` XADDs (30: about a unary client's rate), so IDs
alternate between a new millisecond and the next sequence number as they do when served.
The argvs are built before the loop (the edge decodes them), fresh lists each, as the RESP
codec hands them over.

Instructions per XADD: run under callgrind with two values of -n and divide the difference of
the totals by the difference of -n (start-up and the argvs' building are linear in -n too, so
`--quiet` skips nothing: the figure includes building one argv list, ~1% of it; compare
runs of the same script). XSTREAM_ENGINE chooses the build (xstream/builds.py).
"""

from __future__ import annotations

import argparse
import sys
import time

from xstream.engine import Engine
from xstream.node.batch import Batch

BASE_MS = 1_764_000_000_000  # a present-day millisecond clock
FIELDS = (b"user_id", b"123456789012", b"action", b"click", b"amount", b"42")


def argvs(n: int) -> list[list[bytes]]:
    return [[b"XADD", b"s", b"*", *FIELDS] for _ in range(n)]


def run_unary(engine: Engine, n: int, per_ms: int) -> None:
    execute = engine.execute
    for i, argv in enumerate(argvs(n)):
        execute(argv, BASE_MS + i // per_ms, 0)


def run_batch(engine: Engine, n: int, per_ms: int, size: int) -> None:
    todo = argvs(n)
    for i in range(0, n, size):
        Batch().run_writes(engine, todo[i : i + size], BASE_MS + i // per_ms, 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=200_000, help="XADDs per shape")
    p.add_argument("--shape", choices=("unary", "batch", "both"), default="both")
    p.add_argument("--per-ms", type=int, default=30, help="XADDs per millisecond of the clock")
    p.add_argument("--batch", type=int, default=16, help="argvs per write_batch (batch shape)")
    p.add_argument("--quiet", action="store_true", help="print nothing (under callgrind)")
    args = p.parse_args()
    shapes = ("unary", "batch") if args.shape == "both" else (args.shape,)
    for shape in shapes:
        engine = Engine()
        t0 = time.process_time()
        if shape == "unary":
            run_unary(engine, args.n, args.per_ms)
        else:
            run_batch(engine, args.n, args.per_ms, args.batch)
        spent = time.process_time() - t0
        assert engine.execute([b"XLEN", b"s"]).reply == args.n
        if not args.quiet:
            print(f"{shape}: {spent / args.n * 1e6:.2f} CPU us per XADD")
    if not args.quiet:
        from xstream.builds import ENGINE  # noqa: PLC0415

        print(f"engine: {ENGINE.build()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
