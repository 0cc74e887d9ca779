"""The primary's lease gate (Primary.lease_until) and the coordinator's view of a node.

A primary under automatic failover acknowledges a write only while its lease deadline lies
ahead: before applying (else READONLY, nothing applied) and again just before the reply
(else LEASELOST: applied here, outcome unknown). These run a Primary in-process on a
temporary store; the etcd side is tested in tests/coord.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from xstream.engine import Engine, StreamError
from xstream.node import epochs
from xstream.node.backlog import Backlog
from xstream.node.refusals import ReadOnlyError
from xstream.node.store import Store
from xstream.primary.primary import Primary
from xstream.server.coordinated import log_epoch
from xstream.v1 import xstream_pb2 as pb

XADD = [b"XADD", b"s", b"*", b"f", b"v"]


def make_primary(tmp_path: Path) -> Primary:
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)  # opens the log segment
    return Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")


def test_manual_mode_never_lapses(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    reply, offset = asyncio.run(p.write(XADD, None))
    assert isinstance(reply, bytes)
    assert offset > 0


def test_lapsed_lease_refuses_before_applying(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    p.lease_until = time.monotonic() - 0.001
    with pytest.raises(StreamError) as e:
        asyncio.run(p.write(XADD, None))
    assert e.value.line.startswith("READONLY You can't write against a primary without a valid")
    assert p.offset == 0
    assert b"s" not in p.engine.keyspace


def test_lease_lapsing_while_waiting_for_acks_is_leaselost(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    p.options.expect_replicas = 2  # quorum = 1 replica, none attached: the wait times out
    p.lease_until = time.monotonic() + 0.05
    concern = pb.WriteConcern(acks=pb.ACKS_QUORUM, timeout_ms=100)
    with pytest.raises(StreamError) as e:
        asyncio.run(p.write(XADD, concern))
    # the ack timeout comes first; past the lease, even an acked write would be LEASELOST
    assert e.value.line.split()[0] in ("ACKTIMEOUT", "LEASELOST")
    p.lease_until = time.monotonic() + 0.05

    async def lapse_then_settle() -> None:
        _, offset = await p.write(XADD, None, settle=False)
        await asyncio.sleep(0.06)
        await p.settle(offset, None)

    with pytest.raises(StreamError) as e:
        asyncio.run(lapse_then_settle())
    assert e.value.line.startswith("LEASELOST write applied on the primary at offset")
    assert p.engine.keyspace  # applied: the outcome is unknown, not undone


def test_pipeline_past_the_lease_applies_nothing(tmp_path: Path) -> None:
    p = make_primary(tmp_path)
    p.lease_until = float("-inf")
    out, _ = asyncio.run(p.pipeline([XADD, [b"XLEN", b"s"], XADD], None))
    assert [type(r) for r in out] == [ReadOnlyError, int, ReadOnlyError]
    assert p.offset == 0


def test_log_epoch_is_the_newest_history_entry_the_log_reaches() -> None:
    h = epochs.history_of([(3, 0), (7, 100), (9, 250)])
    assert log_epoch(h, 0) == 3
    assert log_epoch(h, 99) == 3
    assert log_epoch(h, 100) == 7  # a follower of epoch 7 with no byte of it yet
    assert log_epoch(h, 249) == 7
    assert log_epoch(h, 1000) == 9
    assert log_epoch((), 50) == 0
