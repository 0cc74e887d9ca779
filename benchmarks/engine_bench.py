"""Engine vs a real redis-server: XADD rate, XRANGE decode rate and bytes per entry.

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/engine_bench.py             # 1,000,000 entries per workload
    .venv/bin/python benchmarks/engine_bench.py --quick     # 50,000 entries
    .venv/bin/python benchmarks/engine_bench.py --entries 200000 --workload payload

Two workloads: `fields` = {user_id: u<random int>, action: one of a few words, amount: a random
int as a string}, and `payload` = one field holding 100 random bytes.

What is measured, for each workload:

  XADD, argv        Engine.execute([XADD key * f v ...]) once per entry (prebuilt argvs).
  XADD, batched     Engine.xadd_many(key, entries[i : i + batch], now_ms): one call per batch;
                    the resulting nodes are checked to be byte-identical to the argv run's.
  redis XADD        redis-py pipelines of `batch` commands (client included), and the server's
                    own time per XADD from INFO commandstats (client excluded).
  XRANGE            a full scan in COUNT 100 and COUNT 1000 pages (`(last-id` as the next start)
                    and one `XRANGE key - +`; engine through execute(), redis through redis-py
                    (parsing replies in Python: no hiredis) and the server's own time.
  bytes per entry   engine MEMORY USAGE (keys.memory_usage: listpack and rax bytes), the Python
                    heap the stream holds (tracemalloc, a separate batched load), vs redis
                    MEMORY USAGE (default samples, and SAMPLES 0: every node) and the INFO
                    used_memory delta of the load.
  XREADGROUP        a new group's consumer reads the whole stream with `>` in COUNT 100 pages,
                    acknowledging each page with one XACK (100 IDs) before the next read, so
                    its PEL stays small; per entry, for XREADGROUP and XACK apart, engine
                    through execute(), redis through redis-py and server time.
  XACK vs PEL size  for each of `--pel-sizes` (P): a group's consumer holds P pending entries,
                    then acks its 100 oldest and reads 100 new ones, `--pel-acks` IDs in all,
                    so the PEL stays at P; µs per acknowledged ID (XACK alone timed), engine
                    through execute(), redis server time (commandstats). Redis's PEL is a rax:
                    O(log P) per ID, so a flat row is the target.

Rates are per entry (XADD per call); the table also gives the engine's µs per entry. The
engine is whichever build xstream.engine loads (printed first): compiled with mypyc, or pure
Python with XSTREAM_ENGINE=pure.

The engine's clock is simulated: now_ms advances by 1 every `batch` entries, for both engine
runs, so their IDs and layouts are identical. redis-server gets the engine's concrete IDs, so
its listpacks hold the same bytes and memory ratios compare allocation overheads only.
The listpacks are also compared with redis-server's own (DUMP, rdbcompression off): the
memory rows compare identical bytes. Engine timings are wall-clock by default (`--clock cpu`:
this process's CPU time, steadier on a shared machine), best of `--repeat` runs, with the
inputs frozen out of the cyclic GC (gc.freeze); redis timings are wall-clock.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import redis
from sides import free_port

from xstream import builds
from xstream.engine import Engine
from xstream.engine.commands.keys import memory_usage
from xstream.engine.stream import Stream

KEY = b"bench"
BASE_MS = 1_700_000_000_000
ACTIONS = [b"login", b"logout", b"view", b"click", b"purchase", b"refund"]
Entry = list[bytes]


# -- workloads ---------------------------------------------------------------------------------


def fields_workload(n: int, rng: random.Random) -> list[Entry]:
    return [
        [
            b"user_id",
            b"u%d" % rng.randrange(10_000_000),
            b"action",
            rng.choice(ACTIONS),
            b"amount",
            b"%d" % rng.randrange(100_000),
        ]
        for _ in range(n)
    ]


def payload_workload(n: int, rng: random.Random) -> list[Entry]:
    return [[b"payload", rng.randbytes(100)] for _ in range(n)]


WORKLOADS: dict[str, Callable[[int, random.Random], list[Entry]]] = {
    "fields": fields_workload,
    "payload": payload_workload,
}


# -- redis-server --------------------------------------------------------------------------------


@contextmanager
def redis_server(binary: str) -> Iterator[redis.Redis]:
    """A throwaway redis-server on a free loopback port, no persistence."""
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    proc = subprocess.Popen(
        [*args, "no", "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        client = redis.Redis(port=port, protocol=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{binary} did not answer PING on port {port}") from None
                time.sleep(0.05)
        client.response_callbacks.clear()  # raw replies: what the engine returns
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_usec(r: redis.Redis, command: str) -> tuple[int, int]:
    """(calls, total µs) the server spent in `command` since the last CONFIG RESETSTAT."""
    info = r.execute_command("INFO", "commandstats").decode()
    for line in info.splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            stats = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
            return int(stats["calls"]), int(stats["usec"])
    return 0, 0


def redis_version(r: redis.Redis) -> str:
    raw: bytes = r.execute_command("INFO", "server")
    info = raw.decode()
    return info.split("redis_version:")[1].split()[0]


def raw_xadd_seconds(r: redis.Redis, ids: list[bytes], entries: list[Entry], batch: int) -> float:
    """Send the XADDs as pre-encoded RESP, `batch` per write, on a plain socket: redis-server
    and the loopback without a Python client's costs. Returns the seconds taken."""
    chunks = []
    for i in range(0, len(entries), batch):
        cmds = []
        for eid, fv in zip(ids[i : i + batch], entries[i : i + batch], strict=True):
            argv = [b"XADD", KEY, eid, *fv]
            cmds.append(b"*%d\r\n" % len(argv))
            cmds += [b"$%d\r\n%s\r\n" % (len(a), a) for a in argv]
        chunks.append((b"".join(cmds), 2 * len(ids[i : i + batch])))
    kwargs = r.connection_pool.connection_kwargs
    with socket.create_connection((kwargs.get("host", "localhost"), kwargs["port"])) as sock:
        t = time.perf_counter()
        for payload, lines in chunks:  # each reply is `$<n>\r\n<id>\r\n`: two lines
            sock.sendall(payload)
            got = b""
            while got.count(b"\r\n") < lines:
                got += sock.recv(1 << 20)
            assert not got.startswith(b"-"), got[:200]
        return time.perf_counter() - t


def dump_nodes(r: redis.Redis, key: bytes) -> list[tuple[bytes, bytes]]:
    """The (rax key, listpack) pairs of a stream, from DUMP (RDB_TYPE_STREAM_LISTPACKS_*)."""
    r.execute_command("CONFIG", "SET", "rdbcompression", "no")
    d = r.execute_command("DUMP", key)
    assert d[0] in (15, 19, 21), f"not a stream dump: type {d[0]}"
    count, i = _rdb_len(d, 1)
    nodes = []
    for _ in range(count):
        klen, i = _rdb_len(d, i)
        nkey, i = d[i : i + klen], i + klen
        llen, i = _rdb_len(d, i)
        nodes.append((nkey, d[i : i + llen]))
        i += llen
    return nodes


def _rdb_len(d: bytes, i: int) -> tuple[int, int]:
    kind = d[i] >> 6
    if kind == 0:
        return d[i] & 63, i + 1
    if kind == 1:
        return (d[i] & 63) << 8 | d[i + 1], i + 2
    if d[i] == 0x80:
        return int.from_bytes(d[i + 1 : i + 5], "big"), i + 5
    assert d[i] == 0x81, f"unexpected RDB length byte {d[i]:#x}"
    return int.from_bytes(d[i + 1 : i + 9], "big"), i + 9


def used_memory(r: redis.Redis) -> int:
    info = r.execute_command("INFO", "memory").decode()
    for line in info.splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    raise RuntimeError("no used_memory in INFO memory")


# -- measurements ----------------------------------------------------------------------------


@dataclass
class Row:
    workload: str
    measure: str
    engine: float | None
    redis: float | None
    unit: str  # "/s" rates (higher is better) or "B" bytes per entry (lower is better)
    note: str = ""


_CLOCK: Callable[[], float] = time.perf_counter  # the engine's clock: main() sets args.clock's


def best_of(args: argparse.Namespace, run: Callable[[], object]) -> tuple[float, object]:
    """The fastest of `args.repeat` runs (seconds, on args.clock) and the last run's result."""
    clock = _CLOCK
    times = []
    result: object = None
    for _ in range(args.repeat):
        gc.collect()
        t = clock()
        result = run()
        times.append(clock() - t)
    return min(times), result


def engine_xadd_argv(argvs: list[list[bytes]], batch: int) -> Engine:
    e = Engine()
    execute = e.execute
    for i, argv in enumerate(argvs):
        execute(argv, BASE_MS + i // batch)
    return e


def engine_xadd_batched(entries: list[Entry], batch: int) -> Engine:
    e = Engine()
    add = e.xadd_many
    for i in range(0, len(entries), batch):
        add(KEY, entries[i : i + batch], BASE_MS + i // batch)
    return e


def node_bytes(e: Engine) -> list[tuple[bytes, bytes]]:
    s = e.keyspace.get(KEY)
    assert isinstance(s, Stream)
    return [(k, bytes(lp)) for k, lp in s.nodes()]


def engine_pages(e: Engine, count: int) -> int:
    """Scan the whole stream in XRANGE pages of `count`; returns entries seen."""
    start = b"-"
    seen = 0
    cnt = b"%d" % count
    while True:
        page = e.execute([b"XRANGE", KEY, start, b"+", b"COUNT", cnt]).reply
        assert isinstance(page, list)
        seen += len(page)
        if len(page) < count:
            return seen
        last = page[-1]
        assert isinstance(last, list) and isinstance(last[0], bytes)
        start = b"(" + last[0]


def redis_pages(r: redis.Redis, count: int) -> int:
    start = b"-"
    seen = 0
    while True:
        page = r.execute_command("XRANGE", KEY, start, b"+", "COUNT", count)
        seen += len(page)
        if len(page) < count:
            return seen
        start = b"(" + page[-1][0]


def engine_group_pass(e: Engine, count: int, now_ms: int) -> tuple[float, float, int]:
    """A new group's consumer reads the whole stream in XREADGROUP pages of `count` and
    acknowledges each page (one XACK) before reading the next, so its PEL stays small:
    (read seconds, ack seconds, entries), on the run's clock."""
    e.execute([b"XGROUP", b"DESTROY", KEY, b"bench"])
    e.execute([b"XGROUP", b"CREATE", KEY, b"bench", b"0"])
    read = [b"XREADGROUP", b"GROUP", b"bench", b"c", b"COUNT", b"%d" % count, b"STREAMS", KEY, b">"]
    t_read = t_ack = 0.0
    seen = 0
    gc.collect()
    while True:
        t = _CLOCK()
        reply = e.execute(read, now_ms).reply
        t_read += _CLOCK() - t
        if not isinstance(reply, list) or not reply:
            return t_read, t_ack, seen
        first = reply[0]
        assert isinstance(first, list)
        page = first[1]
        assert isinstance(page, list)
        ids = []
        for entry in page:
            assert isinstance(entry, list) and isinstance(entry[0], bytes)
            ids.append(entry[0])
        t = _CLOCK()
        e.execute([b"XACK", KEY, b"bench", *ids])
        t_ack += _CLOCK() - t
        seen += len(ids)


def redis_group_pass(r: redis.Redis, count: int) -> tuple[float, float, int]:
    r.execute_command("XGROUP", "DESTROY", KEY, "bench")
    r.execute_command("XGROUP", "CREATE", KEY, "bench", "0")
    read = ("XREADGROUP", "GROUP", "bench", "c", "COUNT", count, "STREAMS", KEY, ">")
    t_read = t_ack = 0.0
    seen = 0
    while True:
        t = time.perf_counter()
        reply = r.execute_command(*read)
        t_read += time.perf_counter() - t
        if not reply:
            return t_read, t_ack, seen
        ids = [entry[0] for entry in reply[0][1]]
        t = time.perf_counter()
        r.execute_command("XACK", KEY, "bench", *ids)
        t_ack += time.perf_counter() - t
        seen += len(ids)


def engine_pel_acks(entries: list[Entry], pel: int, acks: int) -> tuple[float, int]:
    """XACK cost at a PEL of `pel` entries: (seconds on the run's clock, IDs acknowledged)."""
    e = engine_xadd_batched(entries[: pel + acks], 1000)
    e.execute([b"XGROUP", b"CREATE", KEY, b"g", b"0"])
    for done in range(0, pel, 10_000):
        page = b"%d" % min(10_000, pel - done)
        e.execute([b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", page, b"STREAMS", KEY, b">"])
    read = [b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"100", b"STREAMS", KEY, b">"]
    pending = [b"XPENDING", KEY, b"g", b"-", b"+", b"100"]
    elapsed = 0.0
    acked = 0
    gc.collect()
    while acked < acks:
        oldest = e.execute(pending).reply
        assert isinstance(oldest, list)
        ack = [b"XACK", KEY, b"g"]
        for item in oldest:
            assert isinstance(item, list) and isinstance(item[0], bytes)
            ack.append(item[0])
        t = _CLOCK()
        reply = e.execute(ack).reply
        elapsed += _CLOCK() - t
        assert reply == len(oldest), (reply, len(oldest))
        acked += len(oldest)
        e.execute(read)
    return elapsed, acked


def redis_pel_acks(r: redis.Redis, entries: list[Entry], pel: int, acks: int) -> float:
    """The same on redis-server: server µs per acknowledged ID."""
    r.execute_command("FLUSHALL")
    for i in range(0, pel + acks, 1000):
        pipe = r.pipeline(transaction=False)
        for j, fv in enumerate(entries[i : min(i + 1000, pel + acks)], start=i):
            pipe.execute_command("XADD", KEY, b"%d-%d" % (BASE_MS + j // 1000, j % 1000), *fv)
        pipe.execute()
    r.execute_command("XGROUP", "CREATE", KEY, "g", "0")
    for done in range(0, pel, 10_000):
        page = min(10_000, pel - done)
        r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", page, "STREAMS", KEY, ">")
    r.execute_command("CONFIG", "RESETSTAT")
    acked = 0
    while acked < acks:
        ids = [item[0] for item in r.execute_command("XPENDING", KEY, "g", "-", "+", 100)]
        assert r.execute_command("XACK", KEY, "g", *ids) == len(ids)
        acked += len(ids)
        r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", 100, "STREAMS", KEY, ">")
    calls, usec = server_usec(r, "xack")
    assert calls
    return usec / 1e6 / acked


def bench_pel_sizes(r: redis.Redis | None, args: argparse.Namespace) -> list[Row]:
    sizes = [int(x) for x in args.pel_sizes.split(",") if x]
    rows: list[Row] = []
    if not sizes:
        return rows
    print(f"XACK vs PEL size: {args.pel_acks:,} IDs acknowledged per size", flush=True)
    entries = fields_workload(max(sizes) + args.pel_acks, random.Random(args.seed))
    for pel in sizes:
        elapsed, acked = engine_pel_acks(entries, pel, args.pel_acks)
        gc.collect()
        theirs = None
        if r is not None:
            theirs = 1 / redis_pel_acks(r, entries, pel, args.pel_acks)
            r.execute_command("FLUSHALL")
        row = Row("fields", f"XACK, PEL {pel:,}, server", acked / elapsed, theirs, "/s")
        row.note = "redis: server time only"
        rows.append(row)
        print(
            f"  {row.measure:<34} engine {fmt(row.engine, '/s'):>14}   "
            f"redis {fmt(theirs, '/s'):>14}",
            flush=True,
        )
    return rows


def heap_bytes(entries: list[Entry], batch: int) -> int:
    """Python heap held by a stream loaded with xadd_many (tracemalloc, inputs excluded)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    e = engine_xadd_batched(entries, batch)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert e.keyspace.get(KEY) is not None
    return held


def bench_workload(
    name: str, entries: list[Entry], r: redis.Redis | None, args: argparse.Namespace
) -> list[Row]:
    n = len(entries)
    batch = args.batch
    rows: list[Row] = []

    def row(
        measure: str, mine: float | None, theirs: float | None, unit: str, note: str = ""
    ) -> None:
        rows.append(Row(name, measure, mine, theirs, unit, note))
        print(
            f"  {measure:<34} engine {fmt(mine, unit):>14}   redis {fmt(theirs, unit):>14}",
            flush=True,
        )

    print(f"{name}: {n:,} entries", flush=True)
    # -- XADD --
    argvs = [[b"XADD", KEY, b"*", *fv] for fv in entries]
    gc.collect()
    gc.freeze()  # the inputs are not the engine's: keep the cyclic GC off them
    t_argv, e = best_of(args, lambda: engine_xadd_argv(argvs, batch))
    assert isinstance(e, Engine)
    t_batch, e2 = best_of(args, lambda: engine_xadd_batched(entries, batch))
    assert isinstance(e2, Engine)
    assert node_bytes(e2) == node_bytes(e), "batched and argv appends left different nodes"
    del e2
    # the simulated clock gives `batch` entries per millisecond: IDs <ms>-0 .. <ms>-<batch - 1>
    ids = [b"%d-%d" % (BASE_MS + i // batch, i % batch) for i in range(n)]
    s = e.keyspace.get(KEY)
    assert isinstance(s, Stream) and s.last_id.encode() == ids[-1]
    redis_py = redis_raw = redis_server_rate = None
    if r is not None:
        r.execute_command("FLUSHALL")
        t = time.perf_counter()
        for i in range(0, n, batch):
            pipe = r.pipeline(transaction=False)
            for eid, fv in zip(ids[i : i + batch], entries[i : i + batch], strict=True):
                pipe.execute_command("XADD", KEY, eid, *fv)
            pipe.execute()
        redis_py = n / (time.perf_counter() - t)
        r.execute_command("FLUSHALL")
        mem0 = used_memory(r)
        r.execute_command("CONFIG", "RESETSTAT")
        redis_raw = n / raw_xadd_seconds(r, ids, entries, batch)
        calls, usec = server_usec(r, "xadd")
        redis_server_rate = calls / (usec / 1e6) if usec else None
        redis_used = used_memory(r) - mem0
        same = dump_nodes(r, KEY) == node_bytes(e)
        print(f"  listpacks identical to redis-server's (DUMP): {'yes' if same else 'NO'}")
    row("XADD, argv (1 execute/entry)", n / t_argv, redis_py, "/s", "redis: redis-py pipeline")
    row(f"XADD, batched ({batch}/call)", n / t_batch, redis_raw, "/s", "redis: raw RESP pipeline")
    row("XADD, batched vs server time", n / t_batch, redis_server_rate, "/s", "redis: commandstats")
    # -- XRANGE --
    for count in (100, 1000):
        t_eng, seen = best_of(args, partial(engine_pages, e, count))
        assert seen == n, (seen, n)
        rate_r = rate_srv = None
        if r is not None:
            r.execute_command("CONFIG", "RESETSTAT")
            t = time.perf_counter()
            assert redis_pages(r, count) == n
            rate_r = n / (time.perf_counter() - t)
            _, usec = server_usec(r, "xrange")
            rate_srv = n / (usec / 1e6) if usec else None
        row(f"XRANGE COUNT {count} pages", n / t_eng, rate_r, "/s", "redis: redis-py client incl.")
        row(f"XRANGE COUNT {count}, server", n / t_eng, rate_srv, "/s", "redis: server time only")
    t_eng, _ = best_of(args, lambda: e.execute([b"XRANGE", KEY, b"-", b"+"]).reply)
    rate_r = rate_srv = None
    if r is not None:
        r.execute_command("CONFIG", "RESETSTAT")
        t = time.perf_counter()
        assert len(r.execute_command("XRANGE", KEY, "-", "+")) == n
        rate_r = n / (time.perf_counter() - t)
        _, usec = server_usec(r, "xrange")
        rate_srv = n / (usec / 1e6) if usec else None
    row("XRANGE - + (one reply)", n / t_eng, rate_r, "/s", "redis: redis-py client incl.")
    row("XRANGE - +, server", n / t_eng, rate_srv, "/s", "redis: server time only")
    # -- memory --
    gc.unfreeze()
    mine = memory_usage(KEY, s) / n
    heap = heap_bytes(entries, batch) / n
    mu = mu0 = used = None
    if r is not None:
        mu = int(r.execute_command("MEMORY", "USAGE", KEY)) / n
        mu0 = int(r.execute_command("MEMORY", "USAGE", KEY, "SAMPLES", "0")) / n
        used = redis_used / n
    row("bytes/entry, MEMORY USAGE", mine, mu, "B", "redis: default 5 samples")
    row("bytes/entry, MEMORY USAGE exact", mine, mu0, "B", "redis: SAMPLES 0")
    row("bytes/entry, heap vs used_memory", heap, used, "B", "engine: tracemalloc")
    # -- XREADGROUP, XACK (the stream's groups change from here on) --
    passes = [engine_group_pass(e, 100, BASE_MS + n) for _ in range(args.repeat)]
    assert all(seen == n for _, _, seen in passes), passes
    t_read, t_ack = min(p[0] for p in passes), min(p[1] for p in passes)
    read_r = read_srv = ack_r = ack_srv = None
    if r is not None:
        r.execute_command("CONFIG", "RESETSTAT")
        r_read, r_ack, seen = redis_group_pass(r, 100)
        assert seen == n, (seen, n)
        read_r, ack_r = n / r_read, n / r_ack
        _, usec = server_usec(r, "xreadgroup")
        read_srv = n / (usec / 1e6) if usec else None
        _, usec = server_usec(r, "xack")
        ack_srv = n / (usec / 1e6) if usec else None
    row("XREADGROUP COUNT 100 >", n / t_read, read_r, "/s", "redis: redis-py client incl.")
    row("XREADGROUP COUNT 100 >, server", n / t_read, read_srv, "/s", "redis: server time only")
    row("XACK 100 IDs/call", n / t_ack, ack_r, "/s", "redis: redis-py client incl.")
    row("XACK 100 IDs/call, server", n / t_ack, ack_srv, "/s", "redis: server time only")
    return rows


# -- output ------------------------------------------------------------------------------------


def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}/s" if unit == "/s" else f"{v:,.1f} B"


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'workload':<8} {'measure':<34} {'engine':>14} {'µs':>6} {'redis-server':>14} "
        f"{'ratio':>7}  note"
    )
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r.engine / r.redis:.2f}x" if r.engine and r.redis else "-"
        engine, theirs = fmt(r.engine, r.unit), fmt(r.redis, r.unit)
        usec = f"{1e6 / r.engine:.2f}" if r.engine and r.unit == "/s" else ""
        print(
            f"{r.workload:<8} {r.measure:<34} {engine:>14} {usec:>6} {theirs:>14} {ratio:>7}  "
            f"{r.note}"
        )
    print()
    print("ratio = engine / redis: above 1 is better for rates, below 1 is better for bytes;")
    print("µs = the engine's microseconds per entry (XADD argv: per call).")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--entries", type=int, default=1_000_000, help="entries per workload")
    p.add_argument("--quick", action="store_true", help="50,000 entries, one run each")
    p.add_argument("--batch", type=int, default=1000, help="entries per xadd_many / pipeline")
    p.add_argument("--workload", choices=["fields", "payload", "both", "none"], default="both")
    p.add_argument("--repeat", type=int, default=2, help="engine runs per timing (best kept)")
    p.add_argument("--redis-server", default="/usr/bin/redis-server", help="the binary to start")
    p.add_argument("--no-redis", action="store_true", help="engine numbers only")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--pel-sizes",
        default="1000,100000,1000000",
        help="PEL sizes for the XACK vs PEL size rows, comma separated (empty: none)",
    )
    p.add_argument("--pel-acks", type=int, default=10_000, help="IDs acknowledged per PEL size")
    p.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="engine timings: wall (perf_counter) or this process's CPU time (process_time),\n"
        "steadier on a shared machine; redis client timings are always wall",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.entries = min(args.entries, 50_000)
        args.repeat = 1
        args.pel_sizes = "1000,10000"
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global _CLOCK  # noqa: PLW0603  (one setting for the whole run)
    args = parse_args(argv)
    _CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    names = {"both": ["fields", "payload"], "none": []}.get(args.workload, [args.workload])
    python = sys.version.split()[0]
    load = os.getloadavg()[0]
    print(f"python {python}, {os.cpu_count()} CPUs, load {load:.2f}, engine clock {args.clock}")
    print(f"engine: {builds.ENGINE.build()}")
    rows: list[Row] = []
    with _maybe_redis(args) as r:
        if r is not None:
            print(f"redis-server {redis_version(r)}")
        for name in names:
            entries = WORKLOADS[name](args.entries, random.Random(args.seed))
            rows += bench_workload(name, entries, r, args)
            del entries
            gc.collect()
        rows += bench_pel_sizes(r, args)
    print_table(rows)
    return 0


@contextmanager
def _maybe_redis(args: argparse.Namespace) -> Iterator[redis.Redis | None]:
    if args.no_redis:
        yield None
        return
    if not Path(args.redis_server).exists():
        sys.exit(f"{args.redis_server} not found (apt-get install redis-server, or --no-redis)")
    with redis_server(args.redis_server) as r:
        yield r


if __name__ == "__main__":
    sys.exit(main())
