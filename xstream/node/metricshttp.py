"""The /metrics endpoint over TLS: prometheus_client's WSGI app on a listening socket wrapped
with the node's listening SSLContext (node/tls.py: rotated material reaches new scrapes).

prometheus_client's own TLS option is not used: it takes files once, and it shakes hands in
the accepting thread, where one silent client would stall every scrape. Imported only by a
node that serves metrics over TLS (metrics.serve).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app


def serve_tls(registry: CollectorRegistry, port: int, host: str, tls: ssl.SSLContext) -> None:
    """Serve `registry` at /metrics on a daemon thread, one thread per scrape."""
    httpd = make_server(
        host, port, make_wsgi_app(registry), _Server6 if ":" in host else _Server,
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
