"""System calls and CPU per request of each server process under redis-benchmark XADD, xstream
and redis-server side by side, each a primary with replicas (issue 13's -c 8 -P 16 row).

Run by hand, never by the test suite (needs `perf`, Debian's linux-perf, and redis-benchmark):

    .venv/bin/python benchmarks/syscalls.py                 # -n 200000 -c 8 -P 16, 2 replicas
    .venv/bin/python benchmarks/syscalls.py -c 1 -P 1 -n 20000 --replicas 0

Each side is started as resp_bench.py starts it (sides.py: appendfsync everysec both), its
replicas attached and in sync; then `perf stat -e raw_syscalls:sys_enter -p PID` is attached
to every server process (a kernel tracepoint: it counts without slowing the process, unlike
strace) while redis-benchmark runs. Printed per process: CPU µs per request (user + system,
from /proc, counted until a second after the run so replicas finish applying) and system
calls per request (every thread's); per side, the machine's busy and idle CPU seconds over
the run (from /proc/stat: is any core left idle?). `perf trace -s -p PID` on one process
says which calls they are; py-spy says where the rest of the CPU goes.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from resp_bench import FIELDS, redis_benchmark
from sides import RedisSide, Side, XstreamSide, cpu_seconds, machine


def cpu_times() -> list[int]:
    """The machine's CPU time in clock ticks per state (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def perf_count(path: Path) -> int:
    for line in path.read_text().splitlines():
        if "raw_syscalls:sys_enter" in line:
            return int(line.split()[0].replace(",", ""))
    raise RuntimeError(f"no count in {path}: {path.read_text()[-500:]}")


def measure(side: Side, args: argparse.Namespace, tmp: Path) -> None:
    pids = [p.pid for p in side.procs]
    outs = [tmp / f"{side.name}-{i}.perf" for i in range(len(pids))]
    perfs = [
        subprocess.Popen(
            ["perf", "stat", "-e", "raw_syscalls:sys_enter", "-p", str(pid), "-o", str(out)]
        )
        for pid, out in zip(pids, outs, strict=True)
    ]
    time.sleep(0.5)  # perf attached
    cpu0, ticks0 = [cpu_seconds(pid) for pid in pids], cpu_times()
    t0 = time.monotonic()
    rate = redis_benchmark(side.port, args.n, args.c, args.P, ["XADD", "k", "*", *FIELDS])
    wall = time.monotonic() - t0
    ticks = [b - a for a, b in zip(ticks0, cpu_times(), strict=True)]
    time.sleep(1.0)  # replicas finish applying
    cpu1 = [cpu_seconds(pid) for pid in pids]
    for perf in perfs:
        perf.send_signal(signal.SIGINT)
    for perf in perfs:
        perf.wait(30)
    idle = (ticks[3] + ticks[4]) / 100  # idle + iowait, in seconds (USER_HZ 100)
    busy = sum(ticks) / 100 - idle
    print(f"{side.name}: {rate:,.0f} requests/s over {wall:.2f} s; machine busy {busy:.2f} "
          f"CPU-s, idle {idle:.2f}")  # fmt: skip
    for i, (pid, out) in enumerate(zip(pids, outs, strict=True)):
        role = "primary" if i == 0 else f"replica {i}"
        cpu_us = 1e6 * (cpu1[i] - cpu0[i]) / args.n
        calls = perf_count(out)
        print(f"  {role:<10} pid {pid:<7} {cpu_us:6.2f} CPU us/request  "
              f"{calls / args.n:.3f} syscalls/request ({calls:,})")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("-n", type=int, default=200_000, help="requests (default 200000)")
    p.add_argument("-c", type=int, default=8, help="redis-benchmark clients (default 8)")
    p.add_argument("-P", type=int, default=16, help="redis-benchmark pipeline (default 16)")
    p.add_argument("--replicas", type=int, default=2, help="replicas of each side (default 2)")
    p.add_argument("--side", choices=["both", "xstream", "redis"], default="both")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for tool in ("perf", "redis-benchmark", "redis-server"):
        if shutil.which(tool) is None:
            print(f"syscalls.py: {tool} is missing (apt-get install linux-perf redis-tools "
                  "redis-server)", file=sys.stderr)  # fmt: skip
            return 2
    print(machine())
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in ("xstream", "redis"):
            if args.side not in ("both", name):
                continue
            (tmp / name).mkdir()
            side: Side = XstreamSide(tmp / name, []) if name == "xstream" else RedisSide(tmp / name)
            try:
                side.attach_replicas(args.replicas)
                measure(side, args, tmp)
            finally:
                side.stop()
    print(machine())
    return 0


if __name__ == "__main__":
    sys.exit(main())
