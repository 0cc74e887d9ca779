"""Running a node as a process: configuration, start-up (recovery first), and shutdown.

start_primary(cfg) / start_replica(cfg) -> Running(node, server, port, tasks)
serve(cfg) runs one until SIGINT/SIGTERM, then stops gracefully: the server stops taking
calls (1 s grace), background tasks end, the log is flushed and fsynced.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from xstream.engine import Engine, EngineConfig
from xstream.primary.primary import Options, Primary
from xstream.primary.replication import ReplicationService
from xstream.replica.replica import Replica
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from . import ids, logs, metrics
from .backlog import Backlog
from .logs import slog
from .node import Node
from .service import create_server
from .store import Store


@dataclass
class NodeConfig:
    role: str  # "primary" or "replica"
    port: int = 7700
    host: str = "127.0.0.1"
    data_dir: Path = Path("data")
    primary: str = ""  # replica: the primary's host:port
    name: str = ""  # default: host:port
    fsync: str = "everysec"
    backlog_bytes: int = 64 << 20
    snapshot_bytes: int = 64 << 20
    acks_timeout_ms: int = 5000
    expect_replicas: int = 0
    min_replicas_to_write: int = 0
    min_replicas_max_lag: float = 10.0
    metrics_port: int = 0  # 0 = no metrics endpoint
    node_max_bytes: int = 4096
    node_max_entries: int = 100
    log_level: str = "info"


@dataclass
class Running:
    node: Node
    server: grpc.aio.Server
    port: int
    store: Store
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    async def stop(self, grace: float = 1.0) -> None:
        await self.server.stop(grace)
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self.store.close()
        slog("stopped", offset=self.node.offset)


def _engine(cfg: NodeConfig) -> Engine:
    return Engine(EngineConfig(cfg.node_max_bytes, cfg.node_max_entries))


async def start_primary(cfg: NodeConfig) -> Running:
    store = Store(cfg.data_dir, cfg.fsync)
    engine = _engine(cfg)
    rec = store.recover(engine, engine.apply)
    old = ids.load(cfg.data_dir)
    ident = {
        "replid": ids.new_replid(),
        "replid2": old.get("replid", ""),
        "replid2_end": rec.offset,
    }
    ids.save(cfg.data_dir, {"replid": ident["replid"]})
    tail = b"".join(rec.tail)[-cfg.backlog_bytes :]
    backlog = Backlog(cfg.backlog_bytes, rec.offset - len(tail))
    backlog.append(tail)
    options = Options(
        acks_timeout_ms=cfg.acks_timeout_ms,
        expect_replicas=cfg.expect_replicas,
        min_replicas_to_write=cfg.min_replicas_to_write,
        min_replicas_max_lag=cfg.min_replicas_max_lag,
        snapshot_bytes=cfg.snapshot_bytes,
    )
    name = cfg.name or f"{cfg.host}:{cfg.port}"
    primary = Primary(engine, store, backlog, ident, name, options)
    replication = ReplicationService(primary)
    server, port = create_server(
        primary,
        f"{cfg.host}:{cfg.port}",
        [
            (
                lambda s: pb_grpc.add_ReplicationServicer_to_server(replication, s),
                pb.DESCRIPTOR.services_by_name["Replication"].full_name,
            )
        ],
    )
    await server.start()
    running = Running(primary, server, port, store)
    running.tasks.append(asyncio.create_task(store.run_everysec()))
    slog(
        "primary_ready",
        port=port,
        replid=primary.replid,
        offset=primary.offset,
        keys=len(engine.keyspace),
        fsync=cfg.fsync,
    )
    return running


async def start_replica(cfg: NodeConfig) -> Running:
    store = Store(cfg.data_dir, cfg.fsync)
    engine = _engine(cfg)
    rec = store.recover(engine, engine.apply)
    name = cfg.name or f"{cfg.host}:{cfg.port}"
    replica = Replica(
        engine, store, rec.offset, name, "", cfg.primary, snapshot_bytes=cfg.snapshot_bytes
    )
    server, port = create_server(replica, f"{cfg.host}:{cfg.port}")
    replica.address = f"{cfg.host}:{port}"
    if not cfg.name:
        replica.name = replica.address
    await server.start()
    running = Running(replica, server, port, store)
    running.tasks.append(asyncio.create_task(replica.run_link()))
    running.tasks.append(asyncio.create_task(store.run_everysec()))
    slog("replica_ready", port=port, primary=cfg.primary, offset=rec.offset, replid=replica.replid)
    return running


async def serve(cfg: NodeConfig) -> None:
    logs.configure(f"{cfg.role}:{cfg.port}", level=cfg.log_level)
    if cfg.metrics_port:
        metrics.serve(cfg.metrics_port, cfg.host)
    start = start_primary if cfg.role == "primary" else start_replica
    running = await start(cfg)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    slog("shutting_down")
    await running.stop()
