"""Arguments into argv words, and the contract between the command mixins and their host.

Encoding follows redis-py's Encoder exactly: bytes-like as is, str in the client's encoding,
int and float as `repr` (so 1.5 -> b"1.5", 10 -> b"10"); a bool or any other type is a
`DataError` with redis-py's message. redis-py encodes when it sends; we encode when the
command is built, so a bad argument in a pipeline fails at the call, not at `execute()`.

A host (`Client`, `Pipeline`) mixes in the command classes and supplies:

    decode_responses: bool
    encoding, encoding_errors: str
    _call(argv, parse, *, write) -> Any
        argv:  list[bytes], the command words, the (sub)command name split into words;
        parse: called with the reply already converted by `shapes.to_python`;
        write: True if the command changes state (sent to the primary).
        The Client answers parse(value) (or raises ResponseError); a Pipeline buffers the
        call and answers itself, so calls chain.
    _xadd_many(key, entries) -> Any   batched `XADD key *` (entries: each a field/value list;
                                      xadd_many passes ingestrows.EncodedRows)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from xstream.client.exceptions import DataError

from .shapes import Parse

Argv = list[bytes]
# What an argument may be (redis-py's EncodableT, KeyT, StreamIdT ...).
Encodable = bytes | bytearray | memoryview | str | int | float
Key = bytes | bytearray | memoryview | str
StreamId = bytes | bytearray | memoryview | str | int


def encode(value: object, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """One argument as redis-py's Encoder.encode would send it."""
    kind = type(value)
    if kind is str:  # the usual case first: exact types, no isinstance chain
        return value.encode(encoding, errors)  # type: ignore[attr-defined,no-any-return]
    if kind is bytes:
        return value  # type: ignore[return-value]
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, bool):
        raise DataError(
            "Invalid input of type: 'bool'. Convert to a bytes, string, int or float first."
        )
    if isinstance(value, int | float):
        return repr(value).encode()
    if isinstance(value, str):
        return value.encode(encoding, errors)
    raise DataError(
        f"Invalid input of type: '{type(value).__name__}'. "
        "Convert to a bytes, string, int or float first."
    )


class CommandHost(ABC):
    """The base of the command mixins: argv building, and the hooks a host implements (abstract:
    a host missing one fails mypy's check of its instantiation, and the instantiation itself)."""

    decode_responses: bool = False
    encoding: str = "utf-8"
    encoding_errors: str = "strict"

    def _argv(self, *args: object) -> Argv:
        enc, errs = self.encoding, self.encoding_errors
        return [encode(a, enc, errs) for a in args]

    @abstractmethod
    def _call(self, argv: Argv, parse: Parse, *, write: bool) -> Any:
        """Send (or, in a pipeline, queue) one command: the module docstring says how."""

    @abstractmethod
    def _xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> Any:
        """A batch of `XADD key *`, all or nothing: the new IDs in order."""

    def _decode_id(self, value: bytes) -> bytes | str:
        return value.decode(self.encoding, self.encoding_errors) if self.decode_responses else value
