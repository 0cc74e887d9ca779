"""The stream commands with redis-py 8.1's names, arguments, checks and reply shapes.

Each method validates its arguments in redis-py's order with redis-py's `DataError` messages,
builds the argv redis-py would send (same words, same order, numbers as redis-py formats
them), and hands it to the host's `_call` with the callback redis-py applies under RESP2
(see argv.py for the host contract, shapes.py for the callbacks). Server-side errors are the
server's own, so they are not checked here.

`StreamCommands` also carries the keyspace commands (`KeyCommands`), so a host needs only it.
Beyond redis-py: `xsetid` (redis-py has no XSETID method) and `xadd_many` (batched appends).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any, Literal

from xstream.client.exceptions import DataError

from .argv import Encodable, Key, StreamId
from .ingestrows import EncodedRows
from .keycommands import KeyCommands
from .shapes import (
    bool_ok,
    identity,
    parse_list_of_dicts,
    parse_stream_list,
    parse_xautoclaim,
    parse_xclaim,
    parse_xinfo_stream,
    parse_xpending,
    parse_xpending_range,
    parse_xread,
)

RefPolicy = Literal["KEEPREF", "DELREF", "ACKED"]
REF_POLICIES = frozenset({"KEEPREF", "DELREF", "ACKED"})


class StreamCommands(KeyCommands):
    # --- appending, trimming, deleting -------------------------------------------------------

    def xadd(
        self,
        name: Key,
        fields: dict[Any, Encodable],
        id: StreamId = "*",
        maxlen: int | None = None,
        approximate: bool = True,
        nomkstream: bool = False,
        minid: StreamId | None = None,
        limit: int | None = None,
        ref_policy: RefPolicy | None = None,
        idmpauto: str | None = None,
        idmp: tuple[str, bytes] | None = None,
    ) -> Any:
        """Append an entry; its ID (None with `nomkstream` and no stream)."""
        pieces: list[Any] = []
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ```maxlen``` or ```minid``` may be specified")
        if idmpauto is not None and idmp is not None:
            raise DataError("Only one of ```idmpauto``` or ```idmp``` may be specified")
        if (idmpauto is not None or idmp is not None) and id != "*":
            raise DataError("IDMPAUTO and IDMP can only be used with id='*'")
        if ref_policy is not None and ref_policy not in REF_POLICIES:
            raise DataError("XADD ref_policy must be one of: KEEPREF, DELREF, ACKED")
        if nomkstream:
            pieces.append(b"NOMKSTREAM")
        if ref_policy is not None:
            pieces.append(ref_policy)
        if idmpauto is not None:
            pieces += [b"IDMPAUTO", idmpauto]
        if idmp is not None:
            if not isinstance(idmp, tuple) or len(idmp) != 2:
                raise DataError("XADD idmp must be a tuple of (producer_id, idempotent_id)")
            pieces += [b"IDMP", idmp[0], idmp[1]]
        if maxlen is not None:
            if not isinstance(maxlen, int) or maxlen < 0:
                raise DataError("XADD maxlen must be non-negative integer")
            pieces.append(b"MAXLEN")
            if approximate:
                pieces.append(b"~")
            pieces.append(str(maxlen))
        if minid is not None:
            pieces.append(b"MINID")
            if approximate:
                pieces.append(b"~")
            pieces.append(minid)
        if limit is not None:
            pieces += [b"LIMIT", limit]
        pieces.append(id)
        if not isinstance(fields, dict) or len(fields) == 0:
            raise DataError("XADD fields must be a non-empty dict")
        pieces.extend(chain.from_iterable(fields.items()))
        return self._call(self._argv("XADD", name, *pieces), identity, write=True)

    def xadd_many(self, name: Key, entries: Iterable[Mapping[Any, Encodable]]) -> Any:
        """Append many entries with automatic IDs (`XADD name * ...` each, in one batch, all
        or nothing); their IDs in order. Not in redis-py; not available in a pipeline."""
        rows = EncodedRows.of_dicts(entries, self.encoding, self.encoding_errors)
        key = self._argv(name)[0]
        if not rows.chunks:
            return []
        ids = self._xadd_many(key, rows)
        return [self._decode_id(i) for i in ids] if self.decode_responses else ids

    def xtrim(
        self,
        name: Key,
        maxlen: int | None = None,
        approximate: bool = True,
        minid: StreamId | None = None,
        limit: int | None = None,
        ref_policy: RefPolicy | None = None,
    ) -> Any:
        """Trim by length or minimum ID; the number of entries removed."""
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ``maxlen`` or ``minid`` may be specified")
        if maxlen is None and minid is None:
            raise DataError("One of ``maxlen`` or ``minid`` must be specified")
        if ref_policy is not None and ref_policy not in REF_POLICIES:
            raise DataError("XTRIM ref_policy must be one of: KEEPREF, DELREF, ACKED")
        pieces: list[Any] = [b"MAXLEN" if maxlen is not None else b"MINID"]
        if approximate:
            pieces.append(b"~")
        pieces.append(maxlen if maxlen is not None else minid)
        if limit is not None:
            pieces += [b"LIMIT", limit]
        if ref_policy is not None:
            pieces.append(ref_policy)
        return self._call(self._argv("XTRIM", name, *pieces), identity, write=True)

    def xdel(self, name: Key, *ids: StreamId) -> Any:
        """Delete entries; how many existed."""
        return self._call(self._argv("XDEL", name, *ids), identity, write=True)

    def xdelex(self, name: Key, *ids: StreamId, ref_policy: RefPolicy = "KEEPREF") -> Any:
        """XDEL with a policy for consumer-group references; one result code per ID."""
        if not ids:
            raise DataError("XDELEX requires at least one message ID")
        if ref_policy not in REF_POLICIES:
            raise DataError("XDELEX ref_policy must be one of: KEEPREF, DELREF, ACKED")
        argv = self._argv("XDELEX", name, ref_policy, "IDS", len(ids), *ids)
        return self._call(argv, identity, write=True)

    def xsetid(
        self,
        name: Key,
        last_id: StreamId,
        entries_added: int | None = None,
        max_deleted_id: StreamId | None = None,
    ) -> Any:
        """Set the stream's last ID (and counters); True. Not in redis-py."""
        pieces: list[Any] = [name, last_id]
        if entries_added is not None:
            pieces += [b"ENTRIESADDED", entries_added]
        if max_deleted_id is not None:
            pieces += [b"MAXDELETEDID", max_deleted_id]
        return self._call(self._argv("XSETID", *pieces), bool_ok, write=True)

    def xcfgset(
        self, name: Key, idmp_duration: int | None = None, idmp_maxsize: int | None = None
    ) -> Any:
        """Configure the stream's idempotency map; b"OK"."""
        if idmp_duration is None and idmp_maxsize is None:
            raise DataError("XCFGSET requires at least one of idmp_duration or idmp_maxsize")
        pieces: list[Any] = []
        if idmp_duration is not None:
            if not isinstance(idmp_duration, int) or not 1 <= idmp_duration <= 300:
                raise DataError("XCFGSET idmp_duration must be an integer between 1 and 300")
            pieces += [b"IDMP-DURATION", idmp_duration]
        if idmp_maxsize is not None:
            if not isinstance(idmp_maxsize, int) or not 1 <= idmp_maxsize <= 1000000:
                raise DataError("XCFGSET idmp_maxsize must be an integer between 1 and 1,000,000")
            pieces += [b"IDMP-MAXSIZE", idmp_maxsize]
        return self._call(self._argv("XCFGSET", name, *pieces), identity, write=True)

    # --- reading -------------------------------------------------------------------------------

    def xlen(self, name: Key) -> Any:
        return self._call(self._argv("XLEN", name), identity, write=False)

    def xrange(
        self, name: Key, min: StreamId = "-", max: StreamId = "+", count: int | None = None
    ) -> Any:
        """Entries from `min` to `max`: [(id, {field: value}), ...]."""
        pieces: list[Any] = [min, max]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        return self._call(self._argv("XRANGE", name, *pieces), parse_stream_list, write=False)

    def xrevrange(
        self, name: Key, max: StreamId = "+", min: StreamId = "-", count: int | None = None
    ) -> Any:
        """Entries from `max` down to `min`: [(id, {field: value}), ...]."""
        pieces: list[Any] = [max, min]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREVRANGE count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        argv = self._argv("XREVRANGE", name, *pieces)
        return self._call(argv, parse_stream_list, write=False)

    def xread(
        self,
        streams: dict[Any, StreamId],
        count: int | None = None,
        block: int | None = None,
        max_count: int | None = None,
        max_size: int | None = None,
    ) -> Any:
        """Entries after the given IDs: [[stream, [(id, {field: value}), ...]], ...]; [] if
        none (after `block` ms, if given)."""
        pieces: list[Any] = []
        if block is not None:
            if not isinstance(block, int) or block < 0:
                raise DataError("XREAD block must be a non-negative integer")
            pieces += [b"BLOCK", str(block)]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREAD count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        if max_count is not None:
            if not isinstance(max_count, int) or max_count < 1:
                raise DataError("XREAD max_count must be a positive integer")
            if count is not None and max_count < count:
                raise DataError("XREAD max_count must be greater than or equal to count")
            pieces += [b"MAXCOUNT", str(max_count)]
        if max_size is not None:
            if not isinstance(max_size, int) or max_size < 1:
                raise DataError("XREAD max_size must be a positive integer")
            pieces += [b"MAXSIZE", str(max_size)]
        if not isinstance(streams, dict) or len(streams) == 0:
            raise DataError("XREAD streams must be a non empty dict")
        pieces += [b"STREAMS", *streams.keys(), *streams.values()]
        return self._call(self._argv("XREAD", *pieces), parse_xread, write=False)

    # --- consumer groups -----------------------------------------------------------------------

    def xreadgroup(
        self,
        groupname: Key,
        consumername: Key,
        streams: dict[Any, StreamId],
        count: int | None = None,
        block: int | None = None,
        noack: bool = False,
        claim_min_idle_time: int | None = None,
        max_count: int | None = None,
        max_size: int | None = None,
    ) -> Any:
        """Read as `consumername` of `groupname`: XREAD's shape; with `claim_min_idle_time`,
        each entry is (id, {field: value}, idle_ms, delivery_count)."""
        pieces: list[Any] = [b"GROUP", groupname, consumername]
        if count is not None:
            if not isinstance(count, int) or count < 1:
                raise DataError("XREADGROUP count must be a positive integer")
            pieces += [b"COUNT", str(count)]
        if max_count is not None:
            if not isinstance(max_count, int) or max_count < 1:
                raise DataError("XREADGROUP max_count must be a positive integer")
            if count is not None and max_count < count:
                raise DataError("XREADGROUP max_count must be greater than or equal to count")
            pieces += [b"MAXCOUNT", str(max_count)]
        if max_size is not None:
            if not isinstance(max_size, int) or max_size < 1:
                raise DataError("XREADGROUP max_size must be a positive integer")
            pieces += [b"MAXSIZE", str(max_size)]
        if block is not None:
            if not isinstance(block, int) or block < 0:
                raise DataError("XREADGROUP block must be a non-negative integer")
            pieces += [b"BLOCK", str(block)]
        if noack:
            pieces.append(b"NOACK")
        claim = claim_min_idle_time is not None
        if claim_min_idle_time is not None:
            if not isinstance(claim_min_idle_time, int) or claim_min_idle_time < 0:
                raise DataError("XREADGROUP claim_min_idle_time must be a non-negative integer")
            pieces += [b"CLAIM", claim_min_idle_time]
        if not isinstance(streams, dict) or len(streams) == 0:
            raise DataError("XREADGROUP streams must be a non empty dict")
        pieces += [b"STREAMS", *streams.keys(), *streams.values()]

        def parse(response: Any) -> Any:
            return parse_xread(response, claim)

        return self._call(self._argv("XREADGROUP", *pieces), parse, write=True)

    def xack(self, name: Key, groupname: Key, *ids: StreamId) -> Any:
        """Acknowledge entries; how many were pending."""
        return self._call(self._argv("XACK", name, groupname, *ids), identity, write=True)

    def xackdel(
        self, name: Key, groupname: Key, *ids: StreamId, ref_policy: RefPolicy = "KEEPREF"
    ) -> Any:
        """XACK then delete; one result code per ID."""
        if not ids:
            raise DataError("XACKDEL requires at least one message ID")
        if ref_policy not in REF_POLICIES:
            raise DataError("XACKDEL ref_policy must be one of: KEEPREF, DELREF, ACKED")
        argv = self._argv("XACKDEL", name, groupname, ref_policy, "IDS", len(ids), *ids)
        return self._call(argv, identity, write=True)

    def xnack(
        self,
        name: Key,
        groupname: Key,
        mode: Literal["SILENT", "FAIL", "FATAL"],
        *ids: StreamId,
        retrycount: int | None = None,
        force: bool = False,
    ) -> Any:
        """Negatively acknowledge entries; how many were NACKed."""
        if not ids:
            raise DataError("XNACK requires at least one message ID")
        if mode not in {"SILENT", "FAIL", "FATAL"}:
            raise DataError("XNACK mode must be one of: SILENT, FAIL, FATAL")
        pieces: list[Any] = [name, groupname, mode, "IDS", len(ids), *ids]
        if retrycount is not None:
            if retrycount < 0:
                raise DataError("XNACK retrycount must be >= 0")
            pieces += [b"RETRYCOUNT", retrycount]
        if force:
            pieces.append(b"FORCE")
        return self._call(self._argv("XNACK", *pieces), identity, write=True)

    def xpending(self, name: Key, groupname: Key) -> Any:
        """{"pending": n, "min": id, "max": id, "consumers": [{"name", "pending"}]}."""
        return self._call(self._argv("XPENDING", name, groupname), parse_xpending, write=False)

    def xpending_range(
        self,
        name: Key,
        groupname: Key,
        min: StreamId | None,
        max: StreamId | None,
        count: int | None,
        consumername: Key | None = None,
        idle: int | None = None,
    ) -> Any:
        """[{"message_id", "consumer", "time_since_delivered", "times_delivered"}, ...]."""
        if {min, max, count} == {None}:
            if idle is not None or consumername is not None:
                raise DataError(
                    "if XPENDING is provided with idle time or consumername, it must be "
                    "provided with min, max and count parameters"
                )
            return self.xpending(name, groupname)
        pieces: list[Any] = [name, groupname]
        if min is None or max is None or count is None:
            raise DataError(
                "XPENDING must be provided with min, max and count parameters, or none of them."
            )
        try:
            if int(idle) < 0:  # type: ignore[arg-type]
                raise DataError("XPENDING idle must be a integer >= 0")
            pieces += ["IDLE", idle]
        except TypeError:
            pass
        try:
            if int(count) < 0:
                raise DataError("XPENDING count must be a integer >= 0")
            pieces += [min, max, count]
        except TypeError:
            pass
        if consumername:
            pieces.append(consumername)
        argv = self._argv("XPENDING", *pieces)
        return self._call(argv, parse_xpending_range, write=False)

    def xclaim(
        self,
        name: Key,
        groupname: Key,
        consumername: Key,
        min_idle_time: int,
        message_ids: list[StreamId] | tuple[StreamId, ...],
        idle: int | None = None,
        time: int | None = None,
        retrycount: int | None = None,
        force: bool = False,
        justid: bool = False,
    ) -> Any:
        """Take over pending entries: [(id, {field: value}), ...], or [id, ...] with justid."""
        if not isinstance(min_idle_time, int) or min_idle_time < 0:
            raise DataError("XCLAIM min_idle_time must be a non negative integer")
        if not isinstance(message_ids, list | tuple) or not message_ids:
            raise DataError(
                "XCLAIM message_ids must be a non empty list or tuple of message IDs to claim"
            )
        pieces: list[Any] = [name, groupname, consumername, str(min_idle_time), *message_ids]
        if idle is not None:
            if not isinstance(idle, int):
                raise DataError("XCLAIM idle must be an integer")
            pieces += [b"IDLE", str(idle)]
        if time is not None:
            if not isinstance(time, int):
                raise DataError("XCLAIM time must be an integer")
            pieces += [b"TIME", str(time)]
        if retrycount is not None:
            if not isinstance(retrycount, int):
                raise DataError("XCLAIM retrycount must be an integer")
            pieces += [b"RETRYCOUNT", str(retrycount)]
        if force:
            if not isinstance(force, bool):
                raise DataError("XCLAIM force must be a boolean")
            pieces.append(b"FORCE")
        if justid:
            if not isinstance(justid, bool):
                raise DataError("XCLAIM justid must be a boolean")
            pieces.append(b"JUSTID")
        argv = self._argv("XCLAIM", *pieces)
        return self._call(argv, parse_xclaim(bool(justid)), write=True)

    def xautoclaim(
        self,
        name: Key,
        groupname: Key,
        consumername: Key,
        min_idle_time: int,
        start_id: StreamId = "0-0",
        count: int | None = None,
        justid: bool = False,
    ) -> Any:
        """Claim idle pending entries from `start_id` on: [next_start, [(id, {f: v}), ...],
        [deleted id, ...]], or just [id, ...] with justid."""
        try:
            if int(min_idle_time) < 0:
                raise DataError("XAUTOCLAIM min_idle_time must be a nonnegative integer")
        except TypeError:
            pass
        pieces: list[Any] = [name, groupname, consumername, min_idle_time, start_id]
        try:
            if int(count) < 0:  # type: ignore[arg-type]
                raise DataError("XPENDING count must be a integer >= 0")
            pieces += [b"COUNT", count]
        except TypeError:
            pass
        if justid:
            pieces.append(b"JUSTID")
        argv = self._argv("XAUTOCLAIM", *pieces)
        return self._call(argv, parse_xautoclaim(bool(justid)), write=True)

    def xgroup_create(
        self,
        name: Key,
        groupname: Key,
        id: StreamId = "$",
        mkstream: bool = False,
        entries_read: int | None = None,
    ) -> Any:
        """Create a consumer group; True."""
        pieces: list[Any] = ["XGROUP", "CREATE", name, groupname, id]
        if mkstream:
            pieces.append(b"MKSTREAM")
        if entries_read is not None:
            pieces += ["ENTRIESREAD", entries_read]
        return self._call(self._argv(*pieces), bool_ok, write=True)

    def xgroup_setid(
        self, name: Key, groupname: Key, id: StreamId, entries_read: int | None = None
    ) -> Any:
        """Move a group's last-delivered ID; True."""
        pieces: list[Any] = ["XGROUP", "SETID", name, groupname, id]
        if entries_read is not None:
            pieces += ["ENTRIESREAD", entries_read]
        return self._call(self._argv(*pieces), bool_ok, write=True)

    def xgroup_destroy(self, name: Key, groupname: Key) -> Any:
        """Delete a consumer group; whether it existed."""
        argv = self._argv("XGROUP", "DESTROY", name, groupname)
        return self._call(argv, bool, write=True)

    def xgroup_createconsumer(self, name: Key, groupname: Key, consumername: Key) -> Any:
        """Create a consumer; 1 if created, 0 if it existed."""
        argv = self._argv("XGROUP", "CREATECONSUMER", name, groupname, consumername)
        return self._call(argv, identity, write=True)

    def xgroup_delconsumer(self, name: Key, groupname: Key, consumername: Key) -> Any:
        """Delete a consumer; how many entries it had pending."""
        argv = self._argv("XGROUP", "DELCONSUMER", name, groupname, consumername)
        return self._call(argv, identity, write=True)

    # --- introspection -------------------------------------------------------------------------

    def xinfo_stream(self, name: Key, full: bool = False) -> Any:
        """The stream's metadata as a dict (str keys); `full` adds entries, groups, PELs."""
        pieces: list[Any] = ["XINFO", "STREAM", name]
        if full:
            pieces.append(b"FULL")
        return self._call(self._argv(*pieces), parse_xinfo_stream(full), write=False)

    def xinfo_groups(self, name: Key) -> Any:
        """One dict (str keys) per consumer group."""
        argv = self._argv("XINFO", "GROUPS", name)
        return self._call(argv, parse_list_of_dicts, write=False)

    def xinfo_consumers(self, name: Key, groupname: Key) -> Any:
        """One dict (str keys) per consumer of the group."""
        argv = self._argv("XINFO", "CONSUMERS", name, groupname)
        return self._call(argv, parse_list_of_dicts, write=False)
