"""Drill 5: a consumer group across a failover.

    run = groups_failover(Drill(cluster, history, key="drill"))
    run.notes["redelivered_acked"] == []   and   run.notes["groups_agree"]

A consumer reads the drill's stream with `XREADGROUP GROUP g c1 ... >` and XACKs part of each
batch (acks=quorum) while the writers write; the primary is killed; the consumer goes on
against the new primary. `>` must never hand out again an entry delivered (and acked) before
the failover, and the consumer's own PEL (`XREADGROUP ... 0`) must not hold an acked entry.
Once the cluster settles, every node must report the same group state: XINFO GROUPS (pending,
last-delivered-id, entries-read, lag) and the PEL (XPENDING, idle times left out: they depend
on when each node is asked).

Invariant: the consumer counts only what replies showed it. A read whose outcome is unknown
may have delivered entries it never saw; those stay in its PEL and are never `>` again, which
is allowed.
"""

from __future__ import annotations

import time
from typing import Any

from . import rpc
from .harness import Cluster, DrillError
from .scenarios import RECOVER_S, Drill, Run, begin, conclude, failed_over, new_primary, warm
from .writers import AttemptError, Sender

GROUP = "g"
CONSUMER = "c1"
BATCH = 10  # entries per XREADGROUP
ACK_PART = 6  # of each batch, how many are XACKed (the rest stays pending)


class Consumer:
    def __init__(self, cluster: Cluster, key: str) -> None:
        self.sender = Sender(cluster)  # fails over, acks=quorum
        self.key = key.encode()
        self.delivered: list[str] = []  # IDs `>` handed out, in order, before and after
        self.acked: set[str] = set()  # IDs whose XACK answered at quorum

    def _until_ok(self, argv: list[bytes], what: str) -> Any:
        """Send until an attempt answers (for commands safe to repeat); the reply."""
        deadline, last = time.monotonic() + RECOVER_S, ""
        while time.monotonic() < deadline:
            try:
                return self.sender.send(argv, "quorum")[0]
            except AttemptError as e:
                if e.error.startswith("BUSYGROUP"):  # an earlier attempt created it
                    return None
                last = e.error
                time.sleep(0.1)
        raise DrillError(f"{what} did not succeed in {RECOVER_S} s (last error: {last})")

    def create(self) -> None:
        argv = [b"XGROUP", b"CREATE", self.key, GROUP.encode(), b"0", b"MKSTREAM"]
        self._until_ok(argv, "XGROUP CREATE")

    def read(self, count: int = BATCH) -> list[str]:
        """One `>` read (a single attempt: repeating it could deliver other entries)."""
        argv = [b"XREADGROUP", b"GROUP", GROUP.encode(), CONSUMER.encode(), b"COUNT"]
        argv += [str(count).encode(), b"STREAMS", self.key, b">"]
        try:
            reply = self.sender.send(argv, "quorum")[0]
        except AttemptError:
            return []
        ids = entry_ids(reply)
        self.delivered += ids
        return ids

    def ack(self, ids: list[str]) -> None:
        if ids:
            argv = [b"XACK", self.key, GROUP.encode(), *(i.encode() for i in ids)]
            self._until_ok(argv, "XACK")
            self.acked |= set(ids)

    def pending(self, cluster: Cluster, node: str) -> list[str]:
        """The consumer's own PEL as node `node` hands it out (`XREADGROUP ... 0`, a read
        only of the PEL; sent to the primary, which is the only node that serves it)."""
        argv = [b"XREADGROUP", b"GROUP", GROUP.encode(), CONSUMER.encode(), b"STREAMS"]
        argv += [self.key, b"0"]
        return entry_ids(rpc.execute(cluster.channel(node), argv, acks="quorum").value)

    def close(self) -> None:
        self.sender.close()


def entry_ids(reply: Any) -> list[str]:
    """The entry IDs of an XREAD-shaped reply ([[key, [[id, fields], ...]], ...] or null)."""
    if not isinstance(reply, list):
        return []
    return [e[0].decode() for _, entries in reply for e in entries]


def group_state(cluster: Cluster, node: str, key: str) -> dict[str, Any]:
    """Node `node`'s view of the group: XINFO GROUPS, and its PEL without idle times."""
    ch = cluster.channel(node)
    k = key.encode()
    groups = rpc.execute(ch, [b"XINFO", b"GROUPS", k]).value
    summary = rpc.execute(ch, [b"XPENDING", k, GROUP.encode()]).value
    pel = rpc.execute(ch, [b"XPENDING", k, GROUP.encode(), b"-", b"+", b"100000"]).value
    assert isinstance(pel, list), pel
    rows = [(row[0], row[1], row[3]) for row in pel]
    return {"groups": repr(groups), "pending": repr(summary), "pel": rows}


def groups_failover(d: Drill) -> Run:
    c, run = d.cluster, begin(d, "groups")
    old = run.old_primary
    consumer = Consumer(c, d.key)
    try:
        consumer.create()
        with d.writers() as ws:
            warm(d, ws)
            for _ in range(3):
                consumer.ack(consumer.read()[:ACK_PART])
            delivered_before, acked_before = set(consumer.delivered), set(consumer.acked)
            fault_at = time.monotonic()
            run.faulted.append(old)
            c.kill(old)
            run.new_primary = new_primary(c, old)
            failed_over(d, run, fault_at, old, run.new_primary)
            after = _read_after(consumer, 3 * BATCH)
            consumer.ack(after[:-4])
        own_pel = consumer.pending(c, run.new_primary)
    finally:
        consumer.close()
    c.restart(old)
    run = conclude(d, run)
    states = {n: group_state(c, n, d.key) for n in c.nodes}
    run.notes["delivered_before"] = len(delivered_before)
    run.notes["acked_before"] = len(acked_before)
    run.notes["delivered_after"] = len(after)
    run.notes["redelivered"] = [i for i in after if i in delivered_before]
    run.notes["redelivered_acked"] = [i for i in after if i in acked_before]
    run.notes["acked_in_pel"] = [i for i in own_pel if i in consumer.acked]
    run.notes["group_states"] = states
    run.notes["groups_agree"] = all(s == states[old] for s in states.values())
    return run


def _read_after(consumer: Consumer, want: int) -> list[str]:
    """`>` reads after the failover until `want` entries came (bounded)."""
    deadline, got = time.monotonic() + RECOVER_S, list[str]()
    while len(got) < want:
        if time.monotonic() > deadline:
            raise DrillError(f"the consumer got {len(got)} of {want} entries after the failover")
        got += consumer.read()
        time.sleep(0.05)
    return got
