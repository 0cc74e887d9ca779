"""Prometheus metrics of one node, served over HTTP by `serve(port)` (`/metrics`).

Names follow Prometheus conventions with an `xstream_` prefix: commands by command and
error replies by prefix (read from INFO's counts, stats.py), the replication offset,
per-replica acked offset and lag (bytes and ms) on a primary, apply lag on a replica, fsync
latency, snapshot and resync counts.

Without a metrics endpoint (no --metrics-port, the default) every metric is a no-op and
prometheus_client is never imported: an idle node saves its ~2.6 MB and 55 modules. `serve`
enables them (METRICS.enable) before the node starts; over TLS it hands over to
metricshttp.py.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from .stats import STATS

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric
    from prometheus_client.registry import Collector

_LAG_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class CounterLike(Protocol):
    def inc(self, amount: float = 1) -> None: ...
    def labels(self, *values: object) -> CounterLike: ...


class GaugeLike(Protocol):
    def set(self, value: float) -> None: ...
    def labels(self, *values: object) -> GaugeLike: ...
    def remove(self, *values: object) -> None: ...
    def set_function(self, f: Callable[[], float]) -> None: ...


class HistogramLike(Protocol):
    def observe(self, amount: float) -> None: ...


class _Unscraped:
    """Every metric while no endpoint serves them (no --metrics-port): updates do nothing,
    and prometheus_client is not imported (~2.6 MB and 55 modules an idle node never uses)."""

    def inc(self, amount: float = 1) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass

    def labels(self, *values: object) -> _Unscraped:
        return self

    def remove(self, *values: object) -> None:
        pass

    def set_function(self, f: Callable[[], float]) -> None:
        pass


_UNSCRAPED = _Unscraped()


class Metrics:
    """The node's metrics: no-ops until `enable()` (serve() calls it) makes them Prometheus
    metrics in `registry`. Callers look an attribute up at each update, so they see the
    real ones once enabled."""

    def __init__(self) -> None:
        self.registry: CollectorRegistry | None = None  # once enabled
        self.entries_ingested: CounterLike = _UNSCRAPED
        self.offset: GaugeLike = _UNSCRAPED  # the node's offset, read at scrape time (host.py)
        self.replica_ack: GaugeLike = _UNSCRAPED
        self.replica_lag_bytes: GaugeLike = _UNSCRAPED
        self.replica_lag_ms: GaugeLike = _UNSCRAPED
        self.apply_lag: HistogramLike = _UNSCRAPED
        self.fsync_seconds: HistogramLike = _UNSCRAPED
        self.full_syncs: CounterLike = _UNSCRAPED
        self.partial_syncs: CounterLike = _UNSCRAPED
        self.snapshots: CounterLike = _UNSCRAPED
        self.aof_cuts: CounterLike = _UNSCRAPED
        self.disk_free: GaugeLike = _UNSCRAPED
        self.disk_faults: CounterLike = _UNSCRAPED
        self.disk_ok: GaugeLike = _UNSCRAPED

    def enable(self) -> None:
        """Make every metric a Prometheus metric (once; updates before it are not counted:
        the node calls it before it starts)."""
        if self.registry is not None:
            return
        from prometheus_client import (  # noqa: PLC0415 (only a node that serves them)
            CollectorRegistry,
            Counter,
            Gauge,
            Histogram,
        )

        r = CollectorRegistry()
        self.registry = r
        r.register(_command_stats())  # xstream_commands_total, xstream_errors_total
        self.entries_ingested = Counter(
            "xstream_ingested_entries", "Entries appended by Ingest", registry=r
        )
        self.offset = Gauge("xstream_repl_offset", "Replication offset", registry=r)
        self.replica_ack = Gauge(
            "xstream_replica_ack_offset", "Offset acked by a replica", ["replica"], registry=r
        )
        self.replica_lag_bytes = Gauge(
            "xstream_replica_lag_bytes", "Primary offset minus acked", ["replica"], registry=r
        )
        self.replica_lag_ms = Gauge(
            "xstream_replica_lag_ms", "Age of the oldest unacked write", ["replica"], registry=r
        )
        self.apply_lag = Histogram(
            "xstream_apply_lag_seconds",
            "Replica: primary commit to applied here",
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.fsync_seconds = Histogram(
            "xstream_fsync_seconds", "fsync latency", buckets=_LAG_BUCKETS, registry=r
        )
        self.full_syncs = Counter("xstream_full_syncs", "Full resyncs", registry=r)
        self.partial_syncs = Counter("xstream_partial_syncs", "Partial resyncs", registry=r)
        self.snapshots = Counter("xstream_snapshots", "Snapshots written", registry=r)
        self.aof_cuts = Counter("xstream_aof_tail_cuts", "Torn tails cut at load", registry=r)
        self.disk_free = Gauge(
            "xstream_disk_free_bytes", "Free bytes on the data directory's file system", registry=r
        )
        self.disk_faults = Counter(
            "xstream_disk_faults", "Log writes or fsyncs that failed", ["op"], registry=r
        )
        self.disk_ok = Gauge(
            "xstream_disk_writable", "1 while the log takes writes, 0 while it refuses", registry=r
        )


def _command_stats() -> Collector:
    """A collector of commands and error replies as INFO commandstats/errorstats count them
    (stats.py), read at scrape time: nothing is counted twice on the request path. CONFIG
    RESETSTAT resets them, which Prometheus reads as a counter reset."""
    from prometheus_client.core import CounterMetricFamily  # noqa: PLC0415
    from prometheus_client.registry import Collector  # noqa: PLC0415

    class CommandStats(Collector):
        def collect(self) -> Iterator[Metric]:
            commands = CounterMetricFamily(
                "xstream_commands", "Commands executed", labels=["command"]
            )
            for name, n in sorted(STATS.calls.items()):
                commands.add_metric([name], n)
            yield commands
            errors = CounterMetricFamily("xstream_errors", "Error replies", labels=["prefix"])
            for prefix, n in sorted(STATS.errors.items()):
                errors.add_metric([prefix], n)
            yield errors

    return CommandStats()


METRICS = Metrics()


def serve(port: int, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
    """Serve /metrics on a daemon thread, over TLS with `tls` (metricshttp.py)."""
    METRICS.enable()
    assert METRICS.registry is not None
    if tls is None:
        from prometheus_client import start_http_server  # noqa: PLC0415

        start_http_server(port, addr=host, registry=METRICS.registry)
        return
    from .metricshttp import serve_tls  # noqa: PLC0415

    serve_tls(METRICS.registry, port, host, tls)
