"""A starting node loads only what it runs (issue 15: spawn -> synced, and idle RSS). A replica
is started as `xstream replica` starts it (cli.build_parser for a node command, then
runner.start_replica) in a fresh interpreter, and the modules it has loaded once it is ready
are compared with the ones it must not have: the other commands' (the client, `up`, certs,
the console, check-log, deploy-secrets, the Spark pipeline), the RESP port's (no
--resp-port), reflection's (until a client asks for it), ctypes (the heap is first trimmed
seconds later) and platform."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from xstream import cli

# Modules (or packages: a prefix up to a dot) a replica without --resp-port must not load.
LAZY = (
    "xstream.client",
    "xstream.tools",
    "xstream.up",
    "xstream.certs",
    "xstream.checklog",
    "xstream.console",
    "xstream.deploysecrets",
    "xstream.pipeline",
    "xstream.server.resp",
    "hiredis",
    "grpc_reflection.v1alpha",  # (grpc itself imports the empty top package)
    "ctypes",
    "platform",
    "getpass",
)

START = """
import asyncio, sys
from xstream.cli import _config, build_parser
from xstream.server.runner import start_replica

words = ["replica", "--port", "0", "--data-dir", sys.argv[1], "--primary", "127.0.0.1:9"]
cfg = _config(build_parser(every_command=False).parse_args(words), "replica")


async def main() -> list[str]:
    running = await start_replica(cfg)
    loaded = sorted(sys.modules)
    await running.stop(grace=0)
    return loaded


print("\\n".join(asyncio.run(main())))
"""


def _loaded_by_a_started_replica(data: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", START, str(data)], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def _among(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in names))


def test_a_started_replica_has_not_loaded_what_it_does_not_run(tmp_path: Path) -> None:
    loaded = _loaded_by_a_started_replica(tmp_path / "data")
    assert "xstream.replica.link" in loaded and "xstream.server.service" in loaded  # it ran
    assert _among(loaded, LAZY) == []


def test_the_node_commands_parse_alike_with_or_without_the_other_commands() -> None:
    words = ["replica", "--port", "7", "--data-dir", "d", "--primary", "h:1", "--resp-port", "0"]
    every = cli.build_parser().parse_args(words)
    nodes_only = cli.build_parser(every_command=False).parse_args(words)
    assert vars(every) == vars(nodes_only)
    commands = cli.build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(cli.NODE_COMMANDS) < set(commands) and "shell" in commands
