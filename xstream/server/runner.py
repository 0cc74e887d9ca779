"""Running a node as a process: configuration, start-up (recovery first), and shutdown.

start_primary(cfg) / start_replica(cfg) / start_node(cfg) -> Running(host, server, port, tasks)
start_node is automatic failover (cfg.etcd): the node starts as a replica following nobody,
and its coordinator thread (coordinated.py) has it elected, promoted or pointed at a primary.
serve(cfg) runs one until SIGINT/SIGTERM, then stops gracefully: the server stops taking
calls (1 s grace), background tasks end, the log is flushed and fsynced.

Damaged data (damage.py): a primary refuses to start on it (CorruptLog: the message says
which file and offset, and what to do); a replica or an elected node keeps the good prefix,
sets the rest aside and takes what it lacks from a primary. `watch_disk` reads the free
space each second and, while the log is faulted, probes the disk and resumes it; `trim_heap`
gives the C heap's free pages back every few seconds when there are many (node/heap.py).

With `--resp-port`, the node also speaks Redis's protocol (resp/server.py) on the same event
loop, over the same host: every command goes through the same `host.node.execute`; without
it the RESP modules are never imported.

Every node serves Streams, Admin and Replication: the node's role can change in place
(host.Host: promote, replicaof), and Replication answers UNAVAILABLE while it is a replica.

TLS (cfg.tls_*): one node/tls.Tls serves every endpoint: the gRPC port (tlsgrpc.py), the
RESP port, the metrics endpoint, the replica's link and the etcd client. It is reloaded on
SIGHUP and when a file changes (polled every POLL_SECONDS); open connections keep theirs.
Without TLS and without a password, a node refuses a non-loopback address unless cfg.insecure
(config.check_exposure). Users: replicated state (node/users.py), recovered with the data;
the config's (config.node_acl: --requirepass, --aclfile) seed them, and a primary started
with a changed config applies it (`primary_users`). The Host holds them across roles.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from xstream.engine import Engine, EngineConfig
from xstream.node import collector, heap, logs, metrics, users
from xstream.node.acl import Acl
from xstream.node.base import Node
from xstream.node.expiry import run_active_expiry
from xstream.node.infotext import event_loop
from xstream.node.logs import slog
from xstream.node.stats import SAMPLE_SECONDS, STATS
from xstream.node.store import Recovery, Store
from xstream.node.tls import POLL_SECONDS, Tls
from xstream.primary.primary import Primary
from xstream.primary.replication import ReplicationService
from xstream.replica.replica import Replica
from xstream.v1 import xstream_pb2 as pb
from xstream.v1 import xstream_pb2_grpc as pb_grpc

from .config import NodeConfig, check_exposure, node_acl, read_primary_password, tls_files
from .host import Host, primary_from, replica_from
from .service import create_server
from .tlsgrpc import server_credentials

if TYPE_CHECKING:
    from .coordinated import Coordinated
    from .resp.server import RespServer

HEAP_TRIM_SECONDS = 5.0  # how often the node looks at the heap's free bytes (heap.trim)

__all__ = [
    "NodeConfig",
    "Running",
    "node_tls",
    "serve",
    "start_node",
    "start_primary",
    "start_replica",
]


@dataclass
class Running:
    host: Host
    server: grpc.aio.Server
    port: int
    store: Store
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    coordinated: Coordinated | None = None
    resp: RespServer | None = None  # the RESP port's server, if one
    tls: Tls | None = None  # the TLS material of every endpoint; None = plaintext

    @property
    def node(self) -> Node:
        return self.host.node

    async def stop(self, grace: float = 1.0) -> None:
        if self.coordinated is not None:  # first: a successor is elected while we wind down
            await asyncio.get_running_loop().run_in_executor(None, self.coordinated.stop)
        if self.resp is not None:
            await self.resp.stop()
        await self.server.stop(grace)
        await self.host.stop()
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self.store.close()
        slog("stopped", offset=self.node.offset)


def _engine(cfg: NodeConfig) -> Engine:
    return Engine(EngineConfig(cfg.node_max_bytes, cfg.node_max_entries))


def node_tls(cfg: NodeConfig) -> Tls | None:
    """The node's TLS material (loaded and checked), or None; refuses an exposed plaintext
    node. Raises TlsConfigError, OSError or ssl.SSLError (a node never starts half-secure)."""
    files = tls_files(cfg)
    check_exposure(cfg, files is not None, node_acl(cfg).requires_auth())
    return Tls(files) if files is not None else None


async def watch_tls(tls: Tls, every: float = POLL_SECONDS) -> None:
    while True:
        await asyncio.sleep(every)
        tls.poll()


async def _serve_host(cfg: NodeConfig, host: Host, store: Store) -> Running:
    tls = host.tls
    replication = ReplicationService(lambda: host.node)
    server, port = create_server(
        host,
        f"{cfg.host}:{cfg.port}",
        [
            (
                lambda s: pb_grpc.add_ReplicationServicer_to_server(replication, s),
                pb.DESCRIPTOR.services_by_name["Replication"].full_name,
            )
        ],
        server_credentials(tls) if tls is not None else None,
    )
    host.address = cfg.advertise or f"{cfg.host}:{port}"
    await server.start()
    running = Running(host, server, port, store, tls=tls)
    if cfg.resp_port is not None:
        from .resp import server as resp_server  # noqa: PLC0415 (only with --resp-port)

        resp_host = cfg.resp_host or cfg.host
        running.resp = await resp_server.start(
            host,
            resp_host,
            cfg.resp_port,
            cfg.client_query_buffer_limit,
            tls.server_context() if tls is not None else None,
        )
        slog("resp_ready", host=resp_host, port=running.resp.port, tls=tls is not None)
    if tls is not None:
        running.tasks.append(asyncio.create_task(watch_tls(tls)))
    running.tasks.append(asyncio.create_task(store.run_everysec()))
    running.tasks.append(asyncio.create_task(watch_disk(host, store)))
    running.tasks.append(asyncio.create_task(run_active_expiry(lambda: host.node)))
    running.tasks.append(asyncio.create_task(trim_heap()))
    running.tasks.append(asyncio.create_task(sample_stats()))
    return running


async def sample_stats(every: float = SAMPLE_SECONDS) -> None:
    """INFO's instantaneous_* rates: a sample of the counters every `every` seconds."""
    while True:
        STATS.sample(time.monotonic())
        await asyncio.sleep(every)


async def trim_heap(every: float = HEAP_TRIM_SECONDS) -> None:
    """Give the heap's free pages back every `every` seconds when there are many (heap.py):
    what recovery, a full sync or a long reply left behind."""
    while True:
        await asyncio.sleep(every)
        heap.trim()


async def watch_disk(host: Host, store: Store, every: float = 1.0) -> None:
    """Free space each `every` seconds; a faulted log is resumed once the disk takes a write
    and an fsync again (and the reserve is free)."""
    while True:
        await asyncio.sleep(every)
        store.check_space()
        if not store.fault or not store.probe():
            continue
        try:
            await host.node.resume_log()
        except OSError as e:
            slog("disk_resume_failed", level="error", error=e.strerror or str(e))


def _host(cfg: NodeConfig, node: Primary | Replica, tls: Tls | None, acl: Acl) -> Host:
    host = Host(cfg, node, acl)
    host.tls = tls
    return host


def _store(cfg: NodeConfig) -> Store:
    return Store(cfg.data_dir, cfg.fsync, cfg.disk_reserve_bytes)


def _recover(
    cfg: NodeConfig, store: Store, set_aside: bool
) -> tuple[Engine, Recovery, users.Users | None]:
    """The data set and the users (None: the data holds none) the data directory holds."""
    replay = users.Replay(_engine(cfg))
    rec = store.recover(replay.engine, replay.record, set_aside, on_meta=replay.snapshot)
    return replay.engine, rec, replay.users


async def primary_users(primary: Primary, acl: Acl, found: users.Users | None) -> None:
    """A starting primary's users (node/users.py): its config's (`acl`, from --requirepass
    and --aclfile) are logged as a LOAD when the data holds none and they are not the
    built-in default, or when the config changed since this node last started and differs
    from the data's; otherwise the data's stand. The record is fsynced before anything is
    served (a rollback to before it would serve the built-in default)."""
    directory = primary.store.dir
    fp = users.fingerprint(acl.users)
    changed = users.last_config(directory) != fp
    if found is None and users.same(acl.users, users.builtin()):
        reason = ""
    elif found is None:
        reason = "seed"
    elif changed and not users.same(acl.users, found):
        reason = "config_changed"
    else:
        users.install(acl, found)
        reason = ""
    if reason:
        offset = primary.log_users(users.load_effects(acl.users))
        await primary.store.fsync_to(offset)
        slog("users_logged", reason=reason, users=len(acl.users), offset=offset)
    _note_config(directory, fp)


def _note_config(directory: Path, fp: str) -> None:
    """Note the config's fingerprint; a disk that cannot take it does not stop the node (the
    next start then compares with the one noted before)."""
    try:
        users.note_config(directory, fp)
    except OSError as e:
        slog("users_config_not_noted", level="warning", error=e.strerror or str(e))


def replica_users(replica: Replica, acl: Acl, found: users.Users | None) -> str:
    """A starting replica's (or elected node's) users: the data's, if it holds any (its
    primary's), else its own config's until its first sync. The config is only noted: its
    fingerprint is returned for `note_config_aside`."""
    fp = users.fingerprint(acl.users)
    if found is not None:
        slog("users_from_data", users=len(found), config_differs=not users.same(acl.users, found))
        users.install(acl, found)
    return fp


async def note_config_aside(directory: Path, fp: str) -> None:
    """A replica's `_note_config`, in a worker thread once its link has started: the note's
    fsync (5 to 300 ms measured on a shared disk) is kept off the way to its first sync and
    off the event loop. Only a later start reads it (primary_users); a crash before it is
    written leaves the one noted before, as a disk that refuses it does."""
    await asyncio.to_thread(_note_config, directory, fp)


async def start_primary(cfg: NodeConfig, tls: Tls | None = None) -> Running:
    store = _store(cfg)
    acl = node_acl(cfg)
    engine, rec, found = _recover(cfg, store, False)  # CorruptLog: no primary on damaged data
    primary = primary_from(cfg, engine, store, rec)
    host = _host(cfg, primary, tls, acl)
    await primary_users(primary, acl, found)
    collector.settle()  # the recovered state aside: a write's temporaries die young
    running = await _serve_host(cfg, host, store)
    slog(
        "primary_ready",
        port=running.port,
        replid=primary.replid,
        offset=primary.offset,
        keys=engine.key_count(),
        fsync=cfg.fsync,
        epoch=primary.epochs.epoch,
        event_loop=event_loop(),
    )
    return running


async def start_replica(cfg: NodeConfig, tls: Tls | None = None) -> Running:
    store = _store(cfg)
    acl = node_acl(cfg)
    engine, rec, found = _recover(cfg, store, True)
    replica = replica_from(cfg, engine, store, rec)
    host = _host(cfg, replica, tls, acl)
    fp = replica_users(replica, acl, found)
    running = await _serve_host(cfg, host, store)
    replica.address = host.address
    if not cfg.name:
        replica.name = replica.address
    host.start_link()
    running.tasks.append(asyncio.create_task(note_config_aside(store.dir, fp)))
    slog(
        "replica_ready",
        port=running.port,
        primary=cfg.primary,
        offset=rec.offset,
        replid=replica.replid,
        epoch=replica.epochs.epoch,
        event_loop=event_loop(),
    )
    return running


async def start_node(cfg: NodeConfig, tls: Tls | None = None) -> Running:
    """A node under automatic failover: a replica of nobody until its coordinator decides."""
    assert cfg.etcd, "start_node needs etcd endpoints"
    store = _store(cfg)
    acl = node_acl(cfg)
    engine, rec, found = _recover(cfg, store, True)
    replica = replica_from(cfg, engine, store, rec)
    replica.primary_address = ""
    host = _host(cfg, replica, tls, acl)
    fp = replica_users(replica, acl, found)
    running = await _serve_host(cfg, host, store)
    running.tasks.append(asyncio.create_task(note_config_aside(store.dir, fp)))
    replica.address = host.address
    if not cfg.name:
        replica.name = replica.address
    from .coordinated import Coordinated  # noqa: PLC0415 (etcd's client: only `xstream node`)

    running.coordinated = Coordinated(host, asyncio.get_running_loop())
    running.coordinated.start()
    slog("node_ready", port=running.port, address=host.address, offset=rec.offset,
         replid=replica.replid, epoch=replica.epochs.epoch, etcd=",".join(cfg.etcd),
         event_loop=event_loop())  # fmt: skip
    return running


async def serve(cfg: NodeConfig) -> None:
    """Run a node until SIGINT/SIGTERM. Raises TlsConfigError (and OSError, ssl.SSLError)
    before anything starts when its TLS options are wrong or its address is exposed."""
    logs.configure(cfg.name or f"{cfg.role}:{cfg.port}", level=cfg.log_level)
    read_primary_password(cfg)
    tls = node_tls(cfg)
    if cfg.metrics_port:
        metrics.serve(cfg.metrics_port, cfg.host, tls.server_context() if tls else None)
    starts = {"primary": start_primary, "replica": start_replica, "node": start_node}
    start = starts[cfg.role]
    running = await start(cfg, tls)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    STATS.on_shutdown = stop.set  # SHUTDOWN (servercmds.py)
    if tls is not None:
        loop.add_signal_handler(signal.SIGHUP, tls.reload)
    await stop.wait()
    slog("shutting_down")
    await running.stop()
