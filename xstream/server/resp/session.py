"""Who is connected: one Session per RESP connection, and the registry CLIENT reads.

A Session is the connection state Redis keeps in its `client` struct and that the edge's own
commands read or change (HELLO, CLIENT, SELECT, RESET); the Protocol object that owns the
socket registers it in `Clients` on connect and removes it on disconnect. IDs grow from 1 and
are never reused, as Redis's `CLIENT ID`s.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from xstream.node.watches import Watch


@dataclass(eq=False)
class Session:
    id: int  # CLIENT ID; > 0
    addr: str  # the peer's ip:port
    laddr: str  # our ip:port it connected to
    kill: Callable[[], None]  # closes the connection (CLIENT KILL)
    proto: int = 2  # RESP version, 2 until HELLO 3
    db: int = 0  # SELECTed database
    name: bytes = b""  # CLIENT SETNAME; empty: none
    lib_name: bytes = b""  # CLIENT SETINFO LIB-NAME
    lib_ver: bytes = b""  # CLIENT SETINFO LIB-VER
    created: float = field(default_factory=time.monotonic)  # connect time
    last_active: float = field(default_factory=time.monotonic)  # last command's start
    last_argv: list[bytes] | None = None  # the last command (CLIENT INFO cmd=); None: none
    blocked: bool = False  # a command is waiting (BLOCK, WAIT)
    closing: bool = False  # QUIT or CLIENT KILL: no more commands
    queued: list[list[bytes]] | None = None  # commands queued since MULTI; None: not in MULTI
    queue_failed: bool = False  # a command failed to queue: EXEC answers EXECABORT
    watch: Watch = field(default_factory=Watch)  # WATCHed keys (multi.py)
    user: str = "default"  # the ACL user commands run as (AUTH, HELLO AUTH)
    authenticated: bool = True  # False until AUTH when the default user needs a password

    def reset(self) -> None:
        """RESET: back to a fresh connection's state (the ID and addresses stay)."""
        self.proto, self.db, self.name = 2, 0, b""

    @property
    def last_cmd(self) -> str:
        """Redis's `cmd->fullname` of the last command (`client|list` for a subcommand), lower
        case; `NULL` before the first."""
        argv = self.last_argv
        if not argv:
            return "NULL"
        name = argv[0].decode("utf-8", "replace").lower()
        if name in ("client", "command", "xinfo", "xgroup") and len(argv) > 1:
            return f"{name}|{argv[1].decode('utf-8', 'replace').lower()}"
        return name

    def info_line(self, qbuf: int = 0, obuf: int = 0) -> str:
        """One CLIENT LIST / CLIENT INFO line, Redis's fields (those without meaning here 0)."""
        now = time.monotonic()
        flags = "b" if self.blocked else "x" if self.queued is not None else "N"
        multi = -1 if self.queued is None else len(self.queued)
        return (
            f"id={self.id} addr={self.addr} laddr={self.laddr} fd=-1 "
            f"name={self.name.decode('utf-8', 'replace')} age={int(now - self.created)} "
            f"idle={int(now - self.last_active)} flags={flags} db={self.db} sub=0 psub=0 "
            f"ssub=0 multi={multi} qbuf={qbuf} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 "
            f"obl=0 oll=0 omem={obuf} tot-mem=0 events=r cmd={self.last_cmd} user={self.user} "
            f"redir=-1 resp={self.proto} lib-name={self.lib_name.decode('utf-8', 'replace')} "
            f"lib-ver={self.lib_ver.decode('utf-8', 'replace')}"
        )


class Clients:
    """The RESP connections of one server, by ID."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._by_id: dict[int, Session] = {}

    def add(self, addr: str, laddr: str, kill: Callable[[], None]) -> Session:
        session = Session(next(self._ids), addr, laddr, kill)
        self._by_id[session.id] = session
        return session

    def remove(self, session: Session) -> None:
        self._by_id.pop(session.id, None)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, client_id: int) -> Session | None:
        return self._by_id.get(client_id)
