"""The stream settings CONFIG SET changes: replicated state, like the keyspace.

    stream-node-max-bytes     EngineConfig.node_max_bytes     0..LONG_MAX, a memory value
    stream-node-max-entries   EngineConfig.node_max_entries   0..LLONG_MAX
    stream-idmp-duration      EngineConfig.idmp_duration      1..86400 (new streams' default)
    stream-idmp-maxsize       EngineConfig.idmp_maxsize       1..10000 (new streams' default)

`Settings` holds the node's base config (its flags), the values set by `XCONFIGSET`
(commands/configset.py: the effect a primary's CONFIG SET ships), and the config in force:
the base with those values over it. The values are part of the data set: snapshots carry
them (snapshot.py) and the log carries the XCONFIGSET records, so replicas follow the
primary's CONFIG SET and a restart keeps it. A node's own flags apply to what no CONFIG SET
changed.

Parsing and ranges are Redis's (config.c: createSizeTConfig / createLongLongConfig with
MEMORY_CONFIG for stream-node-max-bytes), errors are CONFIG SET's `reason` texts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from .errors import StreamError
from .ids import string2ll

LONG_MAX: Final = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class EngineConfig:
    node_max_bytes: int = 4096  # stream-node-max-bytes; 0 = no limit (capped at 1 GiB)
    node_max_entries: int = 100  # stream-node-max-entries; 0 = no limit
    databases: int = 16  # Redis's `databases`: db indexes are 0 .. databases - 1
    random_seed: int = 0  # seeds the engine's RANDOMKEY sequence (engine.py)
    idmp_duration: int = 100  # stream-idmp-duration: a new stream's IDMP window, seconds
    idmp_maxsize: int = 100  # stream-idmp-maxsize: a new stream's IIDs kept per producer

    @property
    def idmp(self) -> tuple[int, int]:
        """A new stream's (idmp_duration, idmp_maxsize)."""
        return self.idmp_duration, self.idmp_maxsize


@dataclass(frozen=True, slots=True)
class Setting:
    field: str  # EngineConfig's field
    low: int  # smallest value accepted
    high: int  # largest value accepted
    memory: bool = False  # accepts units (4kb, 1mb, ...) as Redis's MEMORY_CONFIG


SETTINGS: Final[dict[bytes, Setting]] = {
    b"stream-node-max-bytes": Setting("node_max_bytes", 0, LONG_MAX, memory=True),
    b"stream-node-max-entries": Setting("node_max_entries", 0, LONG_MAX),
    b"stream-idmp-duration": Setting("idmp_duration", 1, 86400),
    b"stream-idmp-maxsize": Setting("idmp_maxsize", 1, 10000),
}

_UNITS: Final = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2,
          b"g": 1000**3, b"gb": 1024**3}  # fmt: skip


def memtoull(value: bytes) -> int | None:
    """Redis's memtoull: digits then an optional unit (any case); None if malformed."""
    digits = len(value) - len(value.lstrip(b"0123456789"))
    mul = _UNITS.get(value[digits:].lower())
    if mul is None or not value[:digits]:
        return None
    return int(value[:digits]) * mul


def parse(name: bytes, value: bytes) -> int:
    """A setting's value from CONFIG SET's text; StreamError with Redis's reason."""
    setting = SETTINGS[name]
    n = memtoull(value) if setting.memory else string2ll(value)
    if n is None:
        raise StreamError(
            "argument must be a memory value"
            if setting.memory
            else "argument couldn't be parsed into an integer"
        )
    if not setting.low <= n <= setting.high:
        raise StreamError(f"argument must be between {setting.low} and {setting.high} inclusive")
    return n


class Settings:
    """The base config, the values set over it, and the config in force."""

    __slots__ = ("base", "config", "values")

    def __init__(self, base: EngineConfig) -> None:
        self.base = base  # the node's flags
        self.values: dict[bytes, int] = {}  # set by XCONFIGSET, by Redis name
        self.config = base  # in force: base with `values` over it

    def set(self, name: bytes, value: int) -> bool:
        """Set one (validated) value; whether anything changed."""
        if self.values.get(name) == value:
            return False
        self.values[name] = value
        self.config = replace(self.config, **{SETTINGS[name].field: value})
        return True

    def load(self, values: dict[bytes, int]) -> None:
        """Exactly `values` over the base (a snapshot's, or another engine's)."""
        self.values = {}
        self.config = self.base
        for name, value in values.items():
            self.set(name, value)
