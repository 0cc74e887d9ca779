"""A node's configuration: what `xstream primary|replica` is given (both roles use it, since a
node can change role in place)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class NodeConfig:
    role: str  # "primary" or "replica": the role it starts in
    port: int = 7700
    host: str = "127.0.0.1"
    data_dir: Path = Path("data")
    primary: str = ""  # replica: the primary's host:port
    name: str = ""  # default: host:port
    fsync: str = "everysec"
    backlog_bytes: int = 64 << 20  # both roles: a promoted replica serves partial resyncs
    snapshot_bytes: int = 64 << 20
    disk_reserve_bytes: int = 64 << 20  # writes are refused below this much free space
    acks_timeout_ms: int = 5000
    expect_replicas: int = 0
    replica_forget_after: float = 60.0  # seconds a departed replica still counts for acks
    min_replicas_to_write: int = 0
    min_replicas_max_lag: float = 10.0
    metrics_port: int = 0  # 0 = no metrics endpoint
    node_max_bytes: int = 4096
    node_max_entries: int = 100
    log_level: str = "info"
    max_reply_bytes: int = 128 << 20  # a read's reply payload (slices.py)
    proto_max_bulk_len: int = 512 << 20  # one argument (Redis's proto-max-bulk-len)
    # The RESP server (server/resp): None = none; 0 = any free port. Host "" = `host`.
    resp_port: int | None = None
    resp_host: str = ""
    client_query_buffer_limit: int = 1 << 30  # unparsed input per RESP connection (Redis's)
    enable_debug_command: str = "no"  # "yes": DEBUG is allowed (Redis's enable-debug-command)
    # Automatic failover (xstream node): etcd client URLs; empty = manual mode.
    etcd: tuple[str, ...] = ()
    etcd_prefix: str = "/xstream"
    lease_ttl: int = 2  # seconds, whole (etcd leases)
    advertise: str = ""  # host:port peers and clients dial; default host:port
