"""ACKED deletions of IDs that are no longer (or not yet) entries of the stream.

Redis 8.8 asks "is this ID still referenced by a group?" *before* it looks for the entry
(streamEntryIsReferenced in xdelexCommand / xackdelCommand), so an ID some group still needs
answers 2 even when the stream holds no such entry.
"""

from __future__ import annotations

from enginecalls import call, effects, engine, stream_of

from xstream.engine import Engine, StreamError


def two_groups() -> Engine:
    """Entries 1-0..3-0; g1 has read everything (all pending), g2 nothing yet."""
    e = stream_of(engine(), "s", "1-0", "2-0", "3-0")
    call(e, "XGROUP", "CREATE", "s", "g1", "0")
    call(e, "XGROUP", "CREATE", "s", "g2", "0")
    call(e, "XREADGROUP", "GROUP", "g1", "c", "STREAMS", "s", ">")
    return e


def test_xdelex_acked_on_a_deleted_id_still_pending_answers_2() -> None:
    e = two_groups()
    call(e, "XDEL", "s", "2-0")
    assert call(e, "XDELEX", "s", "ACKED", "IDS", 1, "2-0") == [2]
    assert effects(e, "XDELEX", "s", "ACKED", "IDS", 1, "2-0") == []


def test_xdelex_acked_beyond_a_groups_last_id_answers_2() -> None:
    e = stream_of(engine(), "s", "1-0")
    call(e, "XGROUP", "CREATE", "s", "g", "0")
    assert call(e, "XDELEX", "s", "ACKED", "IDS", 2, "1-0", "9-0") == [2, 2]
    call(e, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    # g's last ID is now 1-0: 1-0 is unreferenced, 9-0 is still ahead of it
    assert call(e, "XDELEX", "s", "ACKED", "IDS", 2, "1-0", "9-0") == [1, 2]


def test_xdelex_acked_on_an_unreferenced_missing_id_answers_minus_1() -> None:
    e = stream_of(engine(), "s", "1-0")
    assert call(e, "XDELEX", "s", "ACKED", "IDS", 1, "9-0") == [-1]


def test_xackdel_acked_on_a_deleted_id_another_group_has_not_read_answers_2() -> None:
    e = two_groups()
    call(e, "XDEL", "s", "2-0")
    assert call(e, "XACKDEL", "s", "g1", "ACKED", "IDS", 1, "2-0") == [2]
    assert call(e, "XPENDING", "s", "g1")[0] == 2  # type: ignore[index]


def test_a_missing_key_or_group_answers_before_the_ids_are_parsed() -> None:
    """As Redis 8.8 (xdelexCommand / xackdelCommand): with no such key (or, for XACKDEL, no
    such group) every ID answers -1, even one that is not an ID; otherwise a bad ID is an
    error and nothing changes (checked on Redis 8.8)."""
    e = two_groups()
    bad = "ERR Invalid stream ID specified as stream command argument"
    assert call(e, "XDELEX", "nokey", "ACKED", "IDS", 2, "-", "1-0") == [-1, -1]
    assert call(e, "XACKDEL", "nokey", "g1", "IDS", 2, "+", "$") == [-1, -1]
    assert call(e, "XACKDEL", "s", "nogroup", "DELREF", "IDS", 1, "-") == [-1]
    for cmd in (
        ["XDELEX", "s", "IDS", 2, "1-0", "-"],
        ["XACKDEL", "s", "g1", "IDS", 2, "1-0", "+"],
    ):
        try:
            call(e, *cmd)
        except StreamError as err:
            assert err.line == bad
        else:
            raise AssertionError(f"{cmd} did not fail")
