"""The server commands clients and tools send beside the data: CONFIG, TIME, LASTSAVE, SAVE,
BGSAVE, BGREWRITEAOF, DEBUG, SHUTDOWN, WAITAOF, FUNCTION FLUSH, SCRIPT FLUSH.

    handler(node, argv, client_offset) -> (reply, offset)     raises StreamError

They join base.py's SERVER_COMMANDS, so every edge (RESP, gRPC Execute) answers them the same.
Texts and arities are Redis's (config.c, debug.c, server.c, replication.c).

* CONFIG GET/SET/RESETSTAT: serverconfig.py says which parameters are real. A CONFIG SET of
  a stream setting is a write (XCONFIGSET): replicated and persisted.
* SAVE, BGSAVE and BGREWRITEAOF all write a snapshot (what Admin.Snapshot does): it is this
  node's RDB, and it rewrites the log too (segments before it are dropped).
* DEBUG needs --enable-debug-command (Redis 7's enable-debug-command): LOG, RELOAD (snapshot,
  then rebuild the state from disk), LOADAOF (rebuild from what is on disk), SLEEP, HELP.
* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: snapshot (unless NOSAVE), then the process stops as
  on SIGTERM (stats.STATS.on_shutdown, set by the runner); no reply, as Redis's.
* WAITAOF numlocal numreplicas timeout: [this node's log fsynced at the client's offset,
  replicas that acked it]. A replica acks what it has appended to its log (fsynced per its
  own --fsync), which is what it counts as its AOF here.
* FUNCTION FLUSH, SCRIPT FLUSH: +OK, there is nothing to flush; the rest of FUNCTION and
  SCRIPT is refused, and EVAL, EVALSHA, FCALL are unknown commands (the engine's table).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from xstream.engine import Engine, StreamError
from xstream.engine.commands import arity_ok
from xstream.engine.commands.configset import failed
from xstream.engine.errors import unknown_subcommand, wrong_arity
from xstream.engine.glob import match
from xstream.engine.ids import string2ll
from xstream.engine.reply import OK, Reply, ReplyMap, Status

from . import serverconfig, users
from .logs import slog
from .stats import STATS

if TYPE_CHECKING:
    from .base import Node

Argv = list[bytes]
Answer = tuple[Reply, int]
Handler = Callable[["Node", Argv, int], Awaitable[Answer]]

DEBUG_REFUSED = (
    'DEBUG command not allowed. If the enable-debug-command option is set to "local", '
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server."
)
_background: set[asyncio.Task[tuple[int, int]]] = set()  # BGSAVE's, kept until done


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _sub(argv: Argv, arities: dict[bytes, int]) -> bytes:
    """The subcommand of argv (lower case), its arity checked as Redis's `container|sub`."""
    if len(argv) < 2:
        raise wrong_arity(_text(argv[0]).lower())
    sub = argv[1].lower()
    arity = arities.get(sub)
    if arity is None:
        raise unknown_subcommand(argv[0], argv[1])
    if not arity_ok(arity, len(argv)):
        raise wrong_arity(f"{_text(argv[0]).lower()}|{_text(sub)}")
    return sub


# ---------------------------------------------------------------- CONFIG


async def config(node: Node, argv: Argv, client_offset: int) -> Answer:
    sub = _sub(argv, {b"get": -3, b"set": -4, b"resetstat": 2, b"rewrite": 2, b"help": 2})
    if sub == b"get":
        return _config_get(node, argv[2:]), node.offset
    if sub == b"set":
        return await _config_set(node, argv), node.offset
    if sub == b"resetstat":
        STATS.reset()
        node.engine.reset_stats()
        return OK, node.offset
    if sub == b"rewrite":
        raise StreamError("The server is running without a config file")
    return [Status(line) for line in CONFIG_HELP], node.offset


CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
    "RESETSTAT", "    Reset statistics reported by the INFO command.",
    "REWRITE", "    Rewrite the configuration file.",
    "HELP", "    Print this help.",
]  # fmt: skip


def _config_get(node: Node, patterns: Argv) -> Reply:
    """Parameters matching any pattern (a glob, or an exact name), any case; each once. An
    exact name is answered as it was given (Redis keys its matches by the argument)."""
    values = serverconfig.current(node)
    found: dict[str, tuple[bytes, str]] = {}  # name -> (as answered, value)
    for raw in patterns:
        pattern = raw.lower()
        if not any(c in pattern for c in b"[*?"):
            name = _text(pattern)
            if name in values:
                found.setdefault(name, (raw, values[name]))
            continue
        for name, value in values.items():
            if match(pattern, name.encode()):
                found.setdefault(name, (name.encode(), value))
    return ReplyMap([(k, v.encode()) for k, v in found.values()])


async def _config_set(node: Node, argv: Argv) -> Reply:
    """All pairs or none: every pair is checked before any is applied (as Redis)."""
    if len(argv) % 2:
        raise StreamError("syntax error")
    replicated: Argv = []
    apply: list[Callable[[], None]] = []
    seen: set[str] = set()
    for raw, value in zip(argv[2::2], argv[3::2], strict=True):
        name = _text(raw).lower()
        if name in seen:
            raise failed(raw, "duplicate parameter")
        seen.add(name)
        if serverconfig.is_replicated(name):
            replicated += [raw, value]
            continue
        try:
            todo = serverconfig.check(node, name, value)
        except KeyError:
            raise StreamError(
                f"Unknown option or number of arguments for CONFIG SET - '{_text(raw)}'"
            ) from None
        except StreamError as e:
            raise failed(raw, e.message) from None
        if todo is not None:
            apply.append(todo)
    if replicated:
        await node.write([b"XCONFIGSET", *replicated], None)
    for todo in apply:
        todo()
    return OK


# ---------------------------------------------------------------- TIME, LASTSAVE, saving


async def time_(node: Node, argv: Argv, client_offset: int) -> Answer:
    if len(argv) != 1:
        raise wrong_arity("time")
    us = time.time_ns() // 1000
    return [b"%d" % (us // 1_000_000), b"%d" % (us % 1_000_000)], node.offset


async def lastsave(node: Node, argv: Argv, client_offset: int) -> Answer:
    if len(argv) != 1:
        raise wrong_arity("lastsave")
    return STATS.last_save, node.offset


async def save(node: Node, argv: Argv, client_offset: int) -> Answer:
    if len(argv) != 1:
        raise wrong_arity("save")
    if STATS.snapshots_running:
        raise StreamError("Background save already in progress")
    await _snapshot(node)
    return OK, node.offset


async def _snapshot(node: Node) -> None:
    try:
        await node.snapshot_now()
    except OSError as e:  # DiskFault too: store.py logged which file
        raise StreamError(f"Errors trying to save the snapshot: {e}") from None


async def bgsave(node: Node, argv: Argv, client_offset: int) -> Answer:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() != b"schedule"):
        raise StreamError("syntax error") if len(argv) == 2 else wrong_arity("bgsave")
    if STATS.snapshots_running:
        if len(argv) == 2:
            return Status("Background saving scheduled"), node.offset
        raise StreamError("Background save already in progress")
    _in_background(node)
    return Status("Background saving started"), node.offset


async def bgrewriteaof(node: Node, argv: Argv, client_offset: int) -> Answer:
    """The log is rewritten by a snapshot: the segments before it are dropped."""
    if len(argv) != 1:
        raise wrong_arity("bgrewriteaof")
    if STATS.snapshots_running:
        return Status("Background append only file rewriting scheduled"), node.offset
    _in_background(node)
    return Status("Background append only file rewriting started"), node.offset


def _in_background(node: Node) -> None:
    task = asyncio.get_running_loop().create_task(node.snapshot_now())
    _background.add(task)
    task.add_done_callback(_background_done)


def _background_done(task: asyncio.Task[tuple[int, int]]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        slog("background_snapshot_failed", level="error", error=str(task.exception()))


# ---------------------------------------------------------------- DEBUG


async def debug(node: Node, argv: Argv, client_offset: int) -> Answer:
    if not node.debug_command:
        raise StreamError(DEBUG_REFUSED)
    if len(argv) < 2:
        raise wrong_arity("debug")
    sub = argv[1].lower()
    if sub == b"log" and len(argv) == 3:
        slog("debug_log", message=_text(argv[2]))
        return OK, node.offset
    if sub == b"reload":
        options = {a.lower() for a in argv[2:]}
        if options - {b"nosave", b"noflush"}:
            raise StreamError("syntax error")
        if b"nosave" not in options:
            await _snapshot(node)
        _reload(node)
        return OK, node.offset
    if sub == b"loadaof" and len(argv) == 2:
        _reload(node)
        return OK, node.offset
    if sub == b"sleep" and len(argv) == 3:
        try:
            seconds = float(argv[2])
        except ValueError:
            raise StreamError("value is not a valid float") from None
        await asyncio.sleep(max(0.0, seconds))
        return OK, node.offset
    if sub == b"help" and len(argv) == 2:
        return [Status(line) for line in DEBUG_HELP], node.offset
    raise unknown_subcommand(argv[0], argv[1])


DEBUG_HELP = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOG <message>", "    Write <message> to the server log.",
    "RELOAD [NOSAVE]", "    Save a snapshot, then load the data set from the disk again.",
    "LOADAOF", "    Load the data set from the snapshot and the log on disk.",
    "SLEEP <seconds>", "    Wait <seconds> (this connection only).",
    "HELP", "    Print this help.",
]  # fmt: skip


def _reload(node: Node) -> None:
    """The state, rebuilt from the newest snapshot and the log up to this node's offset."""
    replay = users.Replay(Engine(node.engine.settings.base))
    node.store.load_upto(replay.engine, node.offset, replay.record, replay.snapshot)
    node.engine.adopt(replay.engine)
    users.rebuilt(node.acl, replay.users)
    node.wake_all()
    slog("debug_reload", offset=node.offset, keys=len(replay.engine.keyspace))


# ---------------------------------------------------------------- SHUTDOWN, WAITAOF


async def shutdown(node: Node, argv: Argv, client_offset: int) -> Answer:
    options = {a.lower() for a in argv[1:]}
    if options - {b"nosave", b"save", b"now", b"force", b"abort"} or {b"nosave", b"save"} <= (
        options
    ):
        raise StreamError("syntax error")
    if b"abort" in options:
        if len(options) > 1:
            raise StreamError("syntax error")
        raise StreamError("No shutdown in progress.")
    stop = STATS.on_shutdown
    if b"nosave" not in options:
        try:
            await _snapshot(node)
        except StreamError as e:
            slog("shutdown_snapshot_failed", level="error", error=e.message)
            if b"force" not in options:
                raise StreamError("Errors trying to SHUTDOWN. Check logs.") from None
    if stop is None:
        raise StreamError("Errors trying to SHUTDOWN. Check logs.")
    slog("shutdown_requested", saved=b"nosave" not in options)
    stop()
    await asyncio.get_running_loop().create_future()  # no reply: the process is stopping
    raise AssertionError("unreachable")


async def waitaof(node: Node, argv: Argv, client_offset: int) -> Answer:
    if len(argv) != 4:
        raise wrong_arity("waitaof")
    numlocal = string2ll(argv[1])
    if numlocal is None:
        raise StreamError("value is not an integer or out of range")
    if not 0 <= numlocal <= 1:
        raise StreamError("value is out of range, value must between 0 and 1")
    numreplicas = string2ll(argv[2])
    if numreplicas is None:
        raise StreamError("value is not an integer or out of range")
    if numreplicas < 0:
        raise StreamError("value is out of range, must be positive")
    timeout = string2ll(argv[3])
    if timeout is None:
        raise StreamError("timeout is not an integer or out of range")
    if timeout < 0:
        raise StreamError("timeout is negative")
    if node.role != "primary":
        raise StreamError(
            "WAITAOF cannot be used with replica instances. Please also note that writes to "
            "replicas are just local and are not propagated."
        )
    offset = client_offset or node.offset
    try:
        local = await node.store.fsync_to(offset)
    except OSError:  # DiskFault: not on disk
        local = False
    replicas = await node.wait_replicas(numreplicas, timeout, offset)
    return [int(local), replicas], node.offset


# ---------------------------------------------------------------- FUNCTION, SCRIPT


async def function(node: Node, argv: Argv, client_offset: int) -> Answer:
    return _flush_only(node, argv)


def _flush_only(node: Node, argv: Argv) -> Answer:
    """FLUSH [ASYNC|SYNC]: +OK (there are no functions or scripts); the rest is refused."""
    name = _text(argv[0]).upper()
    if len(argv) < 2:
        raise wrong_arity(name.lower())
    if argv[1].lower() != b"flush":
        raise StreamError(
            f"{name} {_text(argv[1]).upper()} is not supported: this server runs no "
            "scripts or functions"
        )
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"async", b"sync")):
        raise (
            StreamError("syntax error") if len(argv) == 3 else wrong_arity(f"{name.lower()}|flush")
        )
    return OK, node.offset


async def script(node: Node, argv: Argv, client_offset: int) -> Answer:
    return _flush_only(node, argv)


COMMANDS: dict[bytes, Handler] = {
    b"CONFIG": config,
    b"TIME": time_,
    b"LASTSAVE": lastsave,
    b"SAVE": save,
    b"BGSAVE": bgsave,
    b"BGREWRITEAOF": bgrewriteaof,
    b"DEBUG": debug,
    b"SHUTDOWN": shutdown,
    b"WAITAOF": waitaof,
    b"FUNCTION": function,
    b"SCRIPT": script,
}
