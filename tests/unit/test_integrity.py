"""check_integrity catches broken structure, and node sizes beyond the engine's limits."""

from __future__ import annotations

import pytest

from xstream.engine import Engine, EngineConfig, snapshot
from xstream.engine.digest import check_node_limits


def _filled(config: EngineConfig) -> Engine:
    e = Engine(config)
    for i in range(1, 400):
        e.execute([b"XADD", b"s", b"%d-0" % i, b"field", b"v" * (i % 37), b"n", b"%d" % i])
    e.execute([b"XDEL", b"s", b"5-0", b"77-0"])
    return e


@pytest.mark.parametrize("limits", [(4096, 100), (200, 5), (0, 7), (150, 0)])
def test_nodes_respect_the_limits_they_were_built_under(limits: tuple[int, int]) -> None:
    e = _filled(EngineConfig(*limits))
    e.check_integrity()
    stream = e.keyspace.stream(b"s")
    assert stream is not None
    with pytest.raises(AssertionError, match="entries"):
        check_node_limits(stream, 0, 3)
    with pytest.raises(AssertionError, match="overfilled"):
        check_node_limits(stream, 120, 0)


def test_restored_nodes_are_not_held_to_the_new_engines_limits() -> None:
    small = Engine(EngineConfig(100, 2))
    snapshot.restore(small, snapshot.dump(_filled(EngineConfig())))
    small.check_integrity()
    small.execute([b"XADD", b"s", b"1000-0", b"f", b"v"])
    small.check_integrity()


def test_a_corrupted_counter_is_caught() -> None:
    e = _filled(EngineConfig(200, 5))
    stream = e.keyspace.stream(b"s")
    assert stream is not None
    _, lp = next(iter(stream.nodes()))
    lp[6] += 1  # the master entry's live counter (a 7-bit integer element)
    with pytest.raises(AssertionError, match="live counter"):
        e.check_integrity()
