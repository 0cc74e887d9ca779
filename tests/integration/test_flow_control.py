"""Flow control (primary/flow.py): a stopped replica holds writes within the window, until its
acks have stalled for the timeout; then it is ignored, and paced again once it caught up.

Observable: the primary's own view of each replica (Info: offset, replicas[].ack_offset) and
its log events (replica_paced, replica_unpaced). No assertion on speed."""

from __future__ import annotations

import threading
import time

import redis
from conftest import Cluster, Node, free_port, poll

from xstream.client import Client

WINDOW = 64 << 10
BATCH = 50  # entries per write: a record of ~2.5 KB, far below the window


def ingest(c: Client, stop: threading.Event, done: list[int]) -> None:
    """Batches of BATCH entries, one call at a time (one write admitted at a time)."""
    i = 0
    while not stop.is_set():
        c.xadd_many("flow", [{"i": str(i), "j": str(j)} for j in range(BATCH)])
        i += 1
        done.append(i)


def behind(p: Node, name: str) -> tuple[int, int]:
    """(the primary's offset, what it knows the replica `name` acked)."""
    info = p.info()
    (r,) = [r for r in info.replicas if r.name == name]
    return info.offset, r.ack_offset


def lag(p: Node, name: str) -> int:
    offset, acked = behind(p, name)
    return offset - acked


def test_stopped_replica_holds_writes_within_the_window_then_is_ignored(
    cluster: Cluster,
) -> None:
    p = cluster.primary("--repl-flow-window", str(WINDOW), "--repl-flow-timeout-ms", "2000")
    r1 = cluster.replica(p, "--name", "slow")
    r2 = cluster.replica(p, "--name", "fine")
    c = cluster.client(p)
    c.xadd_many("flow", [{"i": "1000000", "j": str(j)} for j in range(BATCH)])
    record = p.info().offset  # one write's record (and then some: its numbers are longer)
    stop, done = threading.Event(), list[int]()
    t = threading.Thread(target=ingest, args=(c, stop, done), daemon=True)
    t.start()
    try:
        poll("both replicas paced", lambda: len(p.events("replica_paced")) >= 2)
        r1.pause()
        samples = 0
        while not p.events("replica_unpaced"):
            offset, acked = behind(p, "slow")
            if p.events("replica_unpaced"):
                break  # this sample may be from after the timeout
            # Admitted within the window, then one write's record past it at most.
            assert offset - acked <= WINDOW + record, (offset, acked, record)
            samples += 1
            time.sleep(0.02)
        assert samples > 10, "the replica was unpaced before the writer was held"
        (unpaced,) = p.events("replica_unpaced")
        assert unpaced["replica"] == "slow" and unpaced["timeout_ms"] == 2000
        # Ignored now: the writer goes on past the window while the replica stays stopped.
        poll("writes to go on past the stopped replica", lambda: lag(p, "slow") > 4 * WINDOW)
        r1.resume()
        poll("the replica paced again", lambda: len(p.events("replica_paced")) >= 3)
    finally:
        r1.resume()
        stop.set()
        t.join(30)
    cluster.settled(p, [r1, r2])
    assert p.digest() == r1.digest() == r2.digest()
    assert done, "no write returned"


def test_config_repl_flow(cluster: Cluster) -> None:
    """CONFIG GET/SET repl-flow-window and repl-flow-timeout-ms on a primary; a replica has
    neither (they are not Redis's parameters)."""
    port, rport = free_port(), free_port()
    p = cluster.primary("--resp-port", str(port), "--repl-flow-window", "4096")
    cluster.replica(p, "--resp-port", str(rport))
    c = redis.Redis(port=port)
    try:
        assert c.config_get("repl-flow-*") == {
            "repl-flow-window": "4096",
            "repl-flow-timeout-ms": "500",
        }
        assert c.config_set("repl-flow-window", "2mb")
        assert c.config_set("repl-flow-timeout-ms", "250")
        assert c.config_get("repl-flow-*") == {
            "repl-flow-window": str(2 << 20),
            "repl-flow-timeout-ms": "250",
        }
        for name, bad in (("repl-flow-window", "x"), ("repl-flow-timeout-ms", "0")):
            try:
                c.config_set(name, bad)
            except redis.ResponseError as e:
                assert "CONFIG SET failed" in str(e)
            else:
                raise AssertionError(f"CONFIG SET {name} {bad} was accepted")
        assert c.config_get("repl-flow-window") == {"repl-flow-window": str(2 << 20)}
        assert c.config_set("repl-flow-window", "0")  # off
        assert c.xadd("s", {"f": "v"})
        assert redis.Redis(port=rport).config_get("repl-flow-*") == {}
    finally:
        c.close()
