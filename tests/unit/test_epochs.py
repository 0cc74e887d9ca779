"""The pure epoch decisions (who is followed, who steps down, where a log is cut back) and
the store cutting a log back to such a point."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from xstream.engine import Engine
from xstream.node import epochs, records
from xstream.node.epochs import Entry, EpochState, HelloVerdict, history_of, truncation_point
from xstream.node.store import Store


def h(*pairs: tuple[int, int]) -> epochs.History:
    return history_of(pairs)


def test_history_must_grow() -> None:
    assert h((1, 0), (2, 10), (3, 10)) == (Entry(1, 0), Entry(2, 10), Entry(3, 10))
    with pytest.raises(ValueError):
        h((2, 0), (1, 10))
    with pytest.raises(ValueError):
        h((1, 10), (2, 5))


def test_epoch_at_and_end_offset_for() -> None:
    hist = h((1, 100), (2, 200), (4, 200), (5, 300))
    assert [epochs.epoch_at(hist, x) for x in (0, 99, 100, 199, 200, 299, 300)] == [
        0, 0, 1, 1, 4, 4, 5,
    ]  # fmt: skip
    assert epochs.end_offset_for(hist, 400, 1) == (1, 200)
    assert epochs.end_offset_for(hist, 400, 3) == (2, 200)  # the largest epoch <= 3
    assert epochs.end_offset_for(hist, 400, 9) == (5, 400)  # the last epoch ends at the end
    assert epochs.end_offset_for(hist, 250, 9) == (4, 250)  # entries past the end: ignored
    assert epochs.end_offset_for(hist, 400, 0) == (0, 100)  # pre-epoch bytes


def test_a_deposed_primary_cuts_back_to_where_the_new_epoch_started() -> None:
    # Epoch 1's primary wrote to 150; the new primary (epoch 2) had only 100 of it.
    new = h((1, 0), (2, 100))
    assert truncation_point(new, 180, h((1, 0)), 150) == 100
    # A sibling that followed epoch 1 to 90 keeps everything.
    assert truncation_point(new, 180, h((1, 0)), 90) == 90
    # A replica of the new primary, ahead of nobody, keeps everything.
    assert truncation_point(new, 180, new, 170) == 170


def test_cut_back_over_several_epochs_kip_279() -> None:
    # The follower led epoch 3 (from 150) without knowing epoch 2 (from 100 elsewhere).
    leader = h((1, 0), (2, 100))
    follower = h((1, 0), (3, 150))
    assert truncation_point(leader, 200, follower, 180) == 100
    assert truncation_point(h((1, 0)), 0, h((1, 0)), 50) == 0  # an empty leader


def _first_difference(a: epochs.History, a_end: int, b: epochs.History, b_end: int) -> int:
    """The oracle: the first offset the two logs assign to different epochs."""
    limit = min(a_end, b_end)
    for x in range(limit):
        if epochs.epoch_at(a, x) != epochs.epoch_at(b, x):
            return x
    return limit


def _random_run(rng: random.Random) -> tuple[epochs.History, int, epochs.History, int]:
    """Two nodes of one cluster's random past: each epoch's primary took over some node's log
    at some point and wrote on; any node may have followed any primary part of the way."""
    logs = [(h((1, 0)), rng.randint(0, 30))]  # (history, end) of each epoch's primary
    for epoch in range(2, rng.randint(2, 7)):
        hist, end = rng.choice(logs)
        at = rng.randint(0, end)  # the new primary had followed that one up to here
        logs.append(((*epochs.clip(hist, at), Entry(epoch, at)), at + rng.randint(0, 30)))
    nodes = [(hist, rng.randint(0, end)) for hist, end in logs] + logs
    (a, a_end), (b, b_end) = rng.choice(nodes), rng.choice(nodes)
    return a, a_end, b, b_end


def test_truncation_point_matches_the_first_epoch_difference() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        leader, leader_end, follower, end = _random_run(rng)
        want = _first_difference(leader, leader_end, follower, end)
        assert truncation_point(leader, leader_end, follower, end) == want, (
            leader, leader_end, follower, end,
        )  # fmt: skip


def test_promotion_takes_a_higher_epoch_and_records_where_it_starts() -> None:
    replica = EpochState(2, 1, h((1, 0), (2, 100), (3, 500)))  # (3, 500): not held yet
    p = replica.promoted(300)
    assert p == EpochState(3, 3, h((1, 0), (2, 100), (3, 300)))
    assert not p.deposed
    assert replica.promoted(300, 7).history[-1] == Entry(7, 300)
    with pytest.raises(ValueError):
        replica.promoted(300, 2)  # not above the current epoch


def test_a_primary_starts_in_its_epoch_or_deposed() -> None:
    assert EpochState().started(40) == EpochState(1, 1, h((1, 40)))  # a new cluster
    restarted = EpochState(3, 3, h((1, 0), (3, 9)))
    assert restarted.started(50) is restarted
    assert EpochState(3, 1, h((1, 0), (3, 9))).started(50).deposed  # was not its primary


def test_a_replica_refuses_a_lower_epoch() -> None:
    assert epochs.accepts_primary(2, 2)
    assert epochs.accepts_primary(2, 3)
    assert not epochs.accepts_primary(2, 1)
    assert not epochs.accepts_primary(2, 0)  # a primary older than epochs


def test_a_primary_steps_down_on_a_higher_hello() -> None:
    primary = EpochState(2, 2, h((1, 0), (2, 10)))
    assert epochs.on_hello(primary, 0) is HelloVerdict.SERVE
    assert epochs.on_hello(primary, 2) is HelloVerdict.SERVE
    assert epochs.on_hello(primary, 3) is HelloVerdict.STEP_DOWN
    deposed = primary.seen(3)
    assert deposed.deposed and deposed.epoch == 3 and deposed.leader_epoch == 2
    assert epochs.on_hello(deposed, 1) is HelloVerdict.REFUSE
    assert primary.seen(1) is primary


def test_clients_ahead_of_a_primary() -> None:
    primary = EpochState(2, 2, h((2, 0)))
    assert not epochs.client_ahead(primary, 0)  # no epoch sent
    assert not epochs.client_ahead(primary, 2)
    assert epochs.client_ahead(primary, 3)


def test_a_replica_adopts_its_primarys_history() -> None:
    mine = EpochState(1, 1, h((1, 0)))
    adopted = mine.adopted(2, h((1, 0), (2, 100)))
    assert adopted == EpochState(2, 1, h((1, 0), (2, 100)))


# ---------------------------------------------------------------- acting on a truncation point


def _xadd(engine: Engine, store: Store, i: int) -> int:
    effects = engine.execute([b"XADD", b"s", f"{i}-1".encode(), b"i", str(i).encode()], 0).effects
    store.append(records.encode(effects))
    return store.written


def test_a_log_cut_back_across_segments_rebuilds_the_state_at_that_point(tmp_path: Path) -> None:
    store, engine = Store(tmp_path / "n", "no"), Engine()
    store.recover(engine, engine.apply_record)
    ends = [_xadd(engine, store, i) for i in range(1, 6)]
    snap = store.begin_snapshot(engine, {})  # a new segment from here
    store.finish_snapshot(snap)
    ends += [_xadd(engine, store, i) for i in range(6, 9)]
    store.begin_snapshot(engine, {})  # a third segment; its snapshot never finished
    ends += [_xadd(engine, store, i) for i in range(9, 11)]

    with pytest.raises(ValueError):
        store.cut_back(ends[2])  # before the snapshot: a full sync is needed instead
    store.cut_back(ends[6])  # inside the second segment: the third goes aside whole
    fresh = Engine()
    rec = store.recover(fresh, fresh.apply_record)
    assert rec.offset == store.written == ends[6]
    assert fresh.execute([b"XLEN", b"s"], 0).reply == 7
    assert len(list(store.dir.glob("aof-*.diverged-*"))) == 2
    assert _xadd(fresh, store, 99) > ends[6]  # appending continues at the cut
