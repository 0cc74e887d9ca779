"""XADD IDMPAUTO: the idempotent ID is computed from the entry's field/value pairs, whatever
their order (Redis 8.6+), and ships as an explicit IID so replicas never recompute it."""

from __future__ import annotations

from enginecalls import call, effects, engine, ids_of

from xstream.engine import Engine


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
