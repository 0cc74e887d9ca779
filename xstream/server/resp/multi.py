"""MULTI, EXEC, DISCARD, WATCH, UNWATCH: a connection's transaction, as Redis's multi.c.

    MULTI                  the connection queues what follows: `+QUEUED`, or the command's
                           error now (unknown, wrong arity, a write this node refuses) and
                           EXEC then answers `-EXECABORT ... previous errors.`
    EXEC                   the queued commands run back to back as one write (one record,
                           logged, shipped and settled once: Node.transaction), replies in an
                           array, each command's error in its place (no rollback); a null
                           array if a WATCHed key changed since WATCH; `-EXECABORT ...
                           because of: <refusal>` if the node refuses writes by then
    DISCARD, RESET         drop the queue and the watch
    WATCH key ...          remember the keys (Node.watches: any write to one, from anyone,
                           spoils the transaction); not inside MULTI

Executed at once even inside MULTI: EXEC, DISCARD, MULTI, WATCH, QUIT, RESET (processCommand).
The edge's own commands (PING, ECHO, SELECT, CLIENT, ...) are queued too; at EXEC they run
after the node's part, each answered in its place (none of them reads or changes data).

Texts and precedence are Redis 7's (src/multi.c, server.c's processCommand/rejectCommand).
"""

from __future__ import annotations

from xstream.engine import NULL_ARRAY
from xstream.engine.commands import arity_ok, lookup
from xstream.engine.errors import StreamError, unknown_command, wrong_arity
from xstream.engine.reply import OK, Reply, Status
from xstream.node.base import SERVER_COMMANDS, Node

from . import aclcommands, commandinfo
from .codec import encode, encode_error
from .conncommands import Conn, EdgeReply, encode_edge
from .session import Session

TRANSACTION_COMMANDS = frozenset({b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH"})
IMMEDIATE = frozenset({b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"QUIT", b"RESET"})
ARITY = {b"MULTI": 1, b"EXEC": 1, b"DISCARD": 1, b"WATCH": -2, b"UNWATCH": 1}
QUEUED = Status("QUEUED")


def queues(session: Session, name: bytes) -> bool:
    """Whether this command is queued rather than run (the connection is in MULTI)."""
    return session.queued is not None and name not in IMMEDIATE


def queue(session: Session, node: Node, argv: list[bytes]) -> Reply:
    """Queue `argv` after Redis's checks; a failed check flags the transaction (EXECABORT)."""
    assert session.queued is not None
    try:
        _check(node, argv)
    except StreamError:
        session.queue_failed = True
        raise
    session.queued.append(argv)
    return QUEUED


def _check(node: Node, argv: list[bytes]) -> None:
    name = argv[0].upper()
    if name in SERVER_COMMANDS or name in commandinfo.EDGE_COMMANDS or name in ARITY:
        info = commandinfo.TABLE.get(name.decode().lower())
        if info is None:
            raise unknown_command(argv)
        if not arity_ok(info.arity, len(argv)):
            raise wrong_arity(info.name)
        return
    if lookup(argv).write:  # unknown commands and wrong arities raise here
        node.check_writes()  # READONLY, MISCONF, NOREPLICAS: refused when queued, as Redis


def refused(session: Session, node: Node, name: bytes, error: StreamError) -> StreamError:
    """The error to answer for a command refused before it ran (unknown, wrong arity,
    NOAUTH, NOPERM), as Redis's rejectCommand: a refused EXEC is `EXECABORT ... because of:
    <error>` (in MULTI or not), and ends the transaction; anything else inside MULTI fails
    it (EXEC then aborts)."""
    if name == b"EXEC":
        if session.queued is not None:
            discard(session, node)
        return _abort(error.message if error.prefix == "ERR" else error.line)
    if session.queued is not None:
        session.queue_failed = True
    return error


def discard(session: Session, node: Node) -> None:
    """Out of MULTI, nothing watched (Redis's discardTransaction)."""
    session.queued = None
    session.queue_failed = False
    node.watches.drop(session.watch)
    session.watch.dirty = False


async def run(name: bytes, argv: list[bytes], session: Session, node: Node, conn: Conn) -> bytes:
    """One of TRANSACTION_COMMANDS, its reply encoded."""
    arity = ARITY[name]
    if not arity_ok(arity, len(argv)):
        e = wrong_arity(name.decode().lower())
        raise refused(session, node, name, e)
    if name == b"EXEC":
        return await _exec(session, node, conn)
    return encode(_simple(name, argv, session, node), session.proto)


def _simple(name: bytes, argv: list[bytes], session: Session, node: Node) -> Reply:
    if name == b"MULTI":
        if session.queued is not None:
            raise StreamError("MULTI calls can not be nested")
        session.queued = []
    elif name == b"DISCARD":
        if session.queued is None:
            raise StreamError("DISCARD without MULTI")
        discard(session, node)
    elif name == b"WATCH":
        if session.queued is not None:
            raise StreamError("WATCH inside MULTI is not allowed")
        node.watches.add(session.watch, [(session.db, key) for key in argv[1:]])
    else:  # UNWATCH
        node.watches.drop(session.watch)
        session.watch.dirty = False
    return OK


async def _exec(session: Session, node: Node, conn: Conn) -> bytes:
    queued, failed = session.queued, session.queue_failed
    if queued is None:
        raise StreamError("EXEC without MULTI")
    edge = commandinfo.EDGE_COMMANDS
    # Permissions again, as Redis's execCommand: rules may have changed since queueing.
    denied = [aclcommands.gate(conn, argv, "multi") for argv in queued]
    ours = [
        a for a, d in zip(queued, denied, strict=True) if d is None and a[0].upper() not in edge
    ]
    try:
        node.transaction_check(ours)  # a refusal comes first (processCommand on EXEC)
        if failed:
            raise StreamError("Transaction discarded because of previous errors.", "EXECABORT")
        replies = await node.transaction(ours, session.watch, db=session.db)
    except StreamError as e:
        if e.prefix == "EXECABORT":
            raise
        raise _abort(e.line) from None
    finally:
        discard(session, node)
    if replies is None:
        return encode(NULL_ARRAY, session.proto)
    out = [b"*%d\r\n" % len(queued)]
    node_replies = iter(replies)
    for argv, refusal in zip(queued, denied, strict=True):
        handler = edge.get(argv[0].upper())
        reply: EdgeReply | StreamError
        if refusal is not None:
            reply = refusal
        elif handler is None:
            reply = next(node_replies)
        else:
            try:
                reply = handler(conn, argv)
            except StreamError as e:
                reply = e
        if isinstance(reply, StreamError):
            out.append(encode_error(reply))
        else:
            out.append(encode_edge(reply, session.proto))
    return b"".join(out)


def _abort(why: str) -> StreamError:
    return StreamError(f"Transaction discarded because of: {why}", "EXECABORT")
