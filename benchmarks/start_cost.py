"""What a replica's process start costs, in CPU or in instructions (issue 15: the full resync's
spawn -> offsets equal is half the replica starting).

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/start_cost.py                      # CPU ms per start
    .venv/bin/python benchmarks/start_cost.py --callgrind --starts 3
    .venv/bin/python benchmarks/start_cost.py --against ../base/.venv/bin/python

Each start is a fresh interpreter that starts a replica as `xstream replica` does (the node
commands' parser, then runner.start_replica; its primary, port 9, never answers), on port 0
and a fresh data directory, then stops it. Its CPU up to `start_replica`'s return is read in
the process (time.process_time: the interpreter's own start included), split into the
interpreter, the imports and the start itself. The bytecode cache is on (in a directory of
the run, PYTHONPYCACHEPREFIX; one unmeasured start fills it), as an installed package has its
modules compiled. `--against` alternates starts of another checkout's interpreter with this
one's (A/B pairs, medians): CPU figures move with the machine's load, so compare only
alternated runs. `--callgrind` runs each start under valgrind's callgrind and prints its
total instructions instead, which the load does not move (threads included; ~0.1% apart
between runs of the same code).

`python -X importtime` of the same start says which imports cost what.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

START = """
import time
t0 = time.process_time()
import asyncio, sys
from xstream.cli import _config, build_parser
from xstream.server.runner import start_replica
t1 = time.process_time()
words = ["replica", "--port", "0", "--data-dir", sys.argv[1], "--primary", "127.0.0.1:9"]
cfg = _config(build_parser(every_command=False).parse_args(words), "replica")


async def main() -> float:
    running = await start_replica(cfg)
    t2 = time.process_time()
    await running.stop(grace=0)
    return t2


print("cpu", t0, t1, asyncio.run(main()))
"""


def one_start(python: str, tmp: Path, callgrind: bool) -> list[float]:
    """[interpreter, imports, start] CPU seconds, or [instructions] under callgrind."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp / "pycache"), PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(dir=tmp) as data:
        argv = [python, "-c", START, data]
        if callgrind:
            argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
        # cwd: not a checkout, whose folder `-c` would put first on sys.path (its `xstream`)
        done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, check=True)
    if callgrind:
        refs = re.search(r"refs:\s+([\d,]+)", done.stderr)
        assert refs is not None, done.stderr[-2000:]
        return [float(refs.group(1).replace(",", ""))]
    t0, t1, t2 = (float(x) for x in done.stdout.split("cpu", 1)[1].split())
    return [t0, t1 - t0, t2 - t1]


def source_of(python: str, tmp: Path) -> str:
    """The folder `python` imports xstream from (which checkout a start measures)."""
    done = subprocess.run(
        [python, "-c", "import xstream; print(xstream.__path__[0])"],
        cwd=tmp, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def report(name: str, runs: list[list[float]], callgrind: bool) -> None:
    if callgrind:
        counts = [r[0] for r in runs]
        print(f"{name}: {statistics.median(counts) / 1e6:,.1f}M instructions per start "
              f"(min {min(counts) / 1e6:,.1f}M, max {max(counts) / 1e6:,.1f}M)")  # fmt: skip
        return
    parts = [statistics.median(r[i] for r in runs) * 1e3 for i in range(3)]
    total = statistics.median(sum(r) for r in runs) * 1e3
    print(f"{name}: {total:.1f} ms of CPU per start (median of {len(runs)}): interpreter "
          f"{parts[0]:.1f}, imports {parts[1]:.1f}, start_replica {parts[2]:.1f}")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--starts", type=int, default=15, help="measured starts per interpreter")
    p.add_argument("--against", help="another checkout's python, started alternately (A/B)")
    p.add_argument("--callgrind", action="store_true", help="instructions, not CPU time")
    return p.parse_args(argv)


def main() -> int:
    args = parse_args()
    pythons = {"this": sys.executable}
    if args.against:
        pythons["against"] = args.against
    runs: dict[str, list[list[float]]] = {name: [] for name in pythons}
    with tempfile.TemporaryDirectory(prefix="xstream-start-") as d:
        tmp = Path(d)
        for name, python in pythons.items():
            one_start(python, tmp, False)  # fills the bytecode cache (and the digest's)
            print(f"{name}: xstream from {source_of(python, tmp)}")
        for _ in range(args.starts):
            for name, python in pythons.items():
                runs[name].append(one_start(python, tmp, args.callgrind))
    print(f"load average {os.getloadavg()[0]:.2f} (nproc {os.cpu_count()})")
    for name, python in pythons.items():
        report(f"{name} ({python})", runs[name], args.callgrind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
