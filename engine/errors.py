"""The project's one error hierarchy, rooted here (the lowest floor, so every floor can use it).

    CoreError                         anything xstream raises on purpose (client edge aside)
    ├── EngineError
    │   ├── StreamError               a Redis error line: prefix + message (the engine's own,
    │   │   └── ...                   and the node's refusals, xstream/node/refusals.py)
    │   ├── SnapshotError             a snapshot that cannot be restored
    │   └── RdbError, LzfError        a DUMP payload RESTORE cannot load
    └── (the node's and roles' own)   DiskFault, CorruptLog, CorruptRecordError, PeerError,
                                      AclError, TlsConfigError, EtcdError, ...

The client's redis-py-compatible exceptions (xstream/client/exceptions.py) are the client
edge's, built from the lines these carry; the console's and the Spark source's are theirs too.
tests/unit/test_error_hierarchy.py holds every other exception class to this root.

Every user-visible failure of a command is a `StreamError` carrying Redis's exact error line:
a prefix (ERR, WRONGTYPE, NOGROUP, BUSYGROUP, ...) and the message text. Servers map it once, at
their edge (a gRPC status, a RESP `-` line). Anything else escaping the engine is a bug; broken
internal invariants are `assert`s. `SnapshotError` is the one non-command failure: a snapshot
that is corrupt, truncated or of an unknown version.
"""

from __future__ import annotations

from typing import Final


class CoreError(Exception):
    """The root: every error the engine, the node, its roles and its servers raise on purpose."""


class EngineError(CoreError):
    """Base of everything the engine raises on purpose."""


class StreamError(EngineError):
    """A command failed; `line` is the exact Redis error reply (without the leading `-`)."""

    def __init__(self, message: str, prefix: str = "ERR") -> None:
        super().__init__(f"{prefix} {message}")
        self.prefix = prefix
        self.message = message

    @property
    def line(self) -> str:
        return f"{self.prefix} {self.message}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamError) and other.line == self.line

    def __hash__(self) -> int:
        return hash(self.line)


class SnapshotError(EngineError):
    """A snapshot could not be restored; nothing was changed."""


# Redis's own texts, shared by several commands. One definition each.
SYNTAX: Final = "syntax error"
NOT_INTEGER: Final = "value is not an integer or out of range"
INVALID_ID: Final = "Invalid stream ID specified as stream command argument"
NO_SUCH_KEY: Final = "no such key"


def syntax_error() -> StreamError:
    return StreamError(SYNTAX)


def not_integer() -> StreamError:
    return StreamError(NOT_INTEGER)


def invalid_id() -> StreamError:
    return StreamError(INVALID_ID)


def wrong_type() -> StreamError:
    return StreamError("Operation against a key holding the wrong kind of value", "WRONGTYPE")


def wrong_arity(fullname: str) -> StreamError:
    return StreamError(f"wrong number of arguments for '{fullname}' command")


def _cformat(b: bytes, limit: int = 128) -> bytes:
    """What C's `%.<limit>s` prints of an argument: up to its first NUL, at most `limit` bytes."""
    return b.split(b"\0", 1)[0][:limit]


def _text(b: bytes) -> str:
    # Error lines are single lines: Redis replaces CR/LF with spaces. Bytes that are not UTF-8
    # survive (surrogateescape), as resp.py encodes them back.
    return b.decode("utf-8", "surrogateescape").replace("\r", " ").replace("\n", " ")


def unknown_command(argv: list[bytes]) -> StreamError:
    """Redis 8's text: the arguments' part only when there are any (7.0 always wrote it)."""
    args = b""
    for a in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + _cformat(a, 128 - len(args)) + b"' "
    name = _cformat(argv[0]) if argv else b""
    if len(argv) < 2:
        return StreamError(f"unknown command '{_text(name)}'")
    return StreamError(f"unknown command '{_text(name)}', with args beginning with: {_text(args)}")


def unknown_subcommand(container: bytes, sub: bytes) -> StreamError:
    return StreamError(
        f"unknown subcommand '{_text(_cformat(sub))}'. Try {_text(container).upper()} HELP."
    )


def bad_subcommand_args(container: str, sub: bytes) -> StreamError:
    return StreamError(
        f"unknown subcommand or wrong number of arguments for '{_text(_cformat(sub))}'. "
        f"Try {container} HELP."
    )
