"""Where an xstream primary's resident memory goes: a heap breakdown after N entries (issue 15).

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/memory_breakdown.py                  # 1M entries, 3 fields
    .venv/bin/python benchmarks/memory_breakdown.py -n 3000000 --at 1000000,3000000
    .venv/bin/python benchmarks/memory_breakdown.py --tracemalloc    # + Python allocation sites
    .venv/bin/python benchmarks/memory_breakdown.py --replicas 2     # a replicated primary
    .venv/bin/python benchmarks/memory_breakdown.py -- --backlog-bytes 1048576   # node flags

It starts this file again as a child that runs a primary in-process (the node of
`xstream primary`, data in a temporary directory), loads it from this process over the RESP
port as memory_bench.py does (redis-py pipelines of 1,000 `XADD mem * user_id <i> action click
amount 42`), and at each point asks the child (SIGUSR1, answered on the node's event loop) for:

  process     VmRSS, RssAnon (private), RssFile (shared libraries and other mapped files)
  malloc      glibc's mallinfo2: heap bytes in use and free, bytes in mmapped chunks
  pymalloc    arenas held (sys._debugmallocstats): Python's small objects
  engine      listpack bytes (len), their objects (bytes when full, the tail a bytearray),
              rax nodes (rax.c's count) and the arrays holding them
  backlog     bytes held, chunks
  commit      commit-time bookkeeping entries
  modules     how many are imported
  trimmed     VmRSS once glibc's malloc_trim(0) gave back the free heap's whole pages (taken
              last: later points start from the trimmed heap)
and, with --tracemalloc (slower, and its own bookkeeping inflates RSS), the top Python
allocation sites by size.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

HERE = Path(__file__).resolve()


# ---------------------------------------------------------------- the child: a node that reports


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]  # fmt: skip


def _status() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads"):
            value = int(line.split()[1])
            out[key] = value / 1024 if key != "Threads" else value
    return out


def _mallinfo() -> dict[str, float]:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    m = libc.mallinfo2()
    mb = 1 << 20
    return {"heap": m.arena / mb, "in use": m.uordblks / mb, "free": m.fordblks / mb,
            "mmapped": m.hblkhd / mb, "top pad": m.keepcost / mb}  # fmt: skip


def _pymalloc() -> dict[str, float]:
    """Arenas pymalloc holds (each 1 MiB on 3.11), from sys._debugmallocstats (to fd 2)."""
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# arenas allocated current"):
            out["arenas"] = int(line.split("=")[1].replace(",", ""))
        elif line.startswith("# bytes in allocated blocks"):
            out["in use"] = int(line.split("=")[1].replace(",", "")) / (1 << 20)
        elif line.startswith("# bytes in available blocks"):
            out["free"] = int(line.split("=")[1].replace(",", "")) / (1 << 20)
    return out


def _engine(node: Any) -> dict[str, float]:
    from xstream.engine.stream import Stream  # noqa: PLC0415

    lp_len = lp_alloc = nodes = entries = rax_bytes = 0
    for keyspace in node.engine.dbs:
        for value in keyspace.data.values():
            if not isinstance(value, Stream):
                continue
            entries += value.length
            for _, lp in value.rax.items():
                lp_len += len(lp)
                lp_alloc += sys.getsizeof(lp)
            nodes += value.rax.numnodes  # rax.c's count; xstream holds two arrays (flatrax.py)
            rax_bytes += sys.getsizeof(value.rax._keys) + sys.getsizeof(value.rax._values)
    mb = 1 << 20
    return {"entries": entries, "listpack bytes": lp_len / mb, "listpack objects":
            lp_alloc / mb, "rax nodes": nodes, "rax objects": rax_bytes / mb}  # fmt: skip


def _roles(node: Any) -> dict[str, float]:
    backlog = node.backlog
    chunks = backlog._chunks[backlog._head :]
    out = {"backlog bytes": (backlog.end - backlog.start) / (1 << 20),
           "backlog capacity": backlog.capacity / (1 << 20),
           "backlog chunks": len(chunks),
           "backlog objects": sum(map(sys.getsizeof, chunks)) / (1 << 20)}  # fmt: skip
    times = getattr(node, "commit_times", None)
    if times is not None:
        out["commit times"] = len(times)
    return out


def report(node: Any, traced: bool) -> dict[str, Any]:
    import gc  # noqa: PLC0415

    gc.collect()
    out: dict[str, Any] = {
        "process": _status(),
        "malloc": _mallinfo(),
        "pymalloc": _pymalloc(),
        "engine": _engine(node),
        "roles": _roles(node),
        "modules": len(sys.modules),
    }
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim(0)
    out["after malloc_trim"] = {"VmRSS": _status()["VmRSS"], "malloc": _mallinfo()}
    if traced:
        import tracemalloc  # noqa: PLC0415

        stats = tracemalloc.take_snapshot().statistics("lineno")[:20]
        out["tracemalloc"] = [f"{s.size / (1 << 20):8.2f} MB {s.count:9} {s.traceback[0]}"
                              for s in stats]  # fmt: skip
    return out


def child(argv: list[str], out: Path, traced: bool) -> None:
    if traced:
        import tracemalloc  # noqa: PLC0415

        tracemalloc.start(1)
    from xstream.cli import main  # noqa: PLC0415
    from xstream.server import runner  # noqa: PLC0415

    started = runner.start_primary

    async def start_primary(cfg: Any, tls: Any = None) -> Any:
        running = await started(cfg, tls)

        def dump() -> None:
            try:
                out.write_text(json.dumps(report(running.host.node, traced)))
            except Exception:
                import traceback  # noqa: PLC0415

                traceback.print_exc()
                raise

        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump)
        return running

    runner.start_primary = start_primary
    sys.exit(main(argv))


# ---------------------------------------------------------------- the parent: load and ask


def load(r: redis.Redis, start: int, stop: int) -> None:
    for lo in range(start, stop, 1000):
        pipe = r.pipeline(transaction=False)
        for i in range(lo, min(lo + 1000, stop)):
            pipe.xadd("mem", {"user_id": str(i), "action": "click", "amount": "42"})
        pipe.execute()


def ask(proc: subprocess.Popen[bytes], r: redis.Redis, out: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while r.info("persistence").get("rdb_bgsave_in_progress"):  # a snapshot being written
        assert time.monotonic() < deadline, "the snapshot did not end"
        time.sleep(0.2)
    time.sleep(1)
    out.unlink(missing_ok=True)
    proc.send_signal(signal.SIGUSR1)
    while not out.exists():
        time.sleep(0.1)
    time.sleep(0.2)
    return dict(json.loads(out.read_text()))


def show(at: int, rep: dict[str, Any]) -> None:
    print(f"\n-- after {at:,} entries --")
    for section in ("process", "malloc", "pymalloc", "engine", "roles"):
        items = ", ".join(f"{k} {v:,.1f}" if isinstance(v, float) else f"{k} {v:,}"
                          for k, v in rep[section].items())  # fmt: skip
        print(f"{section:9} {items}")
    print(f"{'modules':9} {rep['modules']}")
    trimmed = rep["after malloc_trim"]
    print(f"{'trimmed':9} VmRSS {trimmed['VmRSS']:,.1f} after malloc_trim(0) (what the free "
          f"heap held in whole pages); malloc free {trimmed['malloc']['free']:,.1f}")  # fmt: skip
    for line in rep.get("tracemalloc", []):
        print("   ", line)


def free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, check: Callable[[], bool]) -> None:
    import redis  # noqa: PLC0415

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except redis.exceptions.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not within 300 s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=1_000_000, help="entries in all")
    p.add_argument("--at", default="", help="comma-separated entry counts to report at")
    p.add_argument("--replicas", type=int, default=0, help="replicas attached to the primary")
    p.add_argument("--tracemalloc", action="store_true", help="Python allocation sites too")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    p.add_argument("node_args", nargs="*", help="extra flags of the primary (after --)")
    args = p.parse_args()
    if args.child:
        child(args.node_args, Path(args.child), args.tracemalloc)
        return 0
    import redis  # noqa: PLC0415 (not in the child: the node would hold it)

    points = sorted({0, *(int(x) for x in args.at.split(",") if x), args.n})
    with tempfile.TemporaryDirectory(prefix="memory-breakdown-") as d:
        port, grpc_port = free_port(), free_port()
        out = Path(d) / "report.json"
        node = ["primary", "--port", str(grpc_port), "--resp-port", str(port), "--data-dir",
                f"{d}/data", "--log-level", "warning", *args.node_args]  # fmt: skip
        flags = ["--tracemalloc"] if args.tracemalloc else []
        procs = [subprocess.Popen([sys.executable, str(HERE), "--child", str(out), *flags,
                                   "--", *node])]  # fmt: skip
        try:
            r = redis.Redis(port=port)
            wait_until("the primary", lambda: bool(r.ping()))
            replicas = []
            for i in range(args.replicas):
                rport = free_port()
                procs.append(subprocess.Popen([sys.executable, "-m", "xstream.cli", "replica",
                    "--port", str(free_port()), "--resp-port", str(rport), "--primary",
                    f"127.0.0.1:{grpc_port}", "--data-dir", f"{d}/r{i}",
                    "--log-level", "warning"]))  # fmt: skip
                replicas.append(redis.Redis(port=rport))
            for rep in replicas:
                wait_until("a replica", lambda rep=rep: bool(rep.ping()))  # type: ignore[misc]
            done = 0
            for at in points:
                load(r, done, at)
                done = at
                end = r.info("replication")["master_repl_offset"]
                wait_until(
                    "the replicas caught up",
                    lambda end=end: all(  # type: ignore[misc]
                        x.info("replication")["slave_repl_offset"] >= end for x in replicas
                    ),
                )
                show(at, ask(procs[0], r, out))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
