"""Compat tier: the same calls against a real redis-server, replies compared with the engine's.

Fixtures (all session-scoped: a server is started once and shared, so flush or use fresh keys):

    redis_server           a server with the default configuration
    redis_factory(cfg)     a server with extra directives, e.g.
                           redis_factory({"stream-node-max-entries": 4}) or
                           redis_factory(stream_node_max_entries=4); one server per distinct
                           configuration, flushed each time it is handed out

Every test collected under this folder is marked `compat`. Without redis-server they fail with a
clear message (scripts/test.sh installs Debian's redis-server first).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from redis_conn import RedisServer, start_server, xstream_node

HERE = Path(__file__).parent
DEBIAN_REDIS = "/usr/bin/redis-server"

RedisFactory = Callable[..., RedisServer]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.compat)


def _redis_binary() -> str:
    found = shutil.which("redis-server") or (
        DEBIAN_REDIS if os.access(DEBIAN_REDIS, os.X_OK) else None
    )
    if found is not None:
        return found
    # Never a skip: scripts/test.sh installs it; a compat test without it checks nothing.
    pytest.fail(
        "compat tests need a real redis-server: not found on PATH or at /usr/bin "
        "(scripts/test.sh installs it; or apt-get install redis-server)",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def redis_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisFactory]:
    servers: dict[tuple[tuple[str, str], ...], RedisServer] = {}

    def start(
        config: Mapping[str, str | int] | None = None, **directives: str | int
    ) -> RedisServer:
        merged = {**(config or {}), **{k.replace("_", "-"): v for k, v in directives.items()}}
        key = tuple(sorted((name, str(value)) for name, value in merged.items()))
        server = servers.get(key)
        if server is None:
            binary = _redis_binary()
            workdir = tmp_path_factory.mktemp("redis")
            server = servers[key] = start_server(binary, workdir, merged)
        else:
            server.flushall()
        return server

    yield start
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
def redis_server(redis_factory: RedisFactory) -> RedisServer:
    return redis_factory()


@pytest.fixture(scope="module")
def xstream_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A fresh xstream primary's RESP port, for the tests that compare raw RESP sessions."""
    yield from xstream_node(tmp_path_factory.mktemp("xstream"))
