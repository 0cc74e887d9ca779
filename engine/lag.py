"""Group lag and logical read counters, computed exactly as Redis 8 computes them.

`entries_read` counts the entries a group has read since the stream's first entry ever; it
stays valid while no tombstone lies after the group's last ID and the group has not fallen
behind the first entry. When it is not, Redis tries an estimate from the stream's counters and
otherwise reports the lag as unknown (nil).

These are the rules of Redis 7.4+ (redis#13338, #13473, #13958), not 7.0's: a group whose
last ID and the last tombstone both lie before the first entry has lag = length; an empty
stream has lag 0; an ID below the last tombstone has no estimate; and a `>` read only keeps
counting when the group's last ID is not behind the first entry.
"""

from __future__ import annotations

from .groups import INVALID_ENTRIES_READ, ConsumerGroup
from .ids import MAX_ID, MIN_ID, StreamID
from .stream import Stream


def range_has_tombstones(s: Stream, start: StreamID, end: StreamID = MAX_ID) -> bool:
    """streamRangeHasTombstones: does [start, end] contain the last XDEL-style deletion?"""
    mdi = s.max_deleted_entry_id
    if not s.length or mdi == MIN_ID:
        return False
    return start <= mdi <= end


def estimate_distance(s: Stream, entry_id: StreamID) -> int:
    """streamEstimateDistanceFromFirstEverEntry: the read counter of `entry_id`, or -1."""
    if not s.entries_added:
        return 0
    if not s.length and entry_id <= s.last_id:
        return s.entries_added
    mdi = s.max_deleted_entry_id
    if entry_id != MIN_ID and entry_id < mdi:
        return INVALID_ENTRIES_READ  # a tombstone lies between the ID and the last entry
    if entry_id == s.last_id:
        return s.entries_added
    if entry_id > s.last_id:
        return INVALID_ENTRIES_READ
    if mdi == MIN_ID or mdi < s.first_id:
        if entry_id < s.first_id:
            return s.entries_added - s.length
        if entry_id == s.first_id:
            return s.entries_added - s.length + 1
    return INVALID_ENTRIES_READ


def lag(s: Stream, g: ConsumerGroup) -> int | None:
    """streamReplyWithCGLag: entries not yet delivered to the group, None if unknown."""
    if not s.entries_added or not s.length:
        return 0
    if g.last_id < s.first_id and s.max_deleted_entry_id < s.first_id:
        return s.length  # everything left is after the group and after every tombstone
    if g.entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(s, g.last_id):
        return s.entries_added - g.entries_read
    read = estimate_distance(s, g.last_id)
    if read != INVALID_ENTRIES_READ:
        return s.entries_added - read
    return None


def advance(s: Stream, g: ConsumerGroup, entry_id: StreamID) -> None:
    """A `>` read delivered `entry_id`: move last_id and keep entries_read exact if we can."""
    if entry_id <= g.last_id:
        return
    if (
        g.entries_read != INVALID_ENTRIES_READ
        and g.last_id >= s.first_id
        and not range_has_tombstones(s, g.last_id)
    ):
        g.entries_read += 1
    elif s.entries_added:
        g.entries_read = estimate_distance(s, entry_id)
    g.last_id = entry_id
