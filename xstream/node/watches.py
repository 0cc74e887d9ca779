"""WATCH: which connections watch which (db, key)s, and whose transactions a write has spoiled.

    Watches.add(watch, keys)    WATCH key ...      (nothing once the watch is dirty)
    Watches.drop(watch)         UNWATCH, EXEC, DISCARD, RESET, a closed connection
    Watches.touch(keys)         a write changed these keys (the engine's Result.touched)
    Watches.touch_all()         the data set was replaced (full sync, rollback, cut back)

One `Watch` per connection (Redis's `c->watched_keys` and CLIENT_DIRTY_CAS); the registry is
the node's (Redis's `db->watched_keys`) and passes to the next role with the engine, so every
write that changes a key dirties its watchers whichever edge it came from: a RESP client, the
gRPC edge, an EXEC, the records a replica applies. A dirty watch stops watching (Redis's
touchWatchedKey unwatches a dirty client at once): its EXEC will answer null anyway.
"""

from __future__ import annotations

Key = tuple[int, bytes]  # (db, key): a key is watched in its database


class Watch:
    """One connection's watched keys."""

    __slots__ = ("dirty", "keys")

    def __init__(self) -> None:
        self.keys: set[Key] = set()  # watched now; empty: none
        self.dirty = False  # a watched key changed since it was watched: EXEC fails


class Watches:
    """The node's registry: key -> the watches on it (insertion-ordered)."""

    __slots__ = ("_by_key",)

    def __init__(self) -> None:
        self._by_key: dict[Key, dict[Watch, None]] = {}

    def add(self, watch: Watch, keys: list[Key]) -> None:
        if watch.dirty:  # no point: the transaction fails anyway (watchCommand)
            return
        for key in keys:
            if key not in watch.keys:
                watch.keys.add(key)
                self._by_key.setdefault(key, {})[watch] = None

    def drop(self, watch: Watch) -> None:
        """Stop watching every key of `watch` (its dirty flag is the caller's)."""
        for key in watch.keys:
            watchers = self._by_key.get(key)
            if watchers is not None:
                watchers.pop(watch, None)
                if not watchers:
                    del self._by_key[key]
        watch.keys.clear()

    def touch(self, keys: list[Key]) -> None:
        if not self._by_key:
            return
        for key in keys:
            for watch in list(self._by_key.get(key, ())):
                watch.dirty = True
                self.drop(watch)

    def touch_all(self) -> None:
        self.touch(list(self._by_key))

    def __len__(self) -> int:
        """Keys watched (by any connection)."""
        return len(self._by_key)
