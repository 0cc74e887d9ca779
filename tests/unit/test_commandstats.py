"""INFO commandstats: every command the node runs counts under its Redis name (a subcommand
as `xinfo|stream`): calls and time, `failed_calls` when it answered an error, and
`rejected_calls` (not a call) when it was refused before running, as a wrong arity is; the
section is not part of the default INFO, and CONFIG RESETSTAT clears it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from xstream.engine import Engine, StreamError
from xstream.node.backlog import Backlog
from xstream.node.stats import STATS
from xstream.node.store import Store
from xstream.primary.primary import Primary


def _stats(p: Primary, *sections: bytes) -> str:
    reply, _ = asyncio.run(p.execute([b"INFO", *sections]))
    assert isinstance(reply, bytes)
    return reply.decode()


def test_calls_failures_and_rejections(tmp_path: Path) -> None:
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    p = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    STATS.reset()
    for argv in ([b"XADD", b"s", b"*", b"f", b"v"], [b"XADD", b"s", b"*", b"f", b"w"]):
        asyncio.run(p.execute(argv))
    asyncio.run(p.execute([b"SET", b"str", b"x"]))
    with pytest.raises(StreamError):
        asyncio.run(p.execute([b"XADD", b"str", b"*", b"f", b"v"]))  # WRONGTYPE: ran, failed
    with pytest.raises(StreamError):
        asyncio.run(p.execute([b"XLEN"]))  # wrong arity: rejected before running
    asyncio.run(p.execute([b"XINFO", b"STREAM", b"s"]))
    text = _stats(p, b"commandstats")
    assert text.startswith("# Commandstats\r\n")
    stats = dict(re.findall(r"cmdstat_([^:]+):(.*)\r\n", text))
    assert re.fullmatch(r"calls=3,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1",
                        stats["xadd"])  # fmt: skip
    assert stats["xlen"].startswith("calls=0,") and "rejected_calls=1," in stats["xlen"]
    assert stats["xinfo|stream"].startswith("calls=1,")
    assert "Commandstats" not in _stats(p)  # not a default section
    assert "Commandstats" in _stats(p, b"all")
    asyncio.run(p.execute([b"CONFIG", b"RESETSTAT"]))
    assert "cmdstat_xadd" not in _stats(p, b"commandstats")


def test_a_history_read_ships_its_effects_but_is_no_change_for_info(tmp_path: Path) -> None:
    """Redis does not count (nor propagate) a consumer's history read; xstream ships its
    delivery-count effects to keep replicas exact, and INFO counts it as Redis does."""
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    p = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    for i in range(1, 5):
        asyncio.run(p.execute([b"XADD", b"x", b"%d-0" % i, b"data", b"v"]))
    asyncio.run(p.execute([b"XGROUP", b"CREATE", b"x", b"g1", b"0"]))
    asyncio.run(p.execute([b"XGROUP", b"CREATECONSUMER", b"x", b"g1", b"Alice"]))
    read = [b"XREADGROUP", b"GROUP", b"g1", b"Alice", b"COUNT", b"2", b"STREAMS", b"x"]
    asyncio.run(p.execute([*read, b">"]))
    dirty, offset = STATS.changes_since_save, p.offset
    asyncio.run(p.execute([*read, b"0"]))
    assert STATS.changes_since_save == dirty
    assert p.offset > offset  # the delivery counts were still logged and shipped
    asyncio.run(p.execute([*read[:3], b"Bob", *read[4:], b"0"]))  # a new consumer: a change
    assert STATS.changes_since_save == dirty + 1


def test_batched_writes_and_exec_count_each_command(tmp_path: Path) -> None:
    """A pipeline's run of writes (write_batch) and EXEC count every command they ran, as
    Redis counts each command of a pipeline and of a transaction."""
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    p = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    STATS.reset()
    batch = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(5)]
    asyncio.run(p.write_batch([*batch, [b"XDEL", b"s", b"1-0"]], None))
    asyncio.run(p.transaction([[b"XLEN", b"s"], [b"XADD", b"s", b"*", b"f", b"v"]], None))
    stats = dict(re.findall(r"cmdstat_([^:]+):(.*)\r\n", _stats(p, b"commandstats")))
    assert stats["xadd"].startswith("calls=6,")
    assert stats["xdel"].startswith("calls=1,") and stats["xlen"].startswith("calls=1,")


def test_a_batch_of_one_command_counts_each_however_spelt(tmp_path: Path) -> None:
    """A batch that is one run of XADDs (counted without a look at each head, Batch.count)
    and one whose XADDs are spelt in two ways count the same, under `xadd`."""
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    p = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    STATS.reset()
    alike = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(4)]
    assert len(p.write_batch_now(alike)) == 4
    spelt = [[b"xadd" if i % 2 else b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(3)]
    assert len(p.write_batch_now(spelt)) == 3
    stats = dict(re.findall(r"cmdstat_([^:]+):(.*)\r\n", _stats(p, b"commandstats")))
    assert list(stats) == ["xadd"] and stats["xadd"].startswith("calls=7,")


def test_prometheus_reads_the_same_counts(tmp_path: Path) -> None:
    """xstream_commands_total and xstream_errors_total are INFO's counts, not a second tally."""
    from prometheus_client import generate_latest  # noqa: PLC0415

    from xstream.node.metrics import METRICS  # noqa: PLC0415

    METRICS.enable()  # as serving them does (--metrics-port)
    store = Store(tmp_path / "data", "everysec")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    p = Primary(engine, store, Backlog(1 << 20), {"replid": "r" * 40}, "p")
    STATS.reset()
    asyncio.run(p.execute([b"XADD", b"s", b"*", b"f", b"v"]))
    STATS.error("WRONGTYPE Operation against a key holding the wrong kind of value")
    assert METRICS.registry is not None
    body = generate_latest(METRICS.registry).decode()
    assert 'xstream_commands_total{command="xadd"} 1.0' in body
    assert 'xstream_errors_total{prefix="WRONGTYPE"} 1.0' in body
