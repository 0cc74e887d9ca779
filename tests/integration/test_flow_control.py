"""Flow control (primary/flow.py): a stopped replica holds writes once it lags the window,
until its acks have stalled for the timeout; then it is ignored, and paced again once it
caught up.

Observable: the primary's offset and its log events (replica_paced, replica_unpaced). No
assertion on speed."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from conftest import Cluster, free_port, poll

from xstream.client import Client

LAG_MS = 100
TIMEOUT_MS = 2000


def ingest(c: Client, stop: threading.Event, done: list[int]) -> None:
    """Batches of 50 entries, one call at a time."""
    i = 0
    while not stop.is_set():
        c.xadd_many("flow", [{"i": str(i), "j": str(j)} for j in range(50)])
        i += 1
        done.append(i)


def test_stopped_replica_holds_writes_then_is_ignored(cluster: Cluster) -> None:
    p = cluster.primary("--repl-flow-lag-ms", str(LAG_MS), "--repl-flow-timeout-ms",
                        str(TIMEOUT_MS))  # fmt: skip
    r1 = cluster.replica(p, "--name", "slow")
    r2 = cluster.replica(p, "--name", "fine")
    stop, done = threading.Event(), list[int]()
    t = threading.Thread(target=ingest, args=(cluster.client(p), stop, done), daemon=True)
    t.start()
    try:
        poll("both replicas paced", lambda: len(p.events("replica_paced")) >= 2)
        poll("writes", lambda: len(done) > 5)
        r1.pause()
        paused = time.monotonic()
        samples: list[tuple[float, int]] = []  # (time, the primary's offset) while paced
        while not p.events("replica_unpaced"):
            offset = p.info().offset
            if p.events("replica_unpaced"):
                break  # this offset may be from after the timeout
            samples.append((time.monotonic(), offset))
            if time.monotonic() - paused > TIMEOUT_MS / 1000 + 30:
                pytest.fail(f"the stopped replica was never unpaced; offsets {samples[-5:]}")
            time.sleep(0.02)
        (unpaced,) = p.events("replica_unpaced")
        assert unpaced["replica"] == "slow" and unpaced["timeout_ms"] == TIMEOUT_MS
        # Held: the offset stood still from some point on until the timeout let writes go.
        last = samples[-1][1]
        held_from = min(t for t, off in samples if off == last)
        assert samples[-1][0] - held_from >= TIMEOUT_MS / 2000, (held_from - paused, samples)
        # Ignored now: the writer goes on past the stopped replica.
        poll("writes to go on past the stopped replica", lambda: p.info().offset > last)
        r1.resume()
        poll("the replica paced again", lambda: len(p.events("replica_paced")) >= 3)
    finally:
        r1.resume()
        stop.set()
        t.join(30)
    cluster.settled(p, [r1, r2])
    assert p.digest() == r1.digest() == r2.digest()


def test_config_repl_flow(cluster: Cluster) -> None:
    """CONFIG GET/SET repl-flow-lag-ms and repl-flow-timeout-ms on a primary; a replica has
    neither (they are not Redis's parameters)."""
    port, rport = free_port(), free_port()
    p = cluster.primary("--resp-port", str(port), "--repl-flow-lag-ms", "250")
    cluster.replica(p, "--resp-port", str(rport))
    c = redis.Redis(port=port)
    try:
        assert c.config_get("repl-flow-*") == {
            "repl-flow-lag-ms": "250",
            "repl-flow-timeout-ms": "500",
        }
        assert c.config_set("repl-flow-lag-ms", "50")
        assert c.config_set("repl-flow-timeout-ms", "1500")
        assert c.config_get("repl-flow-*") == {
            "repl-flow-lag-ms": "50",
            "repl-flow-timeout-ms": "1500",
        }
        bad_values = [("repl-flow-lag-ms", "x"), ("repl-flow-lag-ms", "-1")]
        for name, bad in [*bad_values, ("repl-flow-timeout-ms", "0")]:
            try:
                c.config_set(name, bad)
            except redis.ResponseError as e:
                assert "CONFIG SET failed" in str(e)
            else:
                raise AssertionError(f"CONFIG SET {name} {bad} was accepted")
        assert c.config_get("repl-flow-lag-ms") == {"repl-flow-lag-ms": "50"}
        assert c.config_set("repl-flow-lag-ms", "0")  # off
        assert c.xadd("s", {"f": "v"})
        assert redis.Redis(port=rport).config_get("repl-flow-*") == {}
    finally:
        c.close()
