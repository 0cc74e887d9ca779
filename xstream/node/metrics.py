"""Prometheus metrics of one node, served over HTTP by `serve(port)` (`/metrics`).

Names follow Prometheus conventions with an `xstream_` prefix: commands by command and
error replies by prefix (read from INFO's counts, stats.py), the replication offset,
per-replica acked offset and lag (bytes and ms) on a primary, apply lag on a replica, fsync
latency, snapshot and resync counts.

Over TLS (`serve(..., tls=context)`), the endpoint is prometheus_client's WSGI app on a
listening socket wrapped with the node's listening SSLContext (node/tls.py: rotated material
reaches new scrapes). prometheus_client's own TLS option is not used: it takes files once, and
it shakes hands in the accepting thread, where one silent client would stall every scrape.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    make_wsgi_app,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from .stats import STATS

_LAG_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        r.register(_CommandStats())  # xstream_commands_total, xstream_errors_total
        self.entries_ingested = Counter(
            "xstream_ingested_entries", "Entries appended by Ingest", registry=r
        )
        # The node of the moment's offset, read at scrape time (server/host.py sets it)
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


class _CommandStats(Collector):
    """Commands and error replies as INFO commandstats/errorstats count them (stats.py), read
    at scrape time: nothing is counted twice on the request path. CONFIG RESETSTAT resets
    them, which Prometheus reads as a counter reset."""

    def collect(self) -> Iterator[Metric]:
        commands = CounterMetricFamily("xstream_commands", "Commands executed", labels=["command"])
        for name, n in sorted(STATS.calls.items()):
            commands.add_metric([name], n)
        yield commands
        errors = CounterMetricFamily("xstream_errors", "Error replies", labels=["prefix"])
        for prefix, n in sorted(STATS.errors.items()):
            errors.add_metric([prefix], n)
        yield errors


METRICS = Metrics()


def serve(port: int, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
    """Serve /metrics on a daemon thread, over TLS with `tls`."""
    if tls is None:
        start_http_server(port, addr=host, registry=METRICS.registry)
        return
    httpd = make_server(
        host, port, make_wsgi_app(METRICS.registry), _Server6 if ":" in host else _Server,
        handler_class=_Handler,
    )  # fmt: skip
    # The handshake happens in the request's own thread, on its first read.
    httpd.socket = tls.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True).start()


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(WSGIRequestHandler):
    timeout = 10  # seconds: a client that stops mid-handshake or mid-request is dropped

    def log_message(self, format: str, *args: object) -> None:
        """Quiet, as prometheus_client's own server."""

    def handle(self) -> None:
        # A failed handshake (plaintext, a refused certificate) or a dropped client.
        with contextlib.suppress(OSError):
            super().handle()
