"""The RESP edge: Redis's wire protocol on a TCP port, one asyncio Protocol per connection.

    bytes -> RequestParser -> argv -> EDGE_COMMANDS (the connection's own: HELLO, CLIENT, ...)
                                   -> multi.py (MULTI, EXEC, WATCH, ...; queueing in MULTI)
                                   -> served.node.write_batch(argvs)  (a run of writes)
                                   -> served.node.execute(argv)   (everything else)
          <- codec.encode(reply, session.proto) / encode_error(StreamError) <-

Every data command goes through the node of the moment (`served.node`: the host changes role
in place), the same single dispatch and write path as the gRPC edge: logging, acks, lease
fencing and epochs are the node's. No protobuf here.

Per connection, one task runs the commands in order (Redis's pipelining): it parses the next
command only when the previous one has answered, so a blocked XREAD holds back the commands
that follow it on that connection and no other. Replies of a pipeline are gathered and
written together: when the input runs dry, past 64 KiB, and before a command that may block
(so the replies before it are not held back while it waits).

Writes at once: when the task is idle (waiting for input: all before is answered and
written) and a read starts with a plain write (Node.batchable) that passes the checks
`_execute` makes first (known, arity, ACL, not in MULTI; a command they refuse is the
task's to answer) and the node completes writes without waiting now (Node.takes_writes_now:
on a primary, no replica lagging past the flow window, fsync not `always`), `data_received`
runs it and writes its reply itself, or hands the batch it heads to the turn's end (below,
turn.py), whose replies are written the same way: the same replies,
stats and effects as through the task, one task wake-up and its coroutines fewer per read
(benchmarks/unary_cost.py, instructions per XADD: unary 123k -> 105k with the parser's cut,
16 to a read 44k -> 41k). What is left of the read, and any other command, is held for the
task (`_held`, parsed ahead, run first) and the task woken, so order, MULTI, blocking,
back-pressure and disconnects are the task's as below.

Pipelined writes: a plain write followed by more already parsed (a pipeline's run of XADDs)
goes to the node as one batch (Node.write_batch: one record, one log append, one settle),
each command answered in its place as if sent alone; the first command that is not such a
write ends the batch and runs next, on its own. A batch formed at once (above) is held to the
end of the loop's turn and run with every other connection's read in the same turn: one
record for all of them (turn.py); the connection reads on meanwhile but runs nothing more
until its batch is answered. A run of the same command is gathered by the
parser (RespParser.next_alike, compiled), and a batch answered with bulk strings only (its
XADDs' IDs) is written as one buffer (codec.encode_bulks): the same bytes, one part.

Limits, as Redis's:
* proto-max-bulk-len (node.limits) and the inline/length-line limits: the parser raises a
  ProtocolError with Redis's text; the connection gets it as an error reply, then is closed.
  So every argument the node is given is within the limit (the node floor never looks
  again: each edge bounds what it decodes). WARNING: this holds because the parser is made
  with the node's limit, which is fixed at start (CONFIG SET refuses to change it; a new
  role keeps it);
* client-query-buffer-limit: a connection with more unparsed input than this is closed;
* output: Redis's client-output-buffer-limit for normal clients is unlimited; here a client
  that does not read its replies stops being read from (and its commands stop running) while
  the transport's write buffer is above WRITE_HIGH, until it drains below WRITE_LOW.

A client that disconnects while a command of it is blocked (XREAD BLOCK, XREADGROUP BLOCK,
WAIT) has that command cancelled: the node's wait ends and its waiter is removed. Other
commands finish, their replies dropped.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Protocol, cast

from xstream.engine.commands import SUBCOMMANDS
from xstream.engine.errors import StreamError
from xstream.engine.reply import Reply
from xstream.node import aclcats, slices
from xstream.node.acl import Acl
from xstream.node.base import Node
from xstream.node.logs import slog
from xstream.node.stats import STATS

from . import commandinfo, longreply, multi
from .aclcommands import allowed, gate, user_of
from .codec import ProtocolError, encode, encode_bulk, encode_bulks, encode_error
from .commandinfo import EDGE_COMMANDS
from .conncommands import Conn, Verbatim, encode_edge
from .requests import new_parser
from .session import Clients, Session
from .turn import Turn

QUERY_BUFFER_LIMIT = 1 << 30  # client-query-buffer-limit: Redis's default, 1 GiB
WRITE_HIGH = 4 << 20  # stop reading a client whose unsent replies pass this
WRITE_LOW = 1 << 20  # and read it again once they are below this
FLUSH_AT = 64 << 10  # gathered replies are written once they reach this
# Commands that may wait for others' writes (a leaving client cancels them). WARNING: the
# writes among them are node/base.py's BLOCKING_WRITES (never batched, never run at once).
MAY_BLOCK = frozenset({b"XREAD", b"XREADGROUP", b"WAIT", b"BLPOP", b"BRPOP"})
MAX_BATCH = 1024  # pipelined writes run as one batch at most (the loop serves others between)
# The commands _execute_connection runs (the others go to the node, unless in MULTI)
_CONNECTION_NAMES = multi.TRANSACTION_COMMANDS | {b"RESET"} | EDGE_COMMANDS.keys()


class Served(Protocol):
    """What the edge serves: the node of the moment (host.Host)."""

    @property
    def node(self) -> Node: ...

    @property
    def acl(self) -> Acl: ...


class RespServer:
    """One listening socket and its connections."""

    def __init__(self, served: Served, query_buffer_limit: int = QUERY_BUFFER_LIMIT) -> None:
        self.served = served
        self.query_buffer_limit = query_buffer_limit  # client-query-buffer-limit
        self.clients = Clients()  # sessions, for CLIENT LIST / KILL
        self.connections: dict[int, RespConnection] = {}  # by session ID
        self._server: asyncio.Server | None = None  # listening, once started
        self.port = 0  # bound port, once started
        # pipelined write batches read in one turn of the loop run as one (turn.py)
        self.turn = Turn(lambda: served.node, lambda: served.acl.users, MAX_BATCH)

    async def start(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> int:
        """Listen on host:port (0: any free port), over TLS with `tls`; the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: RespConnection(self), host, port, ssl=tls)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        """Stop listening and close every connection (blocked commands are cancelled)."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections.values()):
            conn.abort()
        if self._server is not None:
            await self._server.wait_closed()

    def buffers(self, session: Session) -> tuple[int, int]:
        conn = self.connections.get(session.id)
        return conn.buffers() if conn is not None else (0, 0)


class RespConnection(asyncio.Protocol):
    def __init__(self, server: RespServer) -> None:
        self.server = server
        self.parser = new_parser(server.served.node.limits.proto_max_bulk_len)
        self.transport: asyncio.Transport | None = None  # once connected
        self.session: Session | None = None  # once connected
        self.conn: Conn | None = None  # what edge commands see; once connected
        self._task: asyncio.Task[None] | None = None  # runs this connection's commands
        self._input: asyncio.Future[None] | None = None  # the task waits for bytes on it
        self._drained: asyncio.Future[None] | None = None  # set while writing is paused
        self._held: list[list[bytes]] = []  # parsed ahead (past a batch), run first, in order
        self._lost = False  # the connection is gone
        self._grouped = False  # a batch of it is held by the server's Turn (turn.py)

    # ------------------------------------------------------------ transport callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio's subclasses
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)
        server = self.server
        session = server.clients.add(
            _address(transport.get_extra_info("peername")),
            _address(transport.get_extra_info("sockname")),
            transport.close,
        )
        self.session = session
        server.connections[session.id] = self
        STATS.connected()
        self.conn = Conn(
            session,
            server.clients,
            lambda: server.served.node.role,
            server.buffers,
            lambda index: server.served.node.engine.check_db(index),  # noqa: PLW0108 (the node of the moment)
            server.served.acl,
            lambda effects: server.served.node.change_users(effects),  # noqa: PLW0108 (the node of the moment)
        )
        session.authenticated = not server.served.acl.requires_auth()
        self._task = asyncio.get_running_loop().create_task(self._run())

    def data_received(self, data: bytes) -> None:
        STATS.net_input_bytes += len(data)
        self.parser.feed(data)
        if self.parser.buffered > self.server.query_buffer_limit:
            assert self.session is not None and self.transport is not None
            slog("resp_query_buffer_limit", level="warning", client=self.session.addr,
                 limit=self.server.query_buffer_limit)  # fmt: skip
            self.transport.close()
            return
        if not self._grouped:  # (else it goes on once its batch is answered)
            self._serve_input()

    def _serve_input(self) -> None:
        """With the task waiting for input (it answered all before), serve what was read at
        once if it can be (`_served_at_once`), else wake the task."""
        waiting = self._input
        if waiting is None or waiting.done():
            return
        try:
            if self._served_at_once():
                return
        except Exception as e:  # a bug, as _run says it
            self._fail(e)
            return
        waiting.set_result(None)

    def _fail(self, error: Exception) -> None:
        """A bug (in the task or outside it): logged, and this connection only dropped."""
        slog("resp_connection_failed", level="error", error=repr(error))
        self.abort()

    # ------------------------------------------------------------ the turn's batches (turn.py)

    @property
    def gone(self) -> bool:
        transport, session = self.transport, self.session
        return (
            self._lost
            or transport is None
            or transport.is_closing()
            or (session is not None and session.closing)
        )

    def group_answered(self, batch: list[list[bytes]], replies: list[Reply | StreamError]) -> None:
        self._grouped = False
        session, transport = self.session, self.transport
        assert session is not None and transport is not None
        try:
            self._batch_started(batch, session)
            out = self._encode_batch(replies, session)
            STATS.net_output_bytes += sum(map(len, out))
            transport.writelines(out)
        except Exception as e:  # a bug, as _run says it
            self._fail(e)
            return
        if self._held:  # parsed past the batch: the task runs it first
            _resolve(self._input)
        else:
            self._serve_input()

    def group_returned(self, batch: list[list[bytes]]) -> None:
        self._grouped = False
        self._held[:0] = batch
        _resolve(self._input)

    def group_dropped(self) -> None:
        self._grouped = False

    def group_failed(self, error: Exception) -> None:
        self._grouped = False
        self._fail(error)

    def eof_received(self) -> bool | None:
        return False  # close our side too: Redis serves no half-closed connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        session = self.session
        if session is not None:
            STATS.disconnected()
            self.server.clients.remove(session)
            self.server.connections.pop(session.id, None)
            self.server.served.node.watches.drop(session.watch)
            if session.blocked and self._task is not None:
                self._task.cancel()  # the node's wait ends; its waiter is removed
        _resolve(self._input)
        _resolve(self._drained)

    def pause_writing(self) -> None:
        assert self.transport is not None
        self.transport.pause_reading()
        if self._drained is None or self._drained.done():
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        assert self.transport is not None
        self.transport.resume_reading()
        _resolve(self._drained)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def buffers(self) -> tuple[int, int]:
        """(unparsed input, unsent output) bytes: CLIENT LIST's qbuf and omem."""
        sent = self.transport.get_write_buffer_size() if self.transport is not None else 0
        return self.parser.buffered, sent

    # ------------------------------------------------------------ the command loop

    def _served_at_once(self) -> bool:
        """Called with the task waiting for input (every command before is answered and its
        reply written): if the input starts with a plain write the node completes without
        waiting, run it here (with the writes parsed after it, as the task batches them)
        and write the replies, the task left waiting; True if that was all, or if no command
        is whole yet. Else False: the task is to run what is left, starting with what was
        parsed here (`_held`)."""
        parser, session, transport = self.parser, self.session, self.transport
        assert session is not None and transport is not None
        if session.closing or (self._drained is not None and not self._drained.done()):
            return False
        try:
            argv = parser.next_command()
        except ProtocolError:
            return False  # the task's next parse raises it again, and answers it
        if argv is None:
            return True
        alone = not parser.buffered
        node = self.server.served.node
        batch = None if alone or not node.takes_writes_now() else self._batch(argv, session)
        if batch is not None:  # run at the turn's end, with the others read in this turn
            self.server.turn.hold(self, batch, session.db, node)
            self._grouped = True
            return True
        reply = self._execute_now(argv, session, node)
        if reply is None:
            self._held.insert(0, argv)
            return False
        STATS.net_output_bytes += len(reply)
        transport.writelines((reply,))
        return alone or not (self._held or parser.buffered)

    def _execute_now(self, argv: list[bytes], session: Session, node: Node) -> bytes | None:
        """`_execute`'s encoded reply, for a plain write the node runs without waiting
        (Node.write_now) and that passes the checks `_execute` makes first (known, arity,
        ACL) outside MULTI; None, with nothing done, for any other command."""
        conn = self.conn
        assert conn is not None
        if session.queued is not None or not allowed(conn, argv):
            return None
        try:
            commandinfo.check(argv)
        except StreamError:
            return None
        if argv[0].upper() in _CONNECTION_NAMES:
            return None
        session.last_active = time.monotonic()  # the task's own, if it runs it
        session.last_argv = argv
        try:
            result = node.write_now(argv, session.db)
        except StreamError as e:
            STATS.command()
            STATS.error(e.line)
            return encode_error(e)
        if result is None:
            return None
        STATS.command()
        reply = result.reply
        return encode_bulk(reply) if type(reply) is bytes else encode(reply, session.proto)

    async def _run(self) -> None:
        out: list[bytes] = []  # replies not written yet
        try:
            await self._serve(out)
        except asyncio.CancelledError:
            pass
        except Exception as e:  # a bug: say so in the log, and drop this connection only
            self._fail(e)

    async def _serve(self, out: list[bytes]) -> None:
        session, transport, parser = self.session, self.transport, self.parser
        assert session is not None and transport is not None
        loop = asyncio.get_running_loop()
        while not self._lost:
            try:
                argv = self._held.pop(0) if self._held else parser.next_command()
            except ProtocolError as e:
                out.append(encode_error(e.error))
                slog("resp_protocol_error", level="warning", client=session.addr, error=e.message)
                self._write(out)
                transport.close()
                return
            if argv is None:
                self._write(out)
                self._input = loop.create_future()  # data_received or connection_lost sets it
                try:
                    await self._input
                finally:
                    self._input = None
                continue
            if self._drained is not None and not self._drained.done():
                self._write(out)
                await self._drained
            name = argv[0].upper()
            if name in MAY_BLOCK:
                self._write(out)
            # (a batch takes its writes from the parser: not while commands parsed ahead
            # wait in _held, which come first)
            batch = self._batch(argv, session) if parser.buffered and not self._held else None
            if batch is not None:
                out += await self._execute_batch(batch, session)
            else:
                out += await self._execute(name, argv, session)
            if session.closing:
                self._write(out)
                transport.close()
                return
            if (len(out[0]) if len(out) == 1 else sum(map(len, out))) >= FLUSH_AT:
                self._write(out)

    def _write(self, out: list[bytes]) -> None:
        if out:
            assert self.transport is not None
            if not self._lost:
                STATS.net_output_bytes += sum(map(len, out))
                self.transport.writelines(out)
            out.clear()

    def _batch(self, argv: list[bytes], session: Session) -> list[list[bytes]] | None:
        """`argv` and the writes parsed right after it, if it is a plain write (Node.batchable)
        and one follows; the first command after them that is not one is held for next.
        Called only with input buffered (a command may follow)."""
        node, conn = self.server.served.node, self.conn
        assert conn is not None
        if session.queued is not None or not node.batchable(argv):
            return None
        if not allowed(conn, argv):
            return None  # refused by _execute, on its own
        # The same command with as many arguments needs no second look up (a command that
        # is no container is named by its first word, its arity by the count) nor, for a
        # user whose own rules allow it (not by a first argument) with every key, a second
        # ACL check: a pipeline of XADDs is checked once.
        user = user_of(conn)
        same = (
            argv[0].lower() not in SUBCOMMANDS
            and user is not None
            and user.allkeys
            and aclcats.fullname(argv) in user.allowed
        )
        head, argc, parser = argv[0], len(argv), self.parser
        batch = [argv]
        while len(batch) < MAX_BATCH:
            try:  # (the same command: appended by the parser, compiled, up to the next other)
                more = (
                    parser.next_alike(head, argc, batch, MAX_BATCH)
                    if same
                    else parser.next_command()
                )
            except ProtocolError:
                break  # raised again at the next turn, after the batch's replies
            if more is None:
                break
            if (
                more[0].upper() in EDGE_COMMANDS
                or not node.batchable(more)
                or not allowed(conn, more)
            ):
                self._held.append(more)
                break
            batch.append(more)
        return batch if len(batch) > 1 else None

    @staticmethod
    def _batch_started(batch: list[list[bytes]], session: Session) -> None:
        session.last_active = time.monotonic()
        session.last_argv = batch[-1]
        STATS.command(len(batch))

    async def _execute_batch(self, batch: list[list[bytes]], session: Session) -> list[bytes]:
        self._batch_started(batch, session)
        replies = await self.server.served.node.write_batch(batch, None, session.db)
        return self._encode_batch(replies, session)

    def _encode_batch(self, replies: list[Reply | StreamError], session: Session) -> list[bytes]:
        joined = encode_bulks(cast("list[object]", replies))  # a run of XADDs: its IDs
        if joined is not None:
            return [joined]
        proto = session.proto
        out = []
        for reply in replies:
            if type(reply) is bytes:  # an XADD's ID: the bulk of every batch
                out.append(encode_bulk(reply))
            elif isinstance(reply, StreamError):
                STATS.error(reply.line)
                out.append(encode_error(reply))
            else:
                out.append(encode(reply, proto))
        return out

    async def _execute(self, name: bytes, argv: list[bytes], session: Session) -> list[bytes]:
        """The reply to one command, encoded (in pieces when it is long)."""
        session.last_active = time.monotonic()
        session.last_argv = argv
        node = self.server.served.node
        STATS.command()
        conn = self.conn
        assert conn is not None
        try:
            try:  # Redis's order: unknown or wrong arity, then NOAUTH, then NOPERM
                commandinfo.check(argv)
                context = "multi" if session.queued is not None else "toplevel"
                refused = gate(conn, argv, context)
            except StreamError as e:
                refused = e
            if refused is not None:
                raise multi.refused(session, node, name, refused)
            if session.queued is not None or name in _CONNECTION_NAMES:
                return await self._execute_connection(name, argv, session, node, conn)
            if slices.slices_for(argv, node.limits):
                with slices.gc_paused():  # until its reply is encoded
                    reply, _ = await node.execute(argv, db=session.db, entries="resp")
                    if longreply.is_long(reply):
                        return await longreply.encode_long(reply, session.proto)
                    return [encode(reply, session.proto)]
            if name in MAY_BLOCK:
                session.blocked = True
                try:
                    reply, _ = await node.execute(argv, db=session.db)
                finally:
                    session.blocked = False
            else:
                reply, _ = await node.execute(argv, db=session.db)
            if name == b"INFO" and isinstance(reply, bytes):
                return [encode_edge(Verbatim(reply), session.proto)]
            return [encode(reply, session.proto)]
        except StreamError as e:
            STATS.error(e.line)
            return [encode_error(e)]

    async def _execute_connection(
        self, name: bytes, argv: list[bytes], session: Session, node: Node, conn: Conn
    ) -> list[bytes]:
        """A command of the connection's own (MULTI/EXEC/..., RESET, EDGE_COMMANDS), or any
        command while in MULTI (queued, unless IMMEDIATE). Raises StreamError."""
        if multi.queues(session, name):
            return [encode(multi.queue(session, node, argv), session.proto)]
        if name in multi.TRANSACTION_COMMANDS:
            before = node.offset
            encoded = await multi.run(name, argv, session, node, conn)
            await _settle_users(node, before)
            return [encoded]
        if name == b"RESET":
            multi.discard(session, node)
        edge = EDGE_COMMANDS.get(name)
        assert edge is not None, name  # in MULTI, only IMMEDIATE ones come here: all are these
        before = node.offset
        edge_reply = edge(conn, argv)
        await _settle_users(node, before)
        return [encode_edge(edge_reply, session.proto)]


async def _settle_users(node: Node, before: int) -> None:
    """An edge command that logged a users record (ACL SETUSER, ...) is settled as a write
    (fsync policy, lease) before its reply; MISCONF or LEASELOST answer instead. EXEC's
    own record was settled by the node already: settling again returns at once."""
    if node.offset != before:
        await node.settle(node.offset, None)


def _address(addr: object) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    return str(addr or "")


def _resolve(fut: asyncio.Future[None] | None) -> None:
    if fut is not None and not fut.done():
        fut.set_result(None)


async def start(
    served: Served,
    host: str,
    port: int,
    query_buffer_limit: int,
    tls: ssl.SSLContext | None = None,
) -> RespServer:
    """A RESP server over `served`, listening on host:port (0: any free port), over TLS with
    `tls` (node/tls.py's listening context: rotated material reaches new connections)."""
    server = RespServer(served, query_buffer_limit)
    STATS.tcp_port = await server.start(host, port, tls)
    return server


__all__ = ["QUERY_BUFFER_LIMIT", "RespServer", "Served", "start"]
