"""The nodes' garbage-collector policy (xstream/node/collector.py): once a state is in place
(a primary's recovered state, a replica's link following, a full sync installed) it is frozen
out of collections and young collections are rare; a state dropped since the last settle is
collected at the next."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from xstream.engine import Engine, snapshot
from xstream.node import collector, epochs
from xstream.node.store import Store
from xstream.replica.replica import Replica


@pytest.fixture(autouse=True)
def _restored_gc() -> Iterator[None]:
    """Each test leaves the process's collector as it found it."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def _replica(directory: Path) -> Replica:
    store = Store(directory, "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    return Replica(engine, store, 0, "r", "", "127.0.0.1:1")


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_settle_freezes_what_lives_and_makes_young_collections_rare() -> None:
    middle_old = gc.get_threshold()[1:]
    collector.settle()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, *middle_old)


def test_a_cycle_frozen_then_dropped_is_collected_at_the_next_settle() -> None:
    cycle = _Cycle()
    alive = weakref.ref(cycle)
    collector.settle()
    del cycle
    gc.collect()  # a frozen object is never walked: the cycle outlives this collection
    assert alive() is not None
    collector.settle()  # unfrozen first: the cycle is garbage now
    assert alive() is None


def test_a_replica_settles_once_its_link_sent_the_first_hello(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.linking()
    assert gc.get_freeze_count() == 0  # not before the Hello leaves
    r.hello_sent()
    assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
    gc.unfreeze()
    r.hello_sent()  # a reconnection's Hello: settled already since linking
    assert gc.get_freeze_count() == 0
    r.linking()
    r.hello_sent()
    assert gc.get_freeze_count() > 0


def test_a_replica_settles_once_a_full_sync_is_installed(tmp_path: Path) -> None:
    primary = Engine()
    primary.execute([b"XADD", b"s", b"1-0", b"f", b"v"])
    r = _replica(tmp_path)
    r.on_full_sync("x" * 40, 10, 0, epochs.history_of([]), b"", 0)
    for piece in snapshot.dump_chunks(primary, chunk_size=4096):
        r.on_snapshot_piece(piece)
    assert gc.get_freeze_count() == 0
    r.on_snapshot()
    assert gc.get_freeze_count() > 0 and r.engine.digest() == primary.digest()


def test_settle_without_dropped_walks_only_what_is_not_frozen() -> None:
    cycle = _Cycle()
    alive = weakref.ref(cycle)
    collector.settle()
    del cycle
    young = _Cycle()
    collector.settle(dropped=False)  # nothing frozen was let go, says the caller: not walked
    # the frozen cycle was not collected; the young one is frozen now (gc.get_objects lists
    # the three generations, not the frozen objects). Not the freeze count: frozen objects
    # freed by their count meanwhile (pytest's own) can cancel the young ones it adds.
    assert alive() is not None
    assert all(o is not young for o in gc.get_objects())
    del young


def _full_sync(r: Replica, primary: Engine) -> None:
    r.on_full_sync("x" * 40, 10, 0, epochs.history_of([]), b"", 0)
    for piece in snapshot.dump_chunks(primary, chunk_size=4096):
        r.on_snapshot_piece(piece)
    r.on_snapshot()


@pytest.mark.parametrize("keys", [0, 1])
def test_a_full_sync_unfreezes_only_when_it_replaced_keys(
    tmp_path: Path, keys: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary = Engine()
    primary.execute([b"XADD", b"s", b"1-0", b"f", b"v"])
    r = _replica(tmp_path)
    for i in range(keys):
        r.engine.execute([b"XADD", b"old%d" % i, b"1-0", b"f", b"v"])
    r.linking()
    r.hello_sent()
    unfrozen: list[None] = []
    real = gc.unfreeze

    def counted() -> None:
        unfrozen.append(None)
        real()

    monkeypatch.setattr(gc, "unfreeze", counted)
    _full_sync(r, primary)
    assert len(unfrozen) == keys and r.engine.digest() == primary.digest()
    assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD


def test_a_primary_settles_its_recovered_state_before_serving(tmp_path: Path) -> None:
    from xstream.server.config import NodeConfig  # noqa: PLC0415 (the server floor: this test only)
    from xstream.server.runner import start_primary  # noqa: PLC0415

    gc.set_threshold(700, 10, 10)

    async def started() -> tuple[tuple[int, int, int], int]:
        running = await start_primary(NodeConfig("primary", port=0, data_dir=tmp_path))
        try:
            return gc.get_threshold(), gc.get_freeze_count()
        finally:
            await running.stop(grace=0)

    threshold, frozen = asyncio.run(started())
    assert threshold[0] == collector.YOUNG_THRESHOLD and frozen > 0
