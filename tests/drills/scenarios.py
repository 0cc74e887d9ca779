"""The failover drills as plain functions: a fault under concurrent writers, then the fault is
healed, the cluster awaited until every node agrees, and the history checked.

    primary = start_nodes(cluster)             # etcd + n1..n3, settled on one primary
    run = kill_primary(Drill(cluster, History(), key="drill"))
    run.report.passed, run.recovery_s, run.notes[...]

Each scenario starts from a settled cluster (one primary, every other node its linked replica
at its offset) and leaves one: whatever it killed is restarted, paused unpaused, partitioned
healed. It asserts nothing about the system under test (the pytest drills and the soak do,
from `Run`); it raises DrillError only when a bounded wait runs out, naming what it awaited
and the nodes' states. Recovery time: from the fault to the first quorum-acked write
answered by another node than the one faulted, as the writers saw it (so it includes their
deadlines and rediscovery); promotion time: from the fault to the new primary's `promoted`
log line (the same host clock), the server side of it.

Writers are named `<prefix><role>`: `q` (fails over, acks=quorum), `l` (fails over,
acks=leader), `c` (the product Client with failover, acks=quorum), `pin` and `pinq` (stay
with the old primary, acks=leader and acks=quorum). Each drill writes its own stream
(`Drill.key`).

Disk faults (README: "Damage is not a torn tail", "Disk full, I/O errors"): `disk-full` and
`eio` break the primary's disk under load; it must refuse writes with MISCONF (note
`misconf`: the ops of the writer pinned to it refused so; none is a violation), hand over to
a replica holding its log, and resume once the disk works again. `corrupt` kills the
primary, flips a byte in the middle of its log and restarts it: it must set the damage aside
and resync from the new primary (notes `damage_set_aside`, `damage_healed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from xstream.client import Client

from .checker import Report, check, disagreements
from .harness import PORT, Cluster, DrillError, poll
from .history import History, Op
from .writers import WRITE_TIMEOUT, ClientSender, Sender, Writer, Writers

LEASE_TTL = 2  # s, the nodes' etcd lease (--lease-ttl)
NODES = ("n1", "n2", "n3")
NODE_ARGS = ("--lease-ttl", str(LEASE_TTL), "--expect-replicas", "2")
ELECT_S = 20  # bound on a primary being elected (lease expiry + campaign + promotion)
RECOVER_S = 25  # bound on the first quorum-acked write after a fault
CONVERGE_S = 60  # bound on every node agreeing after the heal
WARM_OPS = 20  # OK ops each writer makes before the fault (the cluster works)
AFTER_OPS = 20  # OK ops after the recovery (the new primary keeps working)
ACK_MARGIN = 1.5  # s past the lease within which a minority primary must have stopped acking
PAUSE_S = LEASE_TTL + 2.0  # s a paused primary stays frozen (the new one is elected by then)
DISK_FAULT_S = 4.0  # s a disk fault lasts at least (the handover is done well before)


@dataclass
class Drill:
    """One drill's context: the cluster, the history it adds to, its stream and names."""

    cluster: Cluster
    history: History
    key: str = "drill"  # the stream written
    prefix: str = ""  # before each writer's name, so names stay unique across drills
    product_client: bool = True  # also write through xstream.client.Client's failover

    def writer(
        self,
        role: str,
        *,
        acks: str,
        pinned: str | None = None,
        timeout: float = WRITE_TIMEOUT,
        **kw: Any,
    ) -> Writer:
        sender = Sender(self.cluster, pinned=pinned, timeout=timeout)
        return Writer(self.history, sender, self.prefix + role, self.key, acks=acks, **kw)

    def client_writer(self) -> Writer:
        c = self.cluster
        seeds = [c.address(n) for n in c.nodes]
        host, _, port = seeds[0].rpartition(":")
        client = Client(
            host, int(port), nodes=seeds[1:], failover_timeout=5.0, acks="quorum",
            acks_timeout_ms=1500, decode_responses=True, **c.client_tls("app"),
        )  # fmt: skip
        sender = ClientSender(client, c.name_of)
        return Writer(self.history, sender, self.prefix + "c", self.key, acks="quorum")

    def writers(self, *extra: Writer) -> Writers:
        """q and l (and c), plus `extra`; started by `with`."""
        ws = [self.writer("q", acks="quorum"), self.writer("l", acks="leader")]
        if self.product_client:
            ws.append(self.client_writer())
        return Writers(*ws, *extra)


@dataclass
class Run:
    """What one drill did and saw (the checker's report over its stream included)."""

    fault: str  # kill, pause, partition, double-kill, kill-replica, groups, disk-full, ...
    old_primary: str
    new_primary: str = ""
    recovery_s: list[float] = field(default_factory=list)  # one per failover
    promotion_s: list[float] = field(default_factory=list)  # fault -> new primary's promotion
    report: Report = field(default_factory=Report)
    notes: dict[str, Any] = field(default_factory=dict)
    faulted: list[str] = field(default_factory=list)  # the nodes the drill hit
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0  # the drill's duration
    syncs_before: dict[str, tuple[int, int]] = field(default_factory=dict)  # see `syncs`

    def line(self) -> str:
        rec = ",".join(f"{r:.2f}" for r in self.recovery_s) or "-"
        promo = ",".join(f"{r:.2f}" for r in self.promotion_s) or "-"
        return (
            f"fault={self.fault} {self.old_primary}->{self.new_primary or self.old_primary} "
            f"recovery_s={rec} promotion_s={promo} took={self.seconds:.1f}s {self.report.line()}"
        )


# --- the cluster ---


def start_nodes(cluster: Cluster, names: tuple[str, ...] = NODES) -> str:
    """Start etcd (if not yet) and `names` as coordinated nodes; the primary, once settled."""
    if cluster.etcd is None:
        cluster.start_etcd()
    for name in names:
        cluster.start_node(name, *NODE_ARGS)
    return settled(cluster)


def describe(cluster: Cluster) -> str:
    """Each node's role, epoch, offset and link, for failure messages."""
    parts = []
    for name in cluster.nodes:
        try:
            i = cluster.node_info(name)
        except Exception as e:  # down or frozen: say so
            parts.append(f"{name}: no Info ({type(e).__name__}, {cluster.status(name)})")
            continue
        role = "deposed" if i.deposed else i.role
        link = f" link={i.link} of {i.primary}" if i.role == "replica" else ""
        parts.append(f"{name}: {role} epoch={i.epoch} offset={i.offset}{link}")
    return "; ".join(parts)


def settled(cluster: Cluster, timeout: float = CONVERGE_S) -> str:
    """Wait until one node is primary and every other follows it, linked, at its offset;
    answer the primary."""

    def check_once() -> str | None:
        p = cluster.primary()
        if p is None:
            return None
        offset = cluster.node_info(p).offset
        for name in cluster.nodes:
            if name == p:
                continue
            i = cluster.node_info(name)
            following = i.role == "replica" and i.primary == f"{p}:{PORT}" and i.link == "up"
            if not following or i.offset != offset:
                return None
        return p

    try:
        return poll(check_once, timeout, "every node follows one primary at its offset")
    except DrillError as e:
        raise DrillError(f"{e}\n  nodes: {describe(cluster)}") from None


def new_primary(cluster: Cluster, old: str, timeout: float = ELECT_S) -> str:
    """Wait until a node other than `old` acts as primary; its name."""
    try:
        return poll(lambda: _other(cluster.primary(), old), timeout, f"a primary other than {old}")
    except DrillError as e:
        raise DrillError(f"{e}\n  nodes: {describe(cluster)}") from None


def _other(name: str | None, old: str) -> str | None:
    return name if name not in (None, old) else None


# --- waiting on writers ---


def ok_since(history: History, key: str, since: float, process: str | None = None) -> list[Op]:
    return [
        o
        for o in history.ops(key)
        if o.ok and (o.complete_time or 0.0) > since and (process is None or o.process == process)
    ]


def warm(d: Drill, ws: Writers) -> None:
    """Every writer has WARM_OPS OK ops: the cluster takes writes before the fault."""
    since = 0.0
    for w in ws.all:
        poll(
            lambda w=w: len(ok_since(d.history, d.key, since, w.process)) >= WARM_OPS,  # type: ignore[misc]
            30,
            f"writer {w.process} has {WARM_OPS} acked writes before the fault",
        )


def recovered(d: Drill, fault_at: float, old: str) -> float:
    """Wait for the first quorum-acked write answered by another node than `old` after the
    fault, then for AFTER_OPS more; the recovery time in seconds."""
    first = poll(
        lambda: _first_ok(d, fault_at, old),
        RECOVER_S,
        f"a quorum-acked write answered by a node other than {old}",
    )
    done = first.complete_time or 0.0
    poll(
        lambda: len(ok_since(d.history, d.key, done)) >= AFTER_OPS,
        RECOVER_S,
        f"{AFTER_OPS} acked writes after the recovery",
    )
    return done - fault_at


def failed_over(d: Drill, run: Run, fault_at: float, old: str, new: str) -> None:
    """After a failover from `old` to `new`: wait for the recovery (`recovered`) and record
    its time, and the time `new` logged its promotion (the server side of it)."""
    run.recovery_s.append(recovered(d, fault_at, old))
    wall = time.time() - (time.monotonic() - fault_at)
    promoted = [_wall(e) for e in d.cluster.events(new, "promoted")]
    run.promotion_s += [min(t for t in promoted if t > wall) - wall] if promoted else []


def _wall(record: dict[str, object]) -> float:
    """A log record's `ts` ("2026-11-21T10:00:00.123Z", UTC) as a Unix time."""
    ts = datetime.strptime(str(record["ts"]), "%Y-%m-%dT%H:%M:%S.%fZ")
    return ts.replace(tzinfo=UTC).timestamp()


def _first_ok(d: Drill, after: float, old: str) -> Op | None:
    op = d.history.first_ok(after, not_node=old)
    return op if op is not None and op.key == d.key else None


# --- checking ---


def entries_of(cluster: Cluster, name: str, key: str) -> list[tuple[str, str]]:
    """Node `name`'s stream `key` as the checker's (entry ID, value) pairs."""
    return [(i, f.get("v", repr(f))) for i, f in cluster.xrange(name, key)]


def final_report(cluster: Cluster, history: History, keys: list[str]) -> Report:
    """The checker over `keys` (each against its own ops), plus the nodes' digests."""
    digests = {n: cluster.digest(n) for n in cluster.nodes}
    report = Report(disagreeing=disagreements({}, digests))
    for key in keys:
        states = {n: entries_of(cluster, n, key) for n in cluster.nodes}
        report += check(history.ops(key), states)
    return report


def syncs(c: Cluster) -> dict[str, tuple[int, int]]:
    """Per node, the (full, partial) syncs it did as a replica over its container's life
    (from its logs: `full_sync_done`, `partial_sync`)."""
    return {
        n: (len(c.events(n, "full_sync_done")), len(c.events(n, "partial_sync"))) for n in c.nodes
    }


def begin(d: Drill, fault: str) -> Run:
    """Wait for a settled cluster; a Run of `fault` from its primary."""
    started = time.monotonic()
    return Run(fault, settled(d.cluster), started=started, syncs_before=syncs(d.cluster))


def conclude(d: Drill, run: Run) -> Run:
    """Wait until the cluster settles, then check the drill's stream and count the syncs.
    Notes: `syncs` {node: (full, partial)} during the drill; `spared`, the nodes no fault
    hit; `full_syncs` {spared node: full syncs} (the goal is none: the gaps fit the
    backlog); `partial_syncs` likewise."""
    c = d.cluster
    run.new_primary = settled(c)
    run.report = final_report(c, d.history, [d.key])
    after = syncs(c)
    delta = {n: (after[n][0] - b[0], after[n][1] - b[1]) for n, b in run.syncs_before.items()}
    spared = [n for n in c.nodes if n not in run.faulted]
    run.notes["syncs"] = delta
    run.notes["spared"] = spared
    run.notes["full_syncs"] = {n: delta[n][0] for n in spared}
    run.notes["partial_syncs"] = {n: delta[n][1] for n in spared}
    run.seconds = time.monotonic() - run.started
    return run


# --- the faults ---


def kill_primary(d: Drill) -> Run:
    """Drill 1: SIGKILL the primary under load; a new one is elected; the old one restarts
    and rejoins as a replica."""
    c, run = d.cluster, begin(d, "kill")
    old = run.old_primary
    with d.writers() as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(old)
        c.kill(old)
        run.new_primary = new_primary(c, old)
        failed_over(d, run, fault_at, old, run.new_primary)
    c.restart(old)
    return conclude(d, run)


def pause_primary(d: Drill) -> Run:
    """Drill 2: freeze the primary past its lease, thaw it; writers pinned to it have calls in
    flight across the pause. Notes: `acked_after_new_epoch`, the OK ops the old primary
    answered after the new primary was seen (must be none); `paused_s`."""
    c, run = d.cluster, begin(d, "pause")
    old = run.old_primary
    # Deadlines longer than the pause: the calls in flight at the freeze are answered at the
    # thaw, by a node that must see its lease has lapsed.
    pinned = [
        d.writer(role, acks=acks, pinned=old, timeout=PAUSE_S + 10, retry_for=1.0)
        for role, acks in (("pin", "leader"), ("pinq", "quorum"))
    ]
    with d.writers(*pinned) as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(old)
        c.pause(old)
        run.new_primary = new_primary(c, old)
        seen_new = time.monotonic()
        failed_over(d, run, fault_at, old, run.new_primary)
        # The fault lasts past the lease by construction; a duration, not an assertion.
        time.sleep(max(0.0, fault_at + PAUSE_S - time.monotonic()))
        thawed = time.monotonic()
        c.unpause(old)
        for w in pinned:
            poll(
                lambda w=w: _answered_since(d, w.process, thawed) >= 3,  # type: ignore[misc]
                20,
                f"writer {w.process}, pinned to {old}, got 3 answers after the unpause",
            )
    late = [o for o in d.history.ops(d.key) if o.ok and o.node == old]
    late = [o for o in late if (o.complete_time or 0.0) > seen_new]
    run.notes["acked_after_new_epoch"] = [f"{o.value} at epoch {o.epoch}" for o in late]
    run.notes["paused_s"] = thawed - fault_at
    return conclude(d, run)


def _answered_since(d: Drill, process: str, since: float) -> int:
    """Ops of `process` invoked after `since` that are complete."""
    return sum(
        1
        for o in d.history.ops(d.key)
        if o.process == process and o.invoke_time > since and o.complete_time is not None
    )


def partition_primary(d: Drill) -> Run:
    """Drill 3: cut the primary off the majority (and etcd); writers pinned to it keep
    writing (acks=leader and acks=quorum). Notes: `minority_acked_s`, the old primary's last
    ack after the partition, in seconds from it (0.0 if none); `minority_acks` per acks."""
    c, run = d.cluster, begin(d, "partition")
    old = run.old_primary
    pin = d.writer("pin", acks="leader", pinned=old, retry_for=1.0)
    pinq = d.writer("pinq", acks="quorum", pinned=old, retry_for=1.0)
    with d.writers(pin, pinq) as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(old)
        c.partition(old)
        run.new_primary = new_primary(c, old)
        failed_over(d, run, fault_at, old, run.new_primary)
        quiet_from = fault_at + LEASE_TTL + ACK_MARGIN
        poll(
            lambda: (
                time.monotonic() > quiet_from and _answered_since(d, pin.process, quiet_from) >= 2
            ),
            20,
            f"the writer pinned to {old} got 2 answers past the lease",
        )
    acked = [o for o in ok_since(d.history, d.key, fault_at) if o.node == old]
    last = max((o.complete_time or 0.0 for o in acked), default=fault_at)
    run.notes["minority_acked_s"] = last - fault_at
    run.notes["minority_acks"] = {
        acks: sum(1 for o in acked if o.acks == acks) for acks in ("leader", "quorum")
    }
    c.heal(old)
    return conclude(d, run)


def double_kill(d: Drill) -> Run:
    """Drill 4: kill the primary; once the next one serves, restart the first and let it
    catch up; kill the second. The node never killed is the one `spared` (see conclude)."""
    c, run = d.cluster, begin(d, "double-kill")
    first = run.old_primary
    with d.writers() as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(first)
        c.kill(first)
        second = new_primary(c, first)
        failed_over(d, run, fault_at, first, second)
        c.restart(first)
        settled(c)  # the first is back, linked to the second, caught up: 2 of 3 survive next
        fault_at = time.monotonic()
        run.faulted.append(second)
        c.kill(second)
        run.new_primary = new_primary(c, second)
        failed_over(d, run, fault_at, second, run.new_primary)
    c.restart(second)
    return conclude(d, run)


def kill_replica(d: Drill) -> Run:
    """Soak only: kill a replica under load (writes go on with the other), restart it."""
    c, run = d.cluster, begin(d, "kill-replica")
    victim = next(n for n in c.nodes if n != run.old_primary)
    with d.writers() as ws:
        warm(d, ws)
        since = time.monotonic()
        run.faulted.append(victim)
        c.kill(victim)
        poll(
            lambda: len(ok_since(d.history, d.key, since, ws.all[0].process)) >= AFTER_OPS,
            RECOVER_S,
            f"{AFTER_OPS} quorum-acked writes with {victim} down",
        )
    c.restart(victim)
    return conclude(d, run)


def fill_primary_disk(d: Drill) -> Run:
    """The primary's data file system fills to the last byte under load, for DISK_FAULT_S at
    least; then the space is freed. Notes: `misconf`, `free_bytes` (what the fill left free:
    0 unless the node freed some meanwhile)."""
    free: list[int] = []
    run = _disk_fault(
        d, "disk-full", lambda n: free.append(d.cluster.fill_disk(n)), d.cluster.free_disk
    )
    run.notes["free_bytes"] = free[0]
    return run


def fail_primary_fsync(d: Drill) -> Run:
    """Every fsync of the primary fails with EIO (strace) under load, for DISK_FAULT_S at
    least; then strace detaches. Notes: `misconf`."""
    return _disk_fault(d, "eio", d.cluster.fail_fsync, d.cluster.mend_fsync)


def _disk_fault(
    d: Drill,
    fault: str,
    start: Callable[[str], None],
    end: Callable[[str], None],
) -> Run:
    """`start(primary)`, a failover, DISK_FAULT_S, `end(primary)`; it rejoins as a replica.
    A writer pinned to the old primary (acks=leader) sees its refusals."""
    c, run = d.cluster, begin(d, fault)
    old = run.old_primary
    pin = d.writer("pin", acks="leader", pinned=old, retry_for=1.0)
    with d.writers(pin) as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(old)
        start(old)
        try:
            run.new_primary = new_primary(c, old)
            failed_over(d, run, fault_at, old, run.new_primary)
            time.sleep(max(0.0, fault_at + DISK_FAULT_S - time.monotonic()))
        finally:
            end(old)
    pinned = [o for o in d.history.ops(d.key) if o.process == pin.process]
    run.notes["misconf"] = sum(1 for o in pinned if "MISCONF" in o.error)
    return conclude(d, run)


def corrupt_primary_log(d: Drill) -> Run:
    """Kill the primary under load; once another serves, flip a byte in the middle of the old
    one's log and restart it: it keeps the good prefix, sets the rest aside and resyncs from
    the new primary. Notes: `corrupted` (what was flipped), `damage_set_aside` and
    `damage_healed` (its log lines during the drill)."""
    c, run = d.cluster, begin(d, "corrupt")
    old = run.old_primary
    before = {e: len(c.events(old, e)) for e in ("damage_set_aside", "damage_healed")}
    with d.writers() as ws:
        warm(d, ws)
        fault_at = time.monotonic()
        run.faulted.append(old)
        c.kill(old)
        run.new_primary = new_primary(c, old)
        failed_over(d, run, fault_at, old, run.new_primary)
        run.notes["corrupted"] = c.corrupt_log(old)
        c.restart(old)
        poll(
            lambda: len(c.events(old, "damage_healed")) > before["damage_healed"],
            RECOVER_S,
            f"{old} healed the damage in its log (damage_healed)",
        )
    for event, count in before.items():
        run.notes[event] = len(c.events(old, event)) - count
    return conclude(d, run)


FAULTS: dict[str, Callable[[Drill], Run]] = {
    "kill": kill_primary,
    "pause": pause_primary,
    "partition": partition_primary,
    "double-kill": double_kill,
    "kill-replica": kill_replica,
    "disk-full": fill_primary_disk,
    "eio": fail_primary_fsync,
    "corrupt": corrupt_primary_log,
}
