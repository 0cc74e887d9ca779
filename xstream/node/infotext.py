"""INFO's reply: a node's `info()` as Redis's text, `# Section` headers and `field:value`
lines, with Redis's field names where Redis has the field, so tools that read INFO
(redis-cli, exporters, redis-py's `info()`) find what they look for.

    INFO [section ...]     sections: server, clients, persistence, replication, keyspace;
                           none, "default", "all" or "everything": every one; an unknown
                           section adds nothing (as in Redis)

The persistence section reports the log's state as Redis reports its AOF
(`aof_last_write_status:ok|err`), with the cause and the free space beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

VERSION = "8.8.0"  # the Redis whose stream commands the engine answers exactly
STARTED = time.time()
Section = Callable[[dict[str, Any]], list[tuple[str, object]]]


def _server(info: dict[str, Any]) -> list[tuple[str, object]]:
    return [
        ("redis_version", VERSION),
        ("redis_mode", "standalone"),
        ("xstream_node", info["name"]),
        ("process_id", os.getpid()),
        ("uptime_in_seconds", int(time.time() - STARTED)),
    ]


def _clients(info: dict[str, Any]) -> list[tuple[str, object]]:
    return [("blocked_clients", info.get("blocked_clients", 0))]


def _persistence(info: dict[str, Any]) -> list[tuple[str, object]]:
    fault = info.get("disk_fault", "")
    return [
        ("loading", 0),
        ("aof_enabled", 1),
        ("aof_last_write_status", "err" if fault else "ok"),
        ("aof_last_write_error", fault or "-"),
        ("aof_fsync", info.get("fsync", "")),
        ("disk_free_bytes", info.get("disk_free_bytes", 0)),
        ("snapshot_offset", info.get("snapshot_offset", 0)),
    ]


def _replication(info: dict[str, Any]) -> list[tuple[str, object]]:
    if info["role"] != "primary":
        host, _, port = str(info.get("primary", "")).rpartition(":")
        return [
            ("role", "slave"),
            ("master_host", host),
            ("master_port", port),
            ("master_link_status", "up" if info.get("link") == "up" else "down"),
            ("slave_repl_offset", info["offset"]),
            ("master_replid", info.get("replid", "")),
            ("master_repl_offset", info["offset"]),
            ("xstream_epoch", info.get("epoch", 0)),
        ]
    replicas = info.get("replicas", [])
    lines: list[tuple[str, object]] = [("role", "master"), ("connected_slaves", len(replicas))]
    for i, r in enumerate(replicas):
        lag = round(r.get("lag_ms", 0) / 1000)
        where = f"ip={r.get('host', '')},port={r.get('port', 0)},state={r.get('state', '')}"
        lines.append((f"slave{i}", f"{where},offset={r.get('ack_offset', 0)},lag={lag}"))
    lines += [
        ("master_replid", info.get("replid", "")),
        ("master_replid2", info.get("replid2") or "0" * 40),
        ("master_repl_offset", info["offset"]),
        ("second_repl_offset", info.get("replid2_end", 0) if info.get("replid2") else -1),
        ("xstream_epoch", info.get("epoch", 0)),
    ]
    return lines


def _keyspace(info: dict[str, Any]) -> list[tuple[str, object]]:
    per_db = info.get("db_keys") or [info.get("keys", 0)]  # keys of each database
    return [(f"db{i}", f"keys={n},expires=0,avg_ttl=0") for i, n in enumerate(per_db) if n]


SECTIONS: dict[str, Section] = {
    "server": _server,
    "clients": _clients,
    "persistence": _persistence,
    "replication": _replication,
    "keyspace": _keyspace,
}


def render(info: dict[str, Any], asked: list[bytes]) -> bytes:
    """The INFO reply for the sections `asked` (as given, any case)."""
    names = [a.decode(errors="replace").lower() for a in asked]
    if not names or any(n in ("default", "all", "everything") for n in names):
        names = list(SECTIONS)
    out: list[str] = []
    for name in dict.fromkeys(names):
        section = SECTIONS.get(name)
        if section is None:
            continue
        if out:
            out.append("")
        out.append(f"# {name.capitalize()}")
        out += [f"{k}:{v}" for k, v in section(info)]
    return ("\r\n".join(out) + "\r\n").encode() if out else b""
