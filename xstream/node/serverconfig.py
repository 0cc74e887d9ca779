"""CONFIG GET / CONFIG SET's parameters: which are real here, and what the others answer.

Three kinds, by where the value lives:
* replicated: the stream settings (stream-node-max-bytes, stream-node-max-entries,
  stream-idmp-duration, stream-idmp-maxsize): the engine's config in force; CONFIG SET on a
  primary is a write (XCONFIGSET, engine/settings.py), so it is logged, shipped to the
  replicas and kept by snapshots; a replica refuses it (READONLY).
* live: read from the node (port: the RESP port, appendfsync: --fsync, proto-max-bulk-len,
  client-query-buffer-limit, enable-debug-command), fixed at start: CONFIG SET to the value
  they have is accepted (so a client restoring what CONFIG GET * gave succeeds), to another
  value refused with Redis's "can't set immutable config". Except repl-backlog-size
  (--backlog-bytes), which CONFIG SET changes as in Redis (at least 16 KiB), and a
  primary's flow-control window (pacing.py; not Redis's): repl-flow-lag-ms (0 = off) and
  repl-flow-timeout-ms, changed for the writes admitted next. A replica has neither.
* stored: Redis parameters that have no effect here (appendonly: the log is always on; save:
  snapshots follow --snapshot-bytes; maxmemory, timeout, ...): CONFIG SET checks the value's
  form as Redis does (yes/no, an integer) and keeps it, CONFIG GET answers it. Per process,
  not replicated, not persisted, as in Redis without CONFIG REWRITE.
A name in none of them is unknown: CONFIG GET answers nothing for it, CONFIG SET Redis's
"Unknown option or number of arguments for CONFIG SET - 'name'".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xstream.engine.errors import StreamError
from xstream.engine.ids import string2ll
from xstream.engine.settings import SETTINGS, memtoull

from .stats import STATS

if TYPE_CHECKING:
    from .base import Node
    from .pacing import Window

BOOL, INT, MEMORY, TEXT = "bool", "int", "memory", "text"  # what a stored value looks like

# name -> (kind, default): Redis's defaults, or what is true here (appendonly yes, save "")
STORED: dict[str, tuple[str, str]] = {
    "appendonly": (BOOL, "yes"),
    "appendfilename": (TEXT, "appendonly.aof"),
    "appenddirname": (TEXT, "appendonlydir"),
    "aof-use-rdb-preamble": (BOOL, "yes"),
    "aof-timestamp-enabled": (BOOL, "no"),
    "auto-aof-rewrite-percentage": (INT, "100"),
    "auto-aof-rewrite-min-size": (MEMORY, "67108864"),
    "save": (TEXT, ""),
    "dbfilename": (TEXT, "dump.rdb"),
    "rdbcompression": (BOOL, "yes"),
    "rdbchecksum": (BOOL, "yes"),
    "stop-writes-on-bgsave-error": (BOOL, "yes"),
    "maxmemory": (MEMORY, "0"),
    "maxmemory-policy": (TEXT, "noeviction"),
    "maxclients": (INT, "10000"),
    "timeout": (INT, "0"),
    "tcp-keepalive": (INT, "300"),
    "loglevel": (TEXT, "notice"),
    "logfile": (TEXT, ""),
    "hz": (INT, "10"),
    "notify-keyspace-events": (TEXT, ""),
    "slowlog-log-slower-than": (INT, "10000"),
    "slowlog-max-len": (INT, "128"),
    "latency-tracking": (BOOL, "yes"),
    "lua-time-limit": (INT, "5000"),
    "busy-reply-threshold": (INT, "5000"),
    "lazyfree-lazy-user-flush": (BOOL, "no"),
    "repl-diskless-sync": (BOOL, "yes"),
    "repl-diskless-sync-delay": (INT, "5"),
    "repl-diskless-load": (TEXT, "disabled"),
    "replica-read-only": (BOOL, "yes"),
    "replica-serve-stale-data": (BOOL, "yes"),
    "min-replicas-to-write": (INT, "0"),
    "min-replicas-max-lag": (INT, "10"),
    "propagation-error-behavior": (TEXT, "ignore"),
    "list-max-listpack-size": (INT, "-2"),
    "hash-max-listpack-entries": (INT, "128"),
    "set-max-intset-entries": (INT, "512"),
    "zset-max-listpack-entries": (INT, "128"),
    "activedefrag": (BOOL, "no"),
    "protected-mode": (BOOL, "yes"),
    "daemonize": (BOOL, "no"),
    "databases": (INT, "16"),  # EngineConfig.databases: SELECT 0 .. 15
}
_stored: dict[str, str] = {}  # CONFIG SET values of STORED parameters, this process's


BACKLOG_MIN = 16 << 10  # repl-backlog-size: Redis's smallest backlog (a CONFIG SET below it)
_LLONG_MAX = (1 << 63) - 1


def _live(node: Node) -> dict[str, str]:
    return {
        "repl-backlog-size": str(node.backlog.capacity),
        "port": str(STATS.tcp_port),
        "appendfsync": node.store.fsync,
        "proto-max-bulk-len": str(node.limits.proto_max_bulk_len),
        "enable-debug-command": "yes" if node.debug_command else "no",
    } | _window(node)


def _window(node: Node) -> dict[str, str]:
    w = node.window
    if w is None:
        return {}
    return {"repl-flow-lag-ms": str(w.lag_ms), "repl-flow-timeout-ms": str(w.timeout_ms)}


def _replicated(node: Node) -> dict[str, str]:
    cfg = node.engine.config
    return {name.decode(): str(getattr(cfg, s.field)) for name, s in SETTINGS.items()}


def current(node: Node) -> dict[str, str]:
    """Every parameter and its value now (CONFIG GET *)."""
    values = {name: _stored.get(name, default) for name, (_, default) in STORED.items()}
    return values | _live(node) | _replicated(node)


def is_replicated(name: str) -> bool:
    return name.encode() in SETTINGS


def check(node: Node, name: str, value: bytes) -> Callable[[], None] | None:
    """Check a CONFIG SET pair that is not replicated; how to apply it (None: nothing to
    do). KeyError: an unknown name; StreamError: a value refused, its reason (for CONFIG
    SET's 'CONFIG SET failed' line)."""
    text = value.decode("utf-8", "surrogateescape")
    if name == "repl-backlog-size":
        return _backlog_size(node, value)
    if node.window is not None and name in ("repl-flow-lag-ms", "repl-flow-timeout-ms"):
        return _window_setting(node.window, name, value)
    live = _live(node)
    if name in live:
        if text != live[name]:
            raise StreamError("can't set immutable config")
        return None
    if name not in STORED:
        raise KeyError(name)
    kind = STORED[name][0]
    if kind == BOOL and text.lower() not in ("yes", "no"):
        raise StreamError("argument must be 'yes' or 'no'")
    if kind == INT and string2ll(value) is None:
        raise StreamError("argument couldn't be parsed into an integer")
    stored = text.lower() if kind == BOOL else text
    if kind == MEMORY:
        n = memtoull(value)
        if n is None:
            raise StreamError("argument must be a memory value")
        stored = str(n)
    return lambda: _stored.__setitem__(name, stored)


def _window_setting(w: Window, name: str, value: bytes) -> Callable[[], None]:
    """repl-flow-lag-ms (0: no pacing) or repl-flow-timeout-ms (at least 1), integers: in
    force for the next write admitted."""
    ms = string2ll(value)
    if ms is None:
        raise StreamError("argument couldn't be parsed into an integer")
    low = 0 if name == "repl-flow-lag-ms" else 1
    if not low <= ms <= _LLONG_MAX:
        raise StreamError(f"argument must be between {low} and {_LLONG_MAX} inclusive")
    field = "lag_ms" if name == "repl-flow-lag-ms" else "timeout_ms"
    return lambda: setattr(w, field, ms)


def _backlog_size(node: Node, value: bytes) -> Callable[[], None]:
    """repl-backlog-size, the one live parameter CONFIG SET changes (as Redis does): the
    backlog's capacity from its next append on (node/backlog.py), at least BACKLOG_MIN."""
    n = memtoull(value)
    if n is None:
        raise StreamError("argument must be a memory value")
    if not 1 <= n <= _LLONG_MAX:
        raise StreamError(f"argument must be between 1 and {_LLONG_MAX} inclusive")

    def apply() -> None:
        node.backlog.capacity = max(n, BACKLOG_MIN)

    return apply
