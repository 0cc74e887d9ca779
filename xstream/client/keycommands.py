"""The keyspace and server commands a node answers besides streams: DEL, EXISTS, TYPE, KEYS,
SCAN, FLUSHALL, DBSIZE, SET, GET, MEMORY USAGE, PING, ECHO, INFO, WAIT, and
`execute_command` for anything else.

Names, arguments, client-side checks and reply shapes are redis-py 8.1's (RESP2). SET's
options are built as redis-py builds them; the node itself takes only `SET key value` and
answers any option with Redis's syntax error.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from xstream.client.exceptions import DataError

from .argv import CommandHost
from .shapes import (
    CALLBACKS,
    bool_ok,
    identity,
    parse_info,
    parse_ping,
    parse_scan,
    parse_set_result,
)

# Commands that never change state: everything else is sent as a write (to the primary).
READ_ONLY = frozenset(
    {
        b"XLEN", b"XRANGE", b"XREVRANGE", b"XREAD", b"XPENDING", b"XINFO", b"EXISTS",
        b"TYPE", b"KEYS", b"SCAN", b"GET", b"MEMORY", b"DBSIZE", b"PING", b"ECHO", b"INFO",
    }
)  # fmt: skip


class KeyCommands(CommandHost):
    def ping(self, **kwargs: Any) -> Any:
        """True once the node answers PONG."""
        return self._call(self._argv("PING"), parse_ping, write=False)

    def echo(self, value: Any) -> Any:
        """`value`, sent to the node and back."""
        return self._call(self._argv("ECHO", value), identity, write=False)

    def info(self, section: Any = None, *args: Any) -> Any:
        """INFO as a dict of typed fields (redis-py's shape): every section, or those named."""
        words = [w for w in (section, *args) if w is not None]
        return self._call(self._argv("INFO", *words), parse_info, write=False)

    def dbsize(self) -> Any:
        """The number of keys."""
        return self._call(self._argv("DBSIZE"), identity, write=False)

    def delete(self, *names: Any) -> Any:
        """Delete the keys `names`; the number deleted."""
        return self._call(self._argv("DEL", *names), identity, write=True)

    def exists(self, *names: Any) -> Any:
        """How many of `names` exist (a key named twice counts twice)."""
        return self._call(self._argv("EXISTS", *names), identity, write=False)

    def type(self, name: Any) -> Any:
        """The type of the value at `name` (b"stream", b"string", b"none")."""
        return self._call(self._argv("TYPE", name), identity, write=False)

    def keys(self, pattern: Any = "*") -> Any:
        """The keys matching the glob `pattern`."""
        return self._call(self._argv("KEYS", pattern), identity, write=False)

    def scan(
        self,
        cursor: Any = 0,
        match: Any = None,
        count: int | None = None,
        _type: str | None = None,
    ) -> Any:
        """One SCAN step: (next cursor as int, [key, ...])."""
        args: list[Any] = ["SCAN", cursor]
        if match is not None:
            args += [b"MATCH", match]
        if count is not None:
            args += [b"COUNT", count]
        if _type is not None:
            args += [b"TYPE", _type]
        return self._call(self._argv(*args), parse_scan, write=False)

    def scan_iter(
        self, match: Any = None, count: int | None = None, _type: str | None = None
    ) -> Iterator[Any]:
        """Every key, SCAN step by SCAN step (a key may come more than once)."""
        cursor: Any = "0"
        while cursor != 0:
            cursor, data = self.scan(cursor=cursor, match=match, count=count, _type=_type)
            yield from data

    def flushall(self, asynchronous: bool = False) -> Any:
        """Delete every key; True."""
        args: list[Any] = ["FLUSHALL"]
        if asynchronous:
            args.append(b"ASYNC")
        return self._call(self._argv(*args), bool_ok, write=True)

    def set(
        self,
        name: Any,
        value: Any,
        ex: Any = None,
        px: Any = None,
        nx: bool = False,
        xx: bool = False,
        keepttl: bool = False,
        get: bool = False,
        exat: Any = None,
        pxat: Any = None,
        ifeq: Any = None,
        ifne: Any = None,
        ifdeq: Any = None,
        ifdne: Any = None,
    ) -> Any:
        """Set a string value: True (None if a condition kept it from being set); with
        `get`, the old value. The node takes no options: they answer a syntax error."""
        expiries = (ex is not None, px is not None, exat is not None, pxat is not None, keepttl)
        if sum(map(bool, expiries)) > 1:
            raise DataError(
                "``ex``, ``px``, ``exat``, ``pxat``, and ``keepttl`` are mutually exclusive."
            )
        conds = (nx, xx, ifeq is not None, ifne is not None, ifdeq is not None, ifdne is not None)
        if sum(map(bool, conds)) > 1:
            raise DataError(
                "``nx``, ``xx``, ``ifeq``, ``ifne``, ``ifdeq``, ``ifdne`` are mutually exclusive."
            )
        args: list[Any] = ["SET", name, value]
        if nx:
            args.append("NX")
        elif xx:
            args.append("XX")
        else:
            for word, arg in (("IFEQ", ifeq), ("IFNE", ifne), ("IFDEQ", ifdeq), ("IFDNE", ifdne)):
                if arg is not None:
                    args += [word, arg]
                    break
        if get:
            args.append("GET")
        args += _expire_flags(ex, px, exat, pxat)
        if keepttl:
            args.append("KEEPTTL")
        return self._call(self._argv(*args), parse_set_result(get), write=True)

    def get(self, name: Any) -> Any:
        """The string at `name`, or None."""
        return self._call(self._argv("GET", name), identity, write=False)

    def memory_usage(self, key: Any, samples: int | None = None) -> Any:
        """The bytes the key and its value take, or None if there is no such key."""
        args: list[Any] = ["MEMORY", "USAGE", key]
        if isinstance(samples, int):
            args += [b"SAMPLES", samples]
        return self._call(self._argv(*args), identity, write=False)

    def wait(self, num_replicas: int, timeout: int) -> Any:
        """Block until `num_replicas` replicas acknowledged this connection's writes, or
        `timeout` ms passed; the number of replicas that acknowledged."""
        return self._call(self._argv("WAIT", num_replicas, timeout), int, write=True)

    def execute_command(self, *args: Any) -> Any:
        """Any command, as redis-py's execute_command: a first argument with spaces is split
        into words ("XGROUP CREATE"), and redis-py's callback for that name (if any) shapes
        the reply. Commands not known to be read-only are sent as writes.
        """
        if not args:
            raise DataError("execute_command needs a command name")
        head, rest = args[0], args[1:]
        words = head.split() if isinstance(head, str | bytes) else [head]
        argv = self._argv(*words, *rest)
        name = " ".join(w.decode("utf-8", "replace") for w in argv[: len(words)]).upper()
        parse = CALLBACKS.get(name, identity)
        return self._call(argv, parse, write=argv[0].upper() not in READ_ONLY)


def _expire_flags(ex: Any, px: Any, exat: Any, pxat: Any) -> list[Any]:
    """redis-py's extract_expire_flags."""
    if ex is not None:
        if isinstance(ex, datetime.timedelta):
            return ["EX", int(ex.total_seconds())]
        if isinstance(ex, int):
            return ["EX", ex]
        if isinstance(ex, str) and ex.isdigit():
            return ["EX", int(ex)]
        raise DataError("ex must be datetime.timedelta or int")
    if px is not None:
        if isinstance(px, datetime.timedelta):
            return ["PX", int(px.total_seconds() * 1000)]
        if isinstance(px, int):
            return ["PX", px]
        raise DataError("px must be datetime.timedelta or int")
    if exat is not None:
        if isinstance(exat, datetime.datetime):
            exat = int(exat.timestamp())
        return ["EXAT", exat]
    if pxat is not None:
        if isinstance(pxat, datetime.datetime):
            pxat = int(pxat.timestamp() * 1000)
        return ["PXAT", pxat]
    return []
