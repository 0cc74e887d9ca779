"""CONFIG SET's stream settings in the engine: XCONFIGSET, its effect, snapshots."""

from __future__ import annotations

import pytest

from xstream.engine import OK, Engine, EngineConfig, StreamError, snapshot
from xstream.engine.settings import memtoull


def test_xconfigset_changes_the_config_and_ships_itself() -> None:
    e = Engine(EngineConfig(node_max_entries=100))
    r = e.execute(
        [b"XCONFIGSET", b"stream-node-max-entries", b"2", b"Stream-Node-Max-Bytes", b"1kb"]
    )
    assert r.reply == OK
    assert (e.config.node_max_entries, e.config.node_max_bytes) == (2, 1024)
    assert r.effects == [
        [b"XCONFIGSET", b"stream-node-max-entries", b"2", b"Stream-Node-Max-Bytes", b"1kb"]
    ]
    again = e.execute([b"XCONFIGSET", b"stream-node-max-entries", b"2"])
    assert again.effects == []  # nothing changed: nothing to ship


def test_new_streams_take_the_idmp_defaults() -> None:
    e = Engine()
    e.execute([b"XADD", b"old", b"*", b"f", b"v"], 1)
    e.execute([b"XCONFIGSET", b"stream-idmp-duration", b"7", b"stream-idmp-maxsize", b"9"])
    e.execute([b"XADD", b"new", b"*", b"f", b"v"], 2)
    old, new = e.keyspace.stream(b"old"), e.keyspace.stream(b"new")
    assert old is not None and new is not None
    assert (old.idmp_duration, old.idmp_maxsize) == (100, 100)
    assert (new.idmp_duration, new.idmp_maxsize) == (7, 9)


def test_a_replica_applying_the_effects_follows() -> None:
    primary, replica = Engine(), Engine(EngineConfig(node_max_entries=50))
    for argv in (
        [b"XCONFIGSET", b"stream-node-max-entries", b"3"],
        [b"XADD", b"s", b"*", b"f", b"v"],
    ):
        for effect in primary.execute(argv, 5).effects:
            replica.apply(effect)
    assert replica.config.node_max_entries == 3
    assert replica.digest() == primary.digest()


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ([b"stream-node-max-entries", b"x"], "argument couldn't be parsed into an integer"),
        ([b"stream-node-max-entries", b"-1"], "argument must be between 0 and"),
        ([b"stream-node-max-bytes", b"1xb"], "argument must be a memory value"),
        ([b"stream-idmp-duration", b"0"], "argument must be between 1 and 86400 inclusive"),
        ([b"stream-idmp-maxsize", b"10001"], "argument must be between 1 and 10000 inclusive"),
    ],
)
def test_bad_values_change_nothing(argv: list[bytes], error: str) -> None:
    e = Engine()
    with pytest.raises(StreamError) as err:
        e.execute(
            [b"XCONFIGSET", b"stream-node-max-entries", b"5", *argv]
            if argv[0] != b"stream-node-max-entries"
            else [b"XCONFIGSET", b"stream-idmp-duration", b"5", *argv]
        )
    assert error in err.value.message
    assert err.value.message.startswith(
        f"CONFIG SET failed (possibly related to argument '{argv[0].decode()}') - "
    )
    assert e.settings.values == {}


def test_unknown_setting() -> None:
    with pytest.raises(StreamError, match="Unknown option or number of arguments for CONFIG SET"):
        Engine().execute([b"XCONFIGSET", b"appendonly", b"yes"])


def test_snapshots_carry_the_values_over_the_base() -> None:
    e = Engine(EngineConfig(node_max_entries=100))
    e.execute([b"XCONFIGSET", b"stream-idmp-maxsize", b"12"])
    e.execute([b"XADD", b"s", b"*", b"f", b"v"], 3)
    data = snapshot.dump(e)
    back = Engine(EngineConfig(node_max_entries=7))
    back.execute([b"XCONFIGSET", b"stream-idmp-duration", b"5"])  # not in the snapshot
    snapshot.restore(back, data)
    assert back.settings.values == {b"stream-idmp-maxsize": 12}
    assert (back.config.node_max_entries, back.config.idmp_maxsize) == (7, 12)
    assert back.config.idmp_duration == 100
    assert back.digest() == e.digest()
    other = Engine(EngineConfig(node_max_entries=9))
    other.adopt(back)
    assert (other.config.node_max_entries, other.config.idmp_maxsize) == (9, 12)


def test_snapshot_without_settings_is_keys_only() -> None:
    e = Engine()
    e.execute([b"XADD", b"s", b"1-1", b"f", b"v"])
    assert b"stream-" not in snapshot.dump(e)


def test_memtoull() -> None:
    assert [memtoull(v) for v in (b"10", b"1k", b"1KB", b"2mb", b"1g", b"3B")] == [
        10, 1000, 1024, 2 << 20, 10**9, 3,
    ]  # fmt: skip
    assert [memtoull(v) for v in (b"-1", b"", b"1x", b"k")] == [None] * 4
