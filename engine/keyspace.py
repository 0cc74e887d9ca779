"""The keyspace: key -> value, where a value is a Stream or a plain string (bytes).

Strings exist so that type errors are real (WRONGTYPE) and TYPE/SCAN have something to tell
apart; only SET and GET touch them. Lookup helpers raise Redis's errors.
"""

from __future__ import annotations

from collections.abc import Iterator

from .errors import wrong_type
from .stream import Stream

Value = Stream | bytes


class Keyspace:
    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data: dict[bytes, Value] = {}

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.data)

    def __contains__(self, key: bytes) -> bool:
        return key in self.data

    def get(self, key: bytes) -> Value | None:
        return self.data.get(key)

    def stream(self, key: bytes) -> Stream | None:
        """The stream at `key`, None if missing; WRONGTYPE for another type."""
        v = self.data.get(key)
        if v is None or isinstance(v, Stream):
            return v
        raise wrong_type()

    def stream_or_create(self, key: bytes, idmp: tuple[int, int] = (100, 100)) -> Stream:
        """The stream at `key`, created if missing with `idmp` (duration, maxsize): the
        config's stream-idmp-duration and stream-idmp-maxsize."""
        s = self.stream(key)
        if s is None:
            s = Stream(*idmp)
            self.data[key] = s
        return s

    def delete(self, key: bytes) -> bool:
        return self.data.pop(key, None) is not None

    def set(self, key: bytes, value: Value) -> None:
        self.data[key] = value

    def clear(self) -> None:
        self.data.clear()


def type_name(value: Value | None) -> str:
    if value is None:
        return "none"
    return "stream" if isinstance(value, Stream) else "string"
