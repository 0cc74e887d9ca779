"""Entry references held by consumer groups, for the KEEPREF / DELREF / ACKED policies.

An entry is *referenced* while some group still needs it: it sits in a group's PEL (the
stream's cgroups_ref), or some group has not been delivered it yet (its ID is above that
group's last_id). ACKED deletes only unreferenced entries; DELREF deletes and also drops the
entry from every PEL; KEEPREF deletes and leaves PELs alone.
"""

from __future__ import annotations

from .ids import StreamID
from .stream import Stream


def is_referenced(s: Stream, entry_id: StreamID) -> bool:
    if entry_id in s.cgroups_ref:
        return True
    return any(g.last_id < entry_id for g in s.cgroups.values())


def drop_refs(s: Stream, entry_id: StreamID) -> bool:
    """Remove `entry_id` from every group PEL; True if any held it."""
    holders = s.cgroups_ref.get(entry_id)
    if not holders:
        return False
    for name in list(holders):
        s.cgroups[name].remove_pending(entry_id)
    return True
