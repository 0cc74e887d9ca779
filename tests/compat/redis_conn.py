"""A real redis-server for compat tests: the process, and a tiny blocking RESP2 client; and
an xstream primary to compare it with (`xstream_node`: its RESP port).

`RedisConn.call` answers in the engine's Reply types, with error replies returned (not raised)
as `StreamError`, so a test can compare redis-server and the engine value for value.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from xstream.engine.errors import StreamError
from xstream.engine.reply import Reply, Status
from xstream.server.resp.codec import NEED_MORE, Parsed, ReplyParser, encode

Arg = bytes | str | int
PONG = Status("PONG")


class RedisConn:
    """One connection; one request in flight at a time."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._parser = ReplyParser()

    def call(self, *args: Arg) -> Reply | StreamError:
        """Send one command, wait for its reply."""
        self.send_raw(encode([_arg(a) for a in args]))
        return self.read_reply()

    def call_raw(self, *args: Arg) -> bytes:
        """Send one command; its reply's bytes exactly as the server sent them."""
        assert self._parser.buffered == 0, "a reply is still buffered"
        self.send_raw(encode([_arg(a) for a in args]))
        raw = bytearray()
        while (reply := self._parser.next_reply()) is NEED_MORE:
            data = self._recv()
            raw += data
            self._parser.feed(data)
        assert self._parser.buffered == 0, reply
        return bytes(raw)

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are: for requests `call` cannot frame, such as malformed ones."""
        self._sock.sendall(data)

    def read_reply(self) -> Parsed:
        """The next reply; ConnectionError if the server closes the connection first."""
        while (reply := self._parser.next_reply()) is NEED_MORE:
            self._parser.feed(self._recv())
        return reply

    def _recv(self) -> bytes:
        data = self._sock.recv(1 << 16)
        if not data:
            raise ConnectionError("redis-server closed the connection")
        return data

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RedisConn:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _arg(a: Arg) -> bytes:
    if isinstance(a, bytes):
        return a
    if isinstance(a, bool):
        raise TypeError("a bool is not a Redis argument; pass an int or bytes")
    if isinstance(a, int):
        return b"%d" % a
    return a.encode()


class RedisServer:
    """A redis-server process on 127.0.0.1 that this test session started."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, logfile: Path) -> None:
        self.proc = proc  # the running server
        self.port = port  # its loopback port
        self.logfile = logfile  # its stdout and stderr

    def conn(self) -> RedisConn:
        return RedisConn(self.port)

    def call(self, *args: Arg) -> Reply | StreamError:
        """One command on a fresh connection."""
        with self.conn() as conn:
            return conn.call(*args)

    def flushall(self) -> None:
        assert self.call("FLUSHALL", "SYNC") == Status("OK")

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(
    binary: str,
    workdir: Path,
    config: Mapping[str, str | int] | None = None,
    timeout: float = 10.0,
) -> RedisServer:
    """Start redis-server and wait (bounded) until it answers PING; RuntimeError with its log
    if it exits or stays silent. `config` adds directives, e.g. {"stream-node-max-entries": 4}.
    A free port can be taken by someone else before the server binds it: then try another.
    """
    for _ in range(3):
        server = _spawn(binary, workdir, config or {})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and server.proc.poll() is None:
            try:
                if server.call("PING") == PONG:
                    return server
            except OSError:
                pass
            time.sleep(0.02)
        server.stop()
        if "Address already in use" not in server.log():
            break
    raise RuntimeError(
        f"redis-server on port {server.port} gave no PONG within {timeout}s "
        f"(exit status {server.proc.returncode}); its log:\n{server.log()}"
    )


def _spawn(binary: str, workdir: Path, config: Mapping[str, str | int]) -> RedisServer:
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    argv += ["no", "--dir", str(workdir), "--daemonize", "no"]
    for name, value in config.items():
        argv += [f"--{name}", str(value)]
    logfile = workdir / f"redis-{port}.log"
    with logfile.open("wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    return RedisServer(proc, port, logfile)


def _pong(port: int) -> bool:
    """Whether a RESP node answers PING on `port` (then QUIT: it closes the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        s.sendall(b"PING\r\nQUIT\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out == b"+PONG\r\n+OK\r\n"


def xstream_node(data: Path, *args: str) -> Iterator[int]:
    """Run an xstream primary (data in `data`, more node options in `args`) while the
    generator is open; yields its RESP port."""
    port = free_port()
    cmd = [sys.executable, "-m", "xstream.cli", "primary", "--port", str(free_port()),
           "--resp-port", str(port), "--data-dir", str(data), *args]  # fmt: skip
    with (Path(data) / "node.log").open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if _pong(port):
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "xstream did not start"
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(15)
