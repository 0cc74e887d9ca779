"""Resident memory of an xstream primary vs a real redis-server started side by side (issue 15).

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/memory_bench.py                 # 1M then 3M entries
    .venv/bin/python benchmarks/memory_bench.py --scale 0.1     # 100k then 300k, quicker
    .venv/bin/python benchmarks/memory_bench.py --replicas 0    # the lone primaries only

Both sides are started by this script on free loopback ports, data in a temporary directory,
and stopped before it exits: a primary of each with appendfsync everysec (the same
durability as xstream's log), with default settings otherwise (xstream's flags go after
`--`, e.g. `-- --backlog-bytes 1048576`). Each side gets the same load, from redis-py
pipelines of 1,000 from this process: `XADD mem * user_id <i> action click amount 42` for
i = 0, 1, ..., 1M entries (the first million) then 2M more (3M in all). Each server's
resident set (VmRSS in /proc/PID/status) is sampled idle at start, after 1M and after 3M,
once the node is quiet (replicas caught up, no snapshot being written: INFO's
rdb_bgsave_in_progress, and RSS steady). Printed: RSS at each point, growth per entry over
the first 1M and marginal from 1M to 3M, and xstream / redis of each; the peak (VmHWM) too;
and what the idle primary's RSS is (private and file-backed, and the mappings holding most
of it: memory_breakdown.py takes a primary's heap apart further).

Then, unless --replicas 0, the same again on fresh primaries with two replicas attached
(xstream's over gRPC, Redis's with --replicaof), every replica's RSS beside its primary's: a
replicated primary holds a backlog (xstream: --backlog-bytes; Redis: repl-backlog-size).

Every process shares this machine's cores and memory: the load average is printed first and
last. RSS does not move with CPU load the way rates do, but run it twice anyway.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from sides import RedisSide, Side, XstreamSide, fill, machine, rss_mb, status_kib, wait_for


def quiet(side: Side) -> bool:
    """No background save running on any of the side's servers."""
    return all(
        not redis.Redis(port=p).info("persistence").get("rdb_bgsave_in_progress", 0)
        for p in side.ports
    )


def settle(side: Side) -> list[float]:
    """Each process's RSS (MB) once replicas caught up, saves ended and RSS is steady."""
    wait_for(f"{side.name}'s replicas caught up", side.replicas_caught_up, 300)
    wait_for(f"{side.name}'s saves done", lambda: quiet(side), 300)
    last = [rss_mb(p.pid) for p in side.procs]
    for _ in range(20):
        time.sleep(0.5)
        now = [rss_mb(p.pid) for p in side.procs]
        if all(abs(a - b) < 0.5 for a, b in zip(now, last, strict=True)):
            return now
        last = now
    return last


def peaks(side: Side) -> list[float]:
    return [status_kib(p.pid, "VmHWM") / 1024 for p in side.procs]


def mappings(pid: int, top: int = 5) -> str:
    """What a process's resident memory is: RssAnon / RssFile, then the mappings holding the
    most of it (/proc/PID/smaps, grouped by file name; [anon] = anonymous maps: pymalloc's
    arenas, thread stacks, large malloc chunks)."""
    held: dict[str, int] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):  # a mapping's header line
            name = Path(head[5]).name if len(head) > 5 else "[anon]"
        elif head and head[0] == "Rss:":
            held[name] = held.get(name, 0) + int(head[1])
    biggest = sorted(held.items(), key=lambda kv: -kv[1])[:top]
    return (f"anon {status_kib(pid, 'RssAnon') / 1024:.1f} MB, file "
            f"{status_kib(pid, 'RssFile') / 1024:.1f} MB; most: "
            + ", ".join(f"{k} {v / 1024:.1f}" for k, v in biggest))  # fmt: skip


@dataclass
class Points:
    """One side's processes' RSS (MB, the primary's first) at the three points."""

    idle: list[float]
    at1: list[float]  # after the first `n1` entries
    at3: list[float]  # after `n3` in all
    peak: list[float]  # VmHWM at the end
    idle_what: str  # mappings() of the idle primary

    def growth(self, j: int, n1: int, n3: int) -> tuple[float, float]:
        """Process j's bytes per entry over the first n1, and marginal from n1 to n3."""
        g1 = (self.at1[j] - self.idle[j]) * 2**20 / n1
        return g1, (self.at3[j] - self.at1[j]) * 2**20 / (n3 - n1)


def measure(side: Side, first: int, total: int) -> Points:
    """Each process's RSS idle, after `first` entries and after `total`."""
    idle = settle(side)
    what = mappings(side.procs[0].pid)
    fill(side.port, "mem", 0, first)
    at1 = settle(side)
    fill(side.port, "mem", first, total - first)
    at3 = settle(side)
    return Points(idle, at1, at3, peaks(side), what)


def report(rows: dict[str, Points], n1: int, n3: int) -> None:
    roles = ["primary"] + [f"replica {i + 1}" for i in range(len(rows["redis"].idle) - 1)]
    m1, m3 = f"{n1 / 1e6:g}M", f"{n3 / 1e6:g}M"
    print(f"{'':18} {'idle MB':>8} {m1 + ' MB':>8} {m3 + ' MB':>8} {'peak MB':>8} "
          f"{'B/entry 0-' + m1:>14} {'B/entry ' + m1 + '-' + m3:>16}")  # fmt: skip
    for name, pts in rows.items():
        for j, role in enumerate(roles):
            g1, g3 = pts.growth(j, n1, n3)
            print(f"{name + ' ' + role:18} {pts.idle[j]:8.1f} {pts.at1[j]:8.1f} "
                  f"{pts.at3[j]:8.1f} {pts.peak[j]:8.1f} {g1:14.1f} {g3:16.1f}")  # fmt: skip
    for j, role in enumerate(roles):
        (x1, x3), (r1, r3) = (rows[k].growth(j, n1, n3) for k in ("xstream", "redis"))
        print(f"xstream / redis, {role}: growth over the first {m1} {x1 / r1:.2f}x, "
              f"marginal {m1}-{m3} {x3 / r3:.2f}x")  # fmt: skip
    for name, pts in rows.items():
        print(f"{name} primary idle {pts.idle[0]:.1f} MB: {pts.idle_what}")


def run(args: argparse.Namespace, replicas: int) -> dict[str, Points]:
    """Both sides measured and reported; their points by side name."""
    n1, n3 = int(1_000_000 * args.scale), int(3_000_000 * args.scale)
    print(f"\n== {'lone primaries' if not replicas else f'primaries with {replicas} replicas'}"
          f" ==", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as d:
        tmp = Path(d)
        sides: list[Side] = []
        rows: dict[str, Points] = {}
        try:
            sides.append(XstreamSide(tmp, args.xstream_args))
            sides.append(RedisSide(tmp))
            for side in sides:
                side.attach_replicas(replicas)
            for side in sides:  # one at a time: the load of one does not inflate the other
                rows[side.name] = measure(side, n1, n3)
            report(rows, n1, n3)
        finally:
            for side in sides:
                side.stop()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="entries: scale x (1M, then 3M)")
    p.add_argument("--replicas", type=int, default=2, help="replicas of the second run (0: none)")
    p.add_argument("xstream_args", nargs="*", help="extra flags of every xstream node (after --)")
    args = p.parse_args()
    print(machine(), flush=True)
    run(args, 0)
    if args.replicas:
        run(args, args.replicas)
    print(f"at the end: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
