"""XADD IDMPAUTO: the idempotent ID is computed from the entry's field/value pairs, whatever
their order (Redis 8.6+), and ships as an explicit IID so replicas never recompute it."""

from __future__ import annotations

from enginecalls import call, effects, engine, ids_of

from xstream.engine import Engine, idmp


def test_the_same_pairs_in_another_order_are_a_duplicate() -> None:
    e = engine()
    first = call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f1", "a", "f2", "b", "f3", "c", now=1000)
    again = call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f2", "b", "f3", "c", "f1", "a", now=1001)
    assert again == first
    assert ids_of(e) == [first]


def test_other_values_or_swapped_roles_are_new_entries() -> None:
    e = engine()
    call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f1", "a", "f2", "b", now=1000)
    call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f2", "b", "f1", "x", now=1000)
    call(e, "XADD", "s", "IDMPAUTO", "p", "*", "a", "f1", "b", "f2", now=1000)
    call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f1", "a", "f2", "b", "f1", "a", now=1000)
    assert len(ids_of(e)) == 4


def test_the_effect_carries_the_computed_iid_and_replays_as_a_duplicate() -> None:
    e = engine()
    [effect] = effects(e, "XADD", "s", "IDMPAUTO", "p", "*", "x", "1", "y", "2", now=1000)
    assert effect[:2] == [b"XADD", b"s"] and b"IDMP" in effect
    replica = Engine()
    replica.apply(effect)
    assert replica.digest() == e.digest()
    dup = effects(e, "XADD", "s", "IDMPAUTO", "p", "*", "y", "2", "x", "1", now=1002)
    for d in dup:
        replica.apply(d)
    assert replica.digest() == e.digest()
    assert ids_of(replica) == [b"1000-0"]


# Redis 8.8.0's own IIDs, read by hand from a DUMP of a real server (2026-11-26): the IDMP
# records of `XADD s IDMPAUTO p * f1 a f2 b` and of the longer pair below.
REDIS_IIDS = {
    ((b"f1", b"a"), (b"f2", b"b")): "35b93af8f7b6eaa79e5ac813720afcd7",
    ((b"user_id", b"12345678901234567890"), (b"event", b"a-much-longer-value-" * 10)): (
        "9ce40cb4fc0536430f1e7ad08a4fe479"
    ),
}
# That DUMP: entries 1795707800639-0 (f1 a f2 b) and -1 (the longer pair), both IDMPAUTO p.
REDIS_DUMP = bytes.fromhex(
    "1b0110000001a218868c3f0000000000000000c3406b4121132101000015000201000102018266310382663203"
    "400b000020010681610281620205200902000101201f1387757365725f6964089431323334353637383930e001"
    "091d15856576656e7406e0c8612d6d7563682d6c6f6e6765722d76616c75652de0ab130401ca0801ff02810000"
    "01a218868c3f0181000001a218868c3f000000020040644064010170021035b93af8f7b6eaa79e5ac813720afc"
    "d781000001a218868c3f00109ce40cb4fc0536430f1e7ad08a4fe47981000001a218868c3f0102010e00d4c764"
    "c8458bbf84"
)


def test_the_iid_is_redis_own() -> None:
    for pairs, iid in REDIS_IIDS.items():
        fields, values = [list(x) for x in zip(*pairs, strict=True)]
        assert idmp.auto_iid(fields, values).hex() == iid
        assert idmp.auto_iid(fields[::-1], values[::-1]).hex() == iid


def test_a_dump_from_redis_keeps_deduplicating() -> None:
    """Migrated by DUMP/RESTORE, an IDMPAUTO retry of an entry Redis took is still a
    duplicate here (and the IIDs xstream dumps back are Redis's)."""
    e = engine()
    now = 1795707800639 + 50
    assert call(e, "RESTORE", "s", 0, REDIS_DUMP, now=now) == "OK"
    again = call(e, "XADD", "s", "IDMPAUTO", "p", "*", "f2", "b", "f1", "a", now=now)
    assert again == b"1795707800639-0"
    assert ids_of(e) == [b"1795707800639-0", b"1795707800639-1"]
    dumped = call(e, "DUMP", "s", now=now)
    assert isinstance(dumped, bytes)
    for iid in REDIS_IIDS.values():
        assert bytes.fromhex("10" + iid) in dumped
