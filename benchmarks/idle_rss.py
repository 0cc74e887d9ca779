"""What an idle node's resident memory is, part by part (issue 15: "RSS of an idle node: say
what it is").

Run by hand, never by the test suite:

    .venv/bin/python benchmarks/idle_rss.py

One process loads a primary's parts in the order `xstream primary` loads them, reading VmRSS,
RssAnon and RssFile (/proc/self/status) after each: the interpreter, the standard library's
modules the event loop needs, grpc, protobuf with xstream's generated code, the engine, the
CLI, the node floor, the roles, the edges and the runner; then it starts a primary (gRPC only,
no --resp-port, no metrics) as the CLI does, on a free port and a temporary directory, and
reads them again once it has been idle 1.5 s. Each row prints the totals and what the step
added. memory_bench.py measures a CLI-started primary beside a redis-server (with its RESP
port) and names its largest mappings.
"""

from __future__ import annotations

import importlib

# Only these light modules load before the first row: asyncio and tempfile come with the steps.

# (what, modules) in the order a starting primary imports them
STEPS = [
    ("the standard library the event loop needs", ["asyncio", "ssl", "logging", "json"]),
    ("grpc and grpc.aio (cygrpc, libcrypto)", ["grpc", "grpc.aio"]),
    (
        "protobuf, xstream's generated code, health",
        ["xstream.v1.xstream_pb2", "xstream.v1.xstream_pb2_grpc", "grpc_health.v1.health"],
    ),
    ("the engine", ["xstream.engine", "xstream.engine.snapshot", "xstream.engine.snapload"]),
    ("the CLI (node commands)", ["xstream.cli"]),
    (
        "the node floor",
        ["xstream.node.base", "xstream.node.store", "xstream.node.users", "xstream.node.acl"],
    ),
    (
        "the roles",
        ["xstream.primary.primary", "xstream.primary.replication", "xstream.replica.link"],
    ),
    ("the edges and the runner", ["xstream.server.runner", "xstream.server.loops"]),
]


def rss_mb() -> tuple[float, float, float]:
    """(VmRSS, RssAnon, RssFile) of this process, in MB."""
    fields = {}
    with open("/proc/self/status") as status:
        lines = status.read().splitlines()
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["RssAnon"], fields["RssFile"]


async def started_and_idle() -> tuple[float, float, float]:
    import asyncio  # noqa: PLC0415 (see the imports)
    import tempfile  # noqa: PLC0415 (see the imports)

    from xstream.cli import _config, build_parser  # noqa: PLC0415 (measured as a step)
    from xstream.server.runner import start_primary  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="idle-rss-") as data:
        words = ["primary", "--port", "0", "--data-dir", data, "--log-level", "warning"]
        running = await start_primary(_config(build_parser(False).parse_args(words), "primary"))
        await asyncio.sleep(1.5)
        figures = rss_mb()
        await running.stop(grace=0)
    return figures


def main() -> None:
    rows = [("the interpreter and site", rss_mb())]
    for what, modules in STEPS:
        for name in modules:
            importlib.import_module(name)
        rows.append((what, rss_mb()))
    import asyncio  # noqa: PLC0415 (loaded by the steps by now)

    started = asyncio.run(started_and_idle())
    rows.append(("started (gRPC server, store, tasks), idle 1.5 s", started))
    print(f"| {'step':48s} | RSS MB | + | anon | + | file | + |")
    print(f"|{'-' * 50}|---:|---:|---:|---:|---:|---:|")
    before = (0.0, 0.0, 0.0)
    for what, now in rows:
        cells = " | ".join(f"{v:.1f} | {v - b:+.1f}" for v, b in zip(now, before, strict=True))
        print(f"| {what:48s} | {cells} |")
        before = now


if __name__ == "__main__":
    main()
