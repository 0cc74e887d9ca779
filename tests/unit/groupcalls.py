"""A primary engine and a replica fed its effects, for the consumer-group unit tests.

Every successful call on the primary goes through `enginecalls.run` (integrity checked, a
failed call must change nothing), then its effects are applied to a replica with other node
limits and no clock; both must pass `check_integrity()` and have equal digests. So each test
that writes also shows that what it wrote replicates.
"""

from __future__ import annotations

from enginecalls import Word, argv, run

from xstream.engine import Engine, EngineConfig, Result, StreamError
from xstream.engine.reply import Reply, ReplyMap

REPLICA_CONFIG = EngineConfig(node_max_bytes=120, node_max_entries=3)


class Pair:
    def __init__(self, primary: EngineConfig | None = None) -> None:
        self.primary = Engine(primary or EngineConfig())
        self.replica = Engine(REPLICA_CONFIG)

    def run(self, *words: Word, now: int = 1000) -> Result:
        result = run(self.primary, *words, now=now)
        for effect in result.effects:
            self.replica.apply(effect)
        self.replica.check_integrity()
        assert self.replica.digest() == self.primary.digest(), (words, result.effects)
        return result

    def call(self, *words: Word, now: int = 1000) -> Reply:
        return self.run(*words, now=now).reply

    def effects(self, *words: Word, now: int = 1000) -> list[list[bytes]]:
        return self.run(*words, now=now).effects

    def error(self, *words: Word, now: int = 1000) -> str:
        """The error line the command fails with; it must change nothing on the primary."""
        try:
            reply = self.run(*words, now=now).reply
        except StreamError as err:
            return err.line
        raise AssertionError(f"expected an error, got {reply!r}")

    def add(self, key: Word, *ids: str) -> None:
        """Add entries `ids` (explicit) with one field each to `key`."""
        for i in ids:
            self.call("XADD", key, i, "f", i)

    def groups(self, key: Word = "s", now: int = 1000) -> list[dict[bytes, Reply]]:
        """XINFO GROUPS as dicts."""
        reply = self.call("XINFO", "GROUPS", key, now=now)
        assert isinstance(reply, list)
        return [dict(m) for m in reply if isinstance(m, ReplyMap)]

    def group(self, name: Word = "g", key: Word = "s") -> dict[bytes, Reply]:
        want = argv(name)[0]
        for g in self.groups(key):
            if g[b"name"] == want:
                return g
        raise AssertionError(f"no group {want!r}")

    def lag(self, name: Word = "g", key: Word = "s") -> tuple[Reply, Reply]:
        """(entries-read, lag) of a group."""
        g = self.group(name, key)
        return g[b"entries-read"], g[b"lag"]

    def full_group(self, name: Word = "g", key: Word = "s") -> dict[bytes, Reply]:
        """A group's map from XINFO STREAM FULL (all of its PEL), as a dict."""
        reply = self.call("XINFO", "STREAM", key, "FULL", "COUNT", 0)
        assert isinstance(reply, ReplyMap)
        groups = reply.get(b"groups")
        assert isinstance(groups, list)
        for g in groups:
            assert isinstance(g, ReplyMap)
            if g.get(b"name") == argv(name)[0]:
                return dict(g)
        raise AssertionError(f"no group {name!r}")

    def consumers(self, name: Word = "g", key: Word = "s") -> dict[bytes, dict[bytes, Reply]]:
        """Consumers from XINFO STREAM FULL: name -> {seen-time, active-time, pel-count, ...}."""
        out: dict[bytes, dict[bytes, Reply]] = {}
        consumers = self.full_group(name, key)[b"consumers"]
        assert isinstance(consumers, list)
        for c in consumers:
            assert isinstance(c, ReplyMap)
            d = dict(c)
            name_ = d[b"name"]
            assert isinstance(name_, bytes)
            out[name_] = d
        return out

    def pending(self, key: Word = "s", group: Word = "g", now: int = 1000) -> list[Reply]:
        """XPENDING's extended form over the whole PEL."""
        reply = self.call("XPENDING", key, group, "-", "+", 1000, now=now)
        assert isinstance(reply, list)
        return reply


def xclaim_effect(
    consumer: str, entry: str, time: int, count: int, last: str, key: str = "s", group: str = "g"
) -> list[bytes]:
    """The XCLAIM effect shipped for one entry put into / moved within a PEL."""
    return argv(
        "XCLAIM", key, group, consumer, "0", entry, "TIME", time, "RETRYCOUNT", count,
        "FORCE", "JUSTID", "LASTID", last,
    )  # fmt: skip


def setid_effect(last: str, entries_read: int, key: str = "s", group: str = "g") -> list[bytes]:
    return argv("XGROUP", "SETID", key, group, last, "ENTRIESREAD", entries_read)


def consumer_effect(
    consumer: str, seen: int, active: int, key: str = "s", group: str = "g"
) -> list[bytes]:
    return argv("XSETCONSUMER", key, group, consumer, "SEEN", seen, "ACTIVE", active)
