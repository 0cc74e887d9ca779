"""One primary, two replicas: convergence, resyncs after crashes, the backlog's and the log's
edges."""

from __future__ import annotations

import random
import threading
import time

from conftest import Cluster, Node, poll

from xstream.client import Client, ResponseError


def random_workload(c: Client, rng: random.Random, steps: int) -> None:
    """XADD with `*` and `~` trims, batches, XDEL, XTRIM MINID, and group commands."""
    keys = [f"s{i}" for i in range(4)]
    for k in keys:
        c.xadd(k, {"f": "0"})
        c.xgroup_create(k, "g", id="0")
    ids: dict[str, list[bytes]] = {k: [] for k in keys}
    for step in range(steps):
        k = rng.choice(keys)
        op = rng.random()
        try:
            if op < 0.45:
                fields = {f"f{j}": str(rng.randrange(10**6)) for j in range(rng.randint(1, 3))}
                maxlen = rng.choice([None, None, 50, 200])
                ids[k].append(c.xadd(k, fields, maxlen=maxlen, approximate=True))
            elif op < 0.55:
                n = rng.randint(1, 300)
                c.xadd_many(k, [{"a": str(step), "b": "x" * rng.randint(0, 40)}] * n)
            elif op < 0.62 and ids[k]:
                c.xdel(k, *rng.sample(ids[k], min(3, len(ids[k]))))
            elif op < 0.66 and ids[k]:
                c.xtrim(k, minid=rng.choice(ids[k]), approximate=rng.random() < 0.5)
            elif op < 0.80:
                c.xreadgroup("g", f"c{rng.randrange(3)}", {k: ">"}, count=rng.randint(1, 20))
            elif op < 0.88:
                pending = c.xpending_range(k, "g", "-", "+", 10)
                if pending:
                    c.xack(k, "g", *[p["message_id"] for p in pending[: rng.randint(1, 10)]])
            elif op < 0.94:
                c.xautoclaim(k, "g", f"c{rng.randrange(3)}", 0, count=5)
            elif op < 0.97:
                pending = c.xpending_range(k, "g", "-", "+", 5)
                if pending:
                    c.xclaim(k, "g", "c9", 0, [p["message_id"] for p in pending])
            else:
                c.xgroup_createconsumer(k, "g", f"c{rng.randrange(5)}")
        except ResponseError:
            pass  # e.g. an XDEL'd ID claimed: errors are part of the workload, not of the test


def test_random_workload_converges_on_every_node(cluster: Cluster) -> None:
    p = cluster.primary()
    # Replicas with other node limits than the primary: digests are layout-independent.
    r1 = cluster.replica(p, "--node-max-entries", "7")
    r2 = cluster.replica(p, "--node-max-bytes", "256")
    c = cluster.client(p)
    random_workload(c, random.Random(4), 1500)
    cluster.settled(p, [r1, r2])
    assert p.digest() == r1.digest() == r2.digest()
    reader = cluster.client(r1, decode_responses=True)
    assert reader.xrange("s1", count=50) == cluster.client(p, decode_responses=True).xrange(
        "s1", count=50
    )
    assert p.info().full_syncs == 2  # the replicas' first syncs only


def writer(c: Client, stop: threading.Event, acked: list[bytes], errors: list[Exception]) -> None:
    i = 0
    while not stop.is_set():
        try:
            acked.append(c.xadd("load", {"i": str(i)}))
            if i % 10 == 0:
                c.xadd_many("batch", [{"i": str(i), "j": str(j)} for j in range(50)])
        except Exception as e:
            errors.append(e)
            time.sleep(0.01)
        i += 1


def test_replica_killed_under_load_resumes_with_a_partial_resync(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    stop, acked, errors = threading.Event(), [], []
    t = threading.Thread(target=writer, args=(cluster.client(p), stop, acked, errors))
    t.start()
    try:
        poll("some load", lambda: len(acked) > 200)
        r1.kill()
        before = len(acked)
        poll("load while the replica is down", lambda: len(acked) > before + 200)
        r1.start()
        poll("load after the restart", lambda: len(acked) > before + 400)
    finally:
        stop.set()
        t.join()
    assert not errors
    cluster.settled(p, [r1, r2])
    assert p.digest() == r1.digest() == r2.digest()
    info = r1.info()
    assert (info.full_syncs, info.partial_syncs) == (0, 1)  # counted since its restart
    assert p.info().full_syncs == 2  # only the two first syncs
    assert r1.events("partial_sync") and r1.events("recovered")[-1]["offset"] > 0


def test_a_replica_behind_the_backlog_resumes_from_the_log_on_disk(cluster: Cluster) -> None:
    p = cluster.primary("--backlog-bytes", "4096")
    r1 = cluster.replica(p)
    c = cluster.client(p)
    c.xadd_many("s", [{"f": str(i)} for i in range(100)])
    cluster.settled(p, [r1])
    r1.stop()
    for i in range(50):
        c.xadd_many("s", [{"f": str(i), "pad": "x" * 100}] * 20)  # far past 4 KiB
    r1.start()
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()
    assert (r1.info().full_syncs, p.info().partial_syncs) == (0, 1)
    assert p.events("partial_resync")[-1]["backlog"] > 4096


def test_a_replica_behind_the_last_snapshot_gets_a_full_resync(cluster: Cluster) -> None:
    p = cluster.primary("--backlog-bytes", "4096", "--snapshot-bytes", "8192")
    r1 = cluster.replica(p, "--snapshot-bytes", "2048")
    c = cluster.client(p)
    c.xadd_many("s", [{"f": str(i)} for i in range(100)])
    cluster.settled(p, [r1])
    r1.stop()
    for i in range(50):
        c.xadd_many("s", [{"f": str(i), "pad": "x" * 100}] * 20)  # snapshots past its offset
        c.xadd("other", {"i": str(i)}, maxlen=10, approximate=False)
    r1.start()
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()
    assert r1.info().full_syncs == 1
    assert p.info().full_syncs == 2
    assert p.events("full_resync_progress")
    assert r1.events("full_sync_done")
    # ... and it keeps following with records afterwards.
    c.xadd("s", {"after": "1"})
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()


def test_replica_restart_after_snapshots_and_primary_restart(cluster: Cluster) -> None:
    """Snapshots truncate the log on both sides; a primary restart keeps its replicas
    partial (PSYNC2: the previous replid is still accepted up to where it ended)."""
    p = cluster.primary("--snapshot-bytes", "4096")
    r1 = cluster.replica(p, "--snapshot-bytes", "4096")
    c = cluster.client(p)
    for i in range(30):
        c.xadd_many("s", [{"f": str(i), "pad": "y" * 50}] * 10)
    cluster.settled(p, [r1])
    assert p.events("snapshot_written") and r1.events("snapshot_written")
    p.stop()
    p.start()
    c.xadd("s", {"after": "restart"})
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()
    assert r1.info().full_syncs == 1  # its first sync only
    assert p.info().partial_syncs >= 1


def test_blocking_reads_wake_on_primary_and_replicas(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(p, decode_responses=True)
    c.xadd("s", {"f": "old"}, id="1-1")
    c.xgroup_create("s", "g", id="$")
    results: dict[str, object] = {}

    def read(name: str, node: Node, fn: str) -> None:
        client = cluster.client(node, decode_responses=True)
        t0 = time.monotonic()
        if fn == "xread":
            results[name] = client.xread({"s": "$"}, block=10_000)
        else:
            results[name] = client.xreadgroup("g", "c", {"s": ">"}, block=10_000)
        results[name + "_s"] = time.monotonic() - t0

    threads = [
        threading.Thread(target=read, args=("primary", p, "xread")),
        threading.Thread(target=read, args=("replica", r1, "xread")),
        threading.Thread(target=read, args=("group", p, "xreadgroup")),
    ]
    for t in threads:
        t.start()
    poll("3 readers blocked", lambda: p.info().blocked_clients == 2 and r1.info().blocked_clients)
    c.xadd("s", {"f": "new"}, id="2-1")
    for t in threads:
        t.join(15)
    want = [["s", [("2-1", {"f": "new"})]]]
    assert results["primary"] == results["replica"] == results["group"] == want
    assert all(results[k + "_s"] < 5 for k in ("primary", "replica", "group"))  # type: ignore[operator]
    cluster.settled(p, [r1])
    assert p.digest() == r1.digest()  # the group's delivery replicated too


def test_replica_refuses_writes_naming_the_primary(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    c = cluster.client(r1)
    for call in (
        lambda: c.xadd("s", {"f": "v"}),
        lambda: c.xadd_many("s", [{"f": "v"}]),
        lambda: c.xgroup_create("s", "g", mkstream=True),
    ):
        try:
            call()
        except ResponseError as e:
            assert type(e).__name__ == "ReadOnlyError"
            assert e.line == (
                f"READONLY You can't write against a read only replica. The primary is {p.address}."
            )
        else:
            raise AssertionError("a replica accepted a write")
    assert r1.info().keys == 0
    # Reads are served there, including through read_from="replica".
    cluster.client(p).xadd("s", {"f": "v"}, id="5-5")
    cluster.settled(p, [r1])
    reader = cluster.client(p, read_from="replica", decode_responses=True)
    assert reader.xrange("s") == [("5-5", {"f": "v"})]
    assert reader.xlen("s") == 1
