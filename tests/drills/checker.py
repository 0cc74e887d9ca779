"""A Jepsen-style checker: a drill's history against the final stream read from every node.

    report = check(history.ops("drill"), {"n1": entries, "n2": ..., "n3": ...}, digests)
    report.passed       False on any of the failures below
    report.line()       "ok=812 failed=3 unknown=5 lost(quorum)=0 lost(leader)=2 dup=0 ..."

Pure: no I/O and no clock; the inputs are plain data. An entry is `(entry ID, value)`, the
value being the entry's `v` field (the writers' unique "<process>-<seq>").

    category       what                                                     verdict
    lost_quorum    acked OK with acks=quorum|all, absent from some node     failure
    lost_leader    acked OK with acks=leader, absent from some node         reported
    duplicated     a value present more than once in one node's stream      failure
    unexpected     present, but never invoked, or invoked and FAILED        failure
    moved          present under another ID than its OK reply gave          failure
    out_of_order   op a completed OK before op b was invoked, yet b's       failure
                   entry precedes a's (real-time order, over all writers)
    disagreeing    nodes whose entries or digests differ from the others'   failure
    recovered      UNKNOWN ops whose value is present                       reported

Real-time order holds across writers, not only within one: a write acknowledged before
another was invoked was applied first on the primary of its epoch, and every later primary
holds it (if it survived at all) with a smaller ID. A b that is UNKNOWN was applied, if at
all, after its invocation, so it is checked like an OK one.

Invariants: each category lists every anomaly as a short text naming the value(s) and node;
counts are list lengths (lost values count once however many nodes miss them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from .history import Op, Outcome

Entry = tuple[str, str]  # (entry ID, value)
FAILURES = ("lost_quorum", "duplicated", "unexpected", "moved", "out_of_order", "disagreeing")
EXAMPLES = 3  # anomalies quoted per category in `line()`


@dataclass
class Report:
    ok: int = 0  # xadd ops acknowledged
    failed: int = 0  # xadd ops certainly not applied
    unknown: int = 0  # xadd ops maybe applied (or still pending)
    lost_quorum: list[str] = field(default_factory=list)
    lost_leader: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    disagreeing: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(getattr(self, name) for name in FAILURES)

    def totals(self) -> dict[str, int]:
        """Every field as a count."""
        return {f.name: _count(getattr(self, f.name)) for f in fields(self)}

    def __add__(self, other: Report) -> Report:
        merged = Report()
        for f in fields(self):
            setattr(merged, f.name, getattr(self, f.name) + getattr(other, f.name))
        return merged

    def line(self) -> str:
        """Counts, then a few examples of each failure."""
        t = self.totals()
        text = (
            f"ok={t['ok']} failed={t['failed']} unknown={t['unknown']} "
            f"lost(quorum)={t['lost_quorum']} lost(leader)={t['lost_leader']} "
            f"dup={t['duplicated']} unexpected={t['unexpected']} moved={t['moved']} "
            f"out_of_order={t['out_of_order']} disagreeing={t['disagreeing']} "
            f"recovered={t['recovered']}"
        )
        for name in FAILURES:
            found: list[str] = getattr(self, name)
            if found:
                text += f"\n  {name}: {'; '.join(found[:EXAMPLES])}"
        return text


def _count(value: int | list[str]) -> int:
    return value if isinstance(value, int) else len(value)


def check(
    ops: Sequence[Op],
    states: Mapping[str, Sequence[Entry]],
    digests: Mapping[str, str] | None = None,
) -> Report:
    """The anomalies of `ops` (xadd ops of one stream) in the final `states` (node -> entries
    of that stream, in stream order) and `digests` (node -> digest of the whole state)."""
    xadds = [o for o in ops if o.kind == "xadd"]
    report = Report()
    _tally(report, xadds)
    by_value = {o.value: o for o in xadds}
    recovered: set[str] = set()
    for node in sorted(states):
        entries = states[node]
        _lost(report, xadds, node, {v for _, v in entries})
        report.duplicated += _duplicated(node, entries)
        report.unexpected += _unexpected(node, entries, by_value)
        report.moved += _moved(node, entries, by_value)
        report.out_of_order += _out_of_order(node, entries, xadds)
        recovered |= {v for _, v in entries if _outcome(by_value.get(v)) is Outcome.UNKNOWN}
    report.lost_quorum = _merge_lost(report.lost_quorum)
    report.lost_leader = _merge_lost(report.lost_leader)
    report.recovered = sorted(recovered)
    report.disagreeing = disagreements(states, digests or {})
    return report


def _tally(report: Report, xadds: Sequence[Op]) -> None:
    for op in xadds:
        if op.outcome is Outcome.OK:
            report.ok += 1
        elif op.outcome is Outcome.FAILED:
            report.failed += 1
        else:
            report.unknown += 1


def _outcome(op: Op | None) -> Outcome | None:
    return None if op is None else (op.outcome or Outcome.UNKNOWN)


# --- one node's stream ---


def _lost(report: Report, xadds: Sequence[Op], node: str, present: set[str]) -> None:
    for op in xadds:
        if op.ok and op.value not in present:
            found = report.lost_quorum if op.quorum else report.lost_leader
            found.append(f"{op.value} ({op.acks}, id {op.id}, from {op.node or '?'}) on {node}")


def _merge_lost(found: list[str]) -> list[str]:
    """One line per lost value, naming every node that misses it."""
    nodes: dict[str, list[str]] = {}
    for text in found:
        what, _, node = text.rpartition(" on ")
        nodes.setdefault(what, []).append(node)
    return [f"{what} missing on {','.join(ns)}" for what, ns in nodes.items()]


def _duplicated(node: str, entries: Sequence[Entry]) -> list[str]:
    counts = Counter(v for _, v in entries)
    return [f"{v} x{n} on {node}" for v, n in counts.items() if n > 1]


def _unexpected(node: str, entries: Sequence[Entry], by_value: Mapping[str, Op]) -> list[str]:
    out = []
    for entry_id, value in entries:
        op = by_value.get(value)
        if op is None:
            out.append(f"{value} at {entry_id} on {node}: never invoked")
        elif op.outcome is Outcome.FAILED:
            out.append(f"{value} at {entry_id} on {node}: failed ({op.error})")
    return out


def _moved(node: str, entries: Sequence[Entry], by_value: Mapping[str, Op]) -> list[str]:
    """OK values found, but at none of the IDs their reply gave (a duplicate is not moved)."""
    at: dict[str, list[str]] = {}
    for entry_id, value in entries:
        at.setdefault(value, []).append(entry_id)
    out = []
    for value, ids in at.items():
        op = by_value.get(value)
        if op is not None and op.ok and op.id and op.id not in ids:
            out.append(f"{value} acked as {op.id}, at {','.join(ids)} on {node}")
    return out


def _out_of_order(node: str, entries: Sequence[Entry], xadds: Sequence[Op]) -> list[str]:
    """Each present b against the furthest-placed OK op that completed before b's invoke."""
    position: dict[str, int] = {}
    for i, (_, value) in enumerate(entries):
        position.setdefault(value, i)
    done = sorted(
        (o for o in xadds if o.ok and o.value in position and o.complete_time is not None),
        key=lambda o: o.complete_time or 0.0,
    )
    ends = [o.complete_time or 0.0 for o in done]
    furthest: list[Op] = []  # furthest[i]: the furthest-placed among done[: i + 1]
    for op in done:
        best = furthest[-1] if furthest else op
        furthest.append(op if position[op.value] >= position[best.value] else best)
    out = []
    for b in xadds:
        if b.value not in position or b.outcome is Outcome.FAILED:
            continue
        n = bisect_left(ends, b.invoke_time)  # done[:n] completed before b was invoked
        if n and position[furthest[n - 1].value] > position[b.value]:
            a = furthest[n - 1]
            out.append(f"{a.value} acked before {b.value} was invoked, but follows it on {node}")
    return out


# --- across nodes ---


def disagreements(states: Mapping[str, Sequence[Entry]], digests: Mapping[str, str]) -> list[str]:
    """Nodes whose entries (or digests) differ from the first node's, by name."""
    out = []
    names = sorted(states)
    for node in names[1:]:
        base, mine = states[names[0]], states[node]
        if list(mine) != list(base):
            theirs, ours = set(base), set(mine)
            out.append(
                f"{node} vs {names[0]}: {len(ours - theirs)} entries only on {node}, "
                f"{len(theirs - ours)} only on {names[0]}, {len(mine)} vs {len(base)} entries"
            )
    digest_nodes = sorted(digests)
    for node in digest_nodes[1:]:
        if digests[node] != digests[digest_nodes[0]]:
            out.append(f"digest of {node} {digests[node]} != {digest_nodes[0]}'s")
    return out
