"""Crashes and the append-only file: acked writes survive kill -9, torn tails are cut whole."""

from __future__ import annotations

import threading

from conftest import Cluster, poll

from xstream.client import Client, ConnectionError, ResponseError


def test_every_acknowledged_write_survives_kill9_with_fsync_always(cluster: Cluster) -> None:
    p = cluster.primary("--fsync", "always")
    acked: list[tuple[bytes, str]] = []
    stop = threading.Event()

    def write(c: Client, k: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                acked.append((c.xadd(f"s{k}", {"w": f"{k}-{i}"}), f"{k}-{i}"))
            except (ConnectionError, ResponseError):
                return
            i += 1

    threads = [
        threading.Thread(target=write, args=(cluster.client(p, retries=0), k)) for k in (0, 1)
    ]
    for t in threads:
        t.start()
    poll("acked writes", lambda: len(acked) > 300)
    p.kill()
    stop.set()
    for t in threads:
        t.join(10)
    p.start()
    c = cluster.client(p, decode_responses=True)
    present = {eid for k in (0, 1) for eid, _ in c.xrange(f"s{k}")}
    lost = [(i.decode(), v) for i, v in acked if i.decode() not in present]
    assert not lost, f"{len(lost)} acknowledged writes lost: {lost[:5]}"
    assert p.events("recovered")[-1]["records"] >= len(acked)


def _segment(node_dir):  # the newest log segment
    return sorted(node_dir.glob("aof-*.xlog"))[-1]


def test_a_torn_tail_is_cut_and_reported_never_applied_half(cluster: Cluster) -> None:
    p = cluster.primary("--fsync", "always")
    c = cluster.client(p)
    c.xadd_many("s", [{"f": str(i)} for i in range(10)])
    c.xadd_many("s", [{"g": str(i)} for i in range(100)])  # the last record: 100 entries
    p.stop()
    seg = _segment(p.data_dir)
    data = seg.read_bytes()
    seg.write_bytes(data[:-37])  # torn inside the last record
    p.start()
    assert c.xlen("s") == 10  # all of the first batch, none of the torn one
    (cut,) = p.events("aof_tail_cut")
    assert cut["cut_bytes"] == len(data) - 37 - cut["at"]
    assert "torn tail" in cut["reason"]
    assert (p.data_dir / cut["kept"]).exists()  # the cut bytes are kept aside
    c.xadd("s", {"after": "cut"})  # and the log goes on from the cut
    p.stop()
    p.start()
    assert c.xlen("s") == 11


def test_a_corrupt_record_is_cut_by_its_checksum(cluster: Cluster) -> None:
    p = cluster.primary()
    c = cluster.client(p)
    for i in range(5):
        c.xadd("s", {"f": str(i)})
    p.stop()
    seg = _segment(p.data_dir)
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF  # a flipped bit in the last record's payload
    seg.write_bytes(bytes(data))
    p.start()
    assert c.xlen("s") == 4
    (cut,) = p.events("aof_tail_cut")
    assert "checksum" in cut["reason"]


def test_acks_quorum_times_out_when_replicas_are_down(cluster: Cluster) -> None:
    p = cluster.primary("--expect-replicas", "2")
    r1 = cluster.replica(p)
    r2 = cluster.replica(p)
    quorum = cluster.client(p, acks="quorum", acks_timeout_ms=300)
    every = cluster.client(p, acks="all", acks_timeout_ms=300)
    assert quorum.xadd("s", {"f": "1"}, id="1-1") == b"1-1"
    assert every.xadd("s", {"f": "2"}, id="2-1") == b"2-1"
    r2.stop()
    assert quorum.xadd("s", {"f": "3"}, id="3-1") == b"3-1"  # 1 of 2 replicas is a quorum of 3
    try:
        every.xadd("s", {"f": "4"}, id="4-1")
    except ResponseError as e:
        assert type(e).__name__ == "AckTimeoutError"
        assert "acknowledged by 1 of 2 required replicas within 300 ms" in str(e)
    else:
        raise AssertionError("acks=all succeeded with a replica down")
    r1.stop()
    try:
        quorum.xadd("s", {"f": "5"}, id="5-1")
    except ResponseError as e:
        assert str(e).startswith("ACKTIMEOUT write applied on the primary at offset ")
        assert "acknowledged by 0 of 1 required replicas within 300 ms" in str(e)
    else:
        raise AssertionError("acks=quorum succeeded with both replicas down")
    # Never reported as replicated: WAIT counts no replica for it.
    assert quorum.wait(1, 100) == 0
    # The write is on the primary (it cannot be taken back), and reaches replicas later.
    assert quorum.xlen("s") == 5
    r1.start()
    cluster.settled(p, [r1])
    assert quorum.wait(1, 1000) == 1
    assert p.digest() == r1.digest()


def test_min_replicas_to_write_refuses_writes_without_good_replicas(cluster: Cluster) -> None:
    p = cluster.primary("--min-replicas-to-write", "1", "--min-replicas-max-lag", "2")
    c = cluster.client(p)
    try:
        c.xadd("s", {"f": "v"})
    except ResponseError as e:
        assert str(e) == "NOREPLICAS Not enough good replicas to write."
    else:
        raise AssertionError("a write was accepted without replicas")
    r1 = cluster.replica(p)
    poll("the replica's first ack", lambda: p.info().replicas[0].state == "online")
    assert c.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    assert c.xlen("s") == 1
    cluster.settled(p, [r1])
