"""INFO's reply: a node's `info()` and the process's STATS as Redis's text, `# Section`
headers and `field:value` lines, with Redis's field names where Redis has the field, so
tools that read INFO (redis-cli, exporters, redis-py's `info()`, Redis's test harness) find
what they look for.

    INFO [section ...]     sections: server, clients, memory, persistence, stats,
                           replication, cpu, modules, errorstats, cluster, keyspace (Redis's
                           default set, in its order); none, "default", "all" or
                           "everything": every one; an unknown section adds nothing

Where the numbers come from:
* memory: `used_memory` is the process's resident set size (RSS, /proc/self/statm), not an
  allocator's count (Python has none to ask cheaply; tracemalloc would slow every
  allocation); `used_memory_peak` is the peak RSS (getrusage).
* persistence: the log is always on, so `aof_enabled:1`; it is appended to in place and never
  rewritten, so `aof_rewrite_in_progress:0`. `rdb_*` are the snapshots': writes applied since
  the last one began, its time and status. The log's state is reported as Redis reports its
  AOF (`aof_last_write_status:ok|err`), with the cause and the free space beside it.
* stats and errorstats: the process's counters (stats.py), the RESP and gRPC edges' both;
  network bytes are the RESP clients' (replication's are gRPC's); expired keys are the
  primary's engine's (a replica deletes a key when its primary's DEL arrives, as Redis's).
  keyspace_hits and keyspace_misses count reads' key lookups (the engine's, keyspace.py). No
  fork, no eviction, no pub/sub: their counts are 0.
* replication: the primary's backlog (repl_backlog_*), its full and partial resyncs served.
"""

from __future__ import annotations

import asyncio
import os
import resource
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from xstream.builds import ENGINE

from .stats import STATS

VERSION = "8.8.0"  # the Redis whose stream commands the engine answers exactly
RUN_ID = secrets.token_hex(20)  # Redis's run_id: random, one per process
Section = Callable[[dict[str, Any]], list[tuple[str, object]]]


def event_loop() -> str:
    """The running event loop: `uvloop` or `asyncio` (server/loops.py chooses it)."""
    try:
        module = type(asyncio.get_running_loop()).__module__
    except RuntimeError:
        return "asyncio"
    return "uvloop" if module.startswith("uvloop") else "asyncio"


def _os_name() -> str:
    """`Linux 6.8.0 x86_64`, as Redis's os field: what platform.system(), release() and
    machine() say on a POSIX system, read from os.uname() (platform costs ~2.5 ms of a
    starting node's imports and regex compiles)."""
    name = os.uname()
    return f"{name.sysname} {name.release} {name.machine}"


def _server(info: dict[str, Any]) -> list[tuple[str, object]]:
    now = time.time()
    uptime = int(now - STATS.started)
    return [
        ("redis_version", VERSION),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_mode", "standalone"),
        ("os", _os_name()),
        ("arch_bits", 64 if sys.maxsize > 2**32 else 32),
        ("multiplexing_api", event_loop()),
        ("process_id", os.getpid()),
        ("run_id", RUN_ID),
        ("tcp_port", STATS.tcp_port),
        ("server_time_usec", int(now * 1_000_000)),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("executable", sys.argv[0] if sys.argv else ""),
        ("config_file", ""),
        ("xstream_node", info["name"]),
        ("xstream_engine", "compiled" if ENGINE.compiled() else "pure"),  # xstream/builds.py
    ]


def _clients(info: dict[str, Any]) -> list[tuple[str, object]]:
    return [
        ("connected_clients", STATS.connected_clients),
        ("maxclients", 10000),
        ("blocked_clients", info.get("blocked_clients", 0)),
        ("total_blocking_keys", info.get("blocking_keys", 0)),
        ("total_blocking_keys_on_nokey", info.get("blocking_keys_on_nokey", 0)),
    ]


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return _peak_rss()


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _human(n: int) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n}B"


def _memory(info: dict[str, Any]) -> list[tuple[str, object]]:
    used, peak = _rss(), _peak_rss()
    return [
        ("used_memory", used),
        ("used_memory_human", _human(used)),
        ("used_memory_rss", used),
        ("used_memory_rss_human", _human(used)),
        ("used_memory_peak", max(used, peak)),
        ("used_memory_peak_human", _human(max(used, peak))),
        ("maxmemory", 0),
        ("maxmemory_human", "0B"),
        ("maxmemory_policy", "noeviction"),
        ("mem_allocator", "libc"),
        ("xstream_used_memory_source", "rss"),
    ]


def _persistence(info: dict[str, Any]) -> list[tuple[str, object]]:
    fault = info.get("disk_fault", "")
    return [
        ("loading", 0),
        ("async_loading", 0),
        ("rdb_changes_since_last_save", STATS.changes_since_save),
        ("rdb_bgsave_in_progress", int(STATS.snapshots_running > 0)),
        ("rdb_last_save_time", STATS.last_save),
        ("rdb_last_bgsave_status", "ok" if STATS.last_save_ok else "err"),
        ("aof_enabled", 1),
        ("aof_rewrite_in_progress", 0),
        ("aof_rewrite_scheduled", 0),
        ("aof_last_bgrewrite_status", "ok"),
        ("aof_last_write_status", "err" if fault else "ok"),
        ("aof_last_write_error", fault or "-"),
        ("aof_fsync", info.get("fsync", "")),
        ("disk_free_bytes", info.get("disk_free_bytes", 0)),
        ("snapshot_offset", info.get("snapshot_offset", 0)),
    ]


def _stats(info: dict[str, Any]) -> list[tuple[str, object]]:
    ops, kbps_in, kbps_out = STATS.instantaneous()
    served = info if info["role"] == "primary" else {}
    return [
        ("total_connections_received", STATS.connections_received),
        ("total_commands_processed", STATS.commands_processed),
        ("instantaneous_ops_per_sec", ops),
        ("total_net_input_bytes", STATS.net_input_bytes),
        ("total_net_output_bytes", STATS.net_output_bytes),
        ("instantaneous_input_kbps", f"{kbps_in:.2f}"),
        ("instantaneous_output_kbps", f"{kbps_out:.2f}"),
        ("rejected_connections", 0),
        ("sync_full", served.get("full_syncs", 0)),  # resyncs served (a replica's: its own)
        ("sync_partial_ok", served.get("partial_syncs", 0)),
        ("expired_keys", info.get("expired_keys", 0)),
        ("expired_keys_active", info.get("expired_keys_active", 0)),
        ("evicted_keys", 0),
        ("keyspace_hits", info.get("keyspace_hits", 0)),
        ("keyspace_misses", info.get("keyspace_misses", 0)),
        ("pubsub_channels", 0),
        ("total_forks", 0),  # snapshots are written by the process itself, never a fork
        ("latest_fork_usec", 0),
        ("total_error_replies", STATS.error_replies),
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
            ("slave_read_only", 1),
            ("connected_slaves", 0),
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
        ("repl_backlog_active", 1),
        ("repl_backlog_size", info.get("backlog_size", 0)),
        ("repl_backlog_first_byte_offset", info.get("backlog_start", 0) + 1),
        ("repl_backlog_histlen", info["offset"] - info.get("backlog_start", 0)),
        ("xstream_epoch", info.get("epoch", 0)),
    ]
    return lines


def _cpu(info: dict[str, Any]) -> list[tuple[str, object]]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return [("used_cpu_sys", f"{me.ru_stime:.6f}"), ("used_cpu_user", f"{me.ru_utime:.6f}")]


def _none(info: dict[str, Any]) -> list[tuple[str, object]]:
    return []


def _errorstats(info: dict[str, Any]) -> list[tuple[str, object]]:
    return [(f"errorstat_{p}", f"count={n}") for p, n in sorted(STATS.errors.items())]


def _commandstats(info: dict[str, Any]) -> list[tuple[str, object]]:
    names = sorted(set(STATS.calls) | set(STATS.rejected))
    out: list[tuple[str, object]] = []
    for name in names:
        calls, usec = STATS.calls[name], STATS.usec[name]
        per_call = f"{usec / calls:.2f}" if calls else "0.00"
        out.append((
            f"cmdstat_{name}",
            f"calls={calls},usec={usec},usec_per_call={per_call},"
            f"rejected_calls={STATS.rejected[name]},failed_calls={STATS.failed[name]}",
        ))  # fmt: skip
    return out


def _cluster(info: dict[str, Any]) -> list[tuple[str, object]]:
    return [("cluster_enabled", 0)]


def _keyspace(info: dict[str, Any]) -> list[tuple[str, object]]:
    per_db = info.get("db_keys") or [info.get("keys", 0)]  # keys of each database
    expires = info.get("db_expires") or [0] * len(per_db)  # keys with a TTL, per database
    return [
        (f"db{i}", f"keys={n},expires={expires[i]},avg_ttl=0,subexpiry=0")
        for i, n in enumerate(per_db)
        if n
    ]


# name -> (header, lines), in Redis's order
SECTIONS: dict[str, tuple[str, Section]] = {
    "server": ("Server", _server),
    "clients": ("Clients", _clients),
    "memory": ("Memory", _memory),
    "persistence": ("Persistence", _persistence),
    "stats": ("Stats", _stats),
    "replication": ("Replication", _replication),
    "cpu": ("CPU", _cpu),
    "modules": ("Modules", _none),
    "commandstats": ("Commandstats", _commandstats),
    "errorstats": ("Errorstats", _errorstats),
    "cluster": ("Cluster", _cluster),
    "keyspace": ("Keyspace", _keyspace),
}


NOT_DEFAULT = {"commandstats"}  # as Redis: only `INFO commandstats`, `all` or `everything`


def render(info: dict[str, Any], asked: list[bytes]) -> bytes:
    """The INFO reply for the sections `asked` (as given, any case)."""
    names = [a.decode(errors="replace").lower() for a in asked]
    if any(n in ("all", "everything") for n in names):
        names = list(SECTIONS)
    elif not names or "default" in names:
        names = [n for n in SECTIONS if n not in NOT_DEFAULT]
    out: list[str] = []
    for name in dict.fromkeys(names):
        section = SECTIONS.get(name)
        if section is None:
            continue
        header, lines = section
        if out:
            out.append("")
        out.append(f"# {header}")
        out += [f"{k}:{v}" for k, v in lines(info)]
    return ("\r\n".join(out) + "\r\n").encode() if out else b""
