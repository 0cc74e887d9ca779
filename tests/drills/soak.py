"""The randomized drill runner: many faults in a row on one long-lived cluster.

    python -m tests.drills.soak --drills 200 [--seed 7] [--json soak.json] [--image TAG]
                                [--faults disk-full,eio,corrupt]

One cluster (etcd + n1..n3, as in the drills) lives through every drill. Faults are drawn in
rounds: each round is a random order of every fault (or of --faults; so a short run covers
them all), seeded by --seed. Each drill writes its own stream (`drill:<n>`) through fresh
writers, faults, heals, waits for the cluster to settle and checks its stream; one line per
drill:

    drill=3 fault=pause recovery_s=2.74 promotion_s=2.33 old=n2 new=n1 took_s=7.7 \
        full_syncs=0 ok=801 failed=6 unknown=3 lost_quorum=0 ... violations=[]

At the end the checker runs over the whole history (every drill's stream, every node) and a
summary gives the totals per checker category, recovery and promotion p50/p99/max (see
scenarios.py), and the full and partial syncs the nodes did during the drills (from their
logs; the initial syncs of a fresh cluster are not counted).

Exit status: 0 if nothing failed; 1 on any quorum loss, duplicate, unexpected, moved or
out-of-order entry, disagreement, or drill-specific violation (an ack after the new epoch, a
minority ack past the lease, a redelivered or disagreeing group, a full resync of a replica
no fault hit, a broken disk that refused nothing with MISCONF, a damaged log not set aside
and healed); 2 if a bounded wait ran out (the cluster is stuck). Unless it passed, the
nodes' logs are written next to --json (or to soak-logs.txt).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checker import FAILURES, Report
from .groups import groups_failover
from .harness import Cluster, DrillError, build_node_image
from .history import History
from .scenarios import (
    ACK_MARGIN,
    FAULTS,
    LEASE_TTL,
    Drill,
    Run,
    final_report,
    start_nodes,
)

ALL_FAULTS: dict[str, Callable[[Drill], Run]] = {**FAULTS, "groups": groups_failover}


def violations(run: Run) -> list[str]:
    """What a drill's notes show against the issue's goals (beyond the checker's report)."""
    n, out = run.notes, []
    if n.get("acked_after_new_epoch"):
        out.append(f"acked after the new epoch: {n['acked_after_new_epoch'][:3]}")
    if n.get("minority_acked_s", 0.0) > LEASE_TTL + ACK_MARGIN:
        out.append(f"minority acked {n['minority_acked_s']:.2f} s after the partition")
    if any(n.get("full_syncs", {}).values()):
        out.append(f"spared replica full-synced: {n['full_syncs']}")
    for what in ("redelivered_acked", "redelivered", "acked_in_pel"):
        if n.get(what):
            out.append(f"{what}: {n[what][:3]}")
    if n.get("groups_agree") is False:
        out.append("group state differs between nodes")
    if n.get("misconf") == 0:
        out.append("the node whose disk failed refused no write with MISCONF")
    for what in ("damage_set_aside", "damage_healed"):
        if n.get(what) == 0:
            out.append(f"the node whose log was damaged logged no {what}")
    return out


def fault_order(seed: int, faults: Sequence[str] = ()) -> Iterator[str]:
    """Rounds of `faults` (default: every fault), each round in a random order."""
    rng = random.Random(seed)
    unknown = set(faults) - set(ALL_FAULTS)
    assert not unknown, f"unknown faults {sorted(unknown)}; known: {sorted(ALL_FAULTS)}"
    while True:
        names = sorted(faults or ALL_FAULTS)
        rng.shuffle(names)
        yield from names


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def spread(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "max": max(values, default=0.0),
    }


@dataclass
class Summary:
    drills: list[dict[str, Any]] = field(default_factory=list)  # one progress record each
    report: Report = field(default_factory=Report)  # the checker over the whole history
    recovery_s: list[float] = field(default_factory=list)  # as the writers saw it
    promotion_s: list[float] = field(default_factory=list)  # as the new primaries logged it
    violations: list[str] = field(default_factory=list)
    full_syncs: dict[str, int] = field(default_factory=dict)  # per node, during the drills
    partial_syncs: dict[str, int] = field(default_factory=dict)  # likewise
    stuck: str = ""  # the DrillError that ended the soak early

    @property
    def passed(self) -> bool:
        return self.report.passed and not self.violations and not self.stuck

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "drills": len(self.drills),
            "totals": self.report.totals(),
            "recovery_s": spread(self.recovery_s),
            "promotion_s": spread(self.promotion_s),
            "full_syncs": self.full_syncs,
            "partial_syncs": self.partial_syncs,
            "violations": self.violations,
            "anomalies": {k: v[:10] for k, v in vars(self.report).items() if isinstance(v, list)},
            "stuck": self.stuck,
            "per_drill": self.drills,
        }


SHOWN_NOTES = ("misconf", "free_bytes", "corrupted", "damage_set_aside", "damage_healed")


def progress(number: int, run: Run, found: list[str]) -> dict[str, Any]:
    t = run.report.totals()
    shown = {k: run.notes[k] for k in SHOWN_NOTES if k in run.notes}
    return {
        "drill": number,
        "fault": run.fault,
        "old": run.old_primary,
        "new": run.new_primary,
        "recovery_s": [round(x, 3) for x in run.recovery_s],
        "promotion_s": [round(x, 3) for x in run.promotion_s],
        "took_s": round(run.seconds, 1),
        "full_syncs": sum(f for f, _ in run.notes.get("syncs", {}).values()),
        **{k: t[k] for k in ("ok", "failed", "unknown")},
        **{k: v for k, v in t.items() if k not in ("ok", "failed", "unknown")},
        **shown,
        "violations": found,
    }


def line(record: dict[str, Any]) -> str:
    rec = ",".join(f"{x:.2f}" for x in record["recovery_s"]) or "-"
    promo = ",".join(f"{x:.2f}" for x in record["promotion_s"]) or "-"
    head = ("drill", "fault", "recovery_s", "promotion_s")
    rest = " ".join(f"{k}={v}" for k, v in record.items() if k not in head)
    return (
        f"drill={record['drill']} fault={record['fault']} recovery_s={rec} "
        f"promotion_s={promo} {rest}"
    )


def run_soak(
    cluster: Cluster,
    drills: int,
    seed: int,
    echo: Callable[[str], None] = print,
    faults: Sequence[str] = (),
) -> Summary:
    """`drills` drills on `cluster` (empty: nodes are started here), drawn from `faults`
    (default: every fault); the summary."""
    start_nodes(cluster)
    history, summary, keys = History(), Summary(), []
    order = fault_order(seed, faults)
    for number in range(1, drills + 1):
        name = next(order)
        drill = Drill(cluster, history, key=f"drill:{number}", prefix=f"d{number}-")
        keys.append(drill.key)
        try:
            run = ALL_FAULTS[name](drill)
        except DrillError as e:
            summary.stuck = f"drill {number} ({name}): {e}"
            echo(f"drill={number} fault={name} STUCK {e}")
            break
        found = violations(run) + [f"{k}: {v[:3]}" for k, v in _failures(run.report).items()]
        summary.violations += [f"drill {number} ({name}): {v}" for v in found]
        summary.recovery_s += run.recovery_s
        summary.promotion_s += run.promotion_s
        for node, (full, partial) in run.notes.get("syncs", {}).items():
            summary.full_syncs[node] = summary.full_syncs.get(node, 0) + full
            summary.partial_syncs[node] = summary.partial_syncs.get(node, 0) + partial
        summary.drills.append(progress(number, run, found))
        echo(line(summary.drills[-1]))
    if not summary.stuck:
        summary.report = final_report(cluster, history, keys)
    return summary


def _failures(report: Report) -> dict[str, list[str]]:
    return {k: v for k, v in vars(report).items() if k in FAILURES and v}


def summary_text(s: Summary) -> str:
    d = s.as_dict()
    totals = " ".join(f"{k}={v}" for k, v in d["totals"].items())
    r, p = d["recovery_s"], d["promotion_s"]
    return "\n".join(
        [
            f"soak: {d['drills']} drills, {'PASSED' if s.passed else 'FAILED'}",
            f"checker (whole history): {totals}",
            f"recovery_s (fault -> first quorum ack, writers' view): n={r['n']} "
            f"p50={r['p50']:.2f} p99={r['p99']:.2f} max={r['max']:.2f}",
            f"promotion_s (fault -> new primary promoted, its log): n={p['n']} "
            f"p50={p['p50']:.2f} p99={p['p99']:.2f} max={p['max']:.2f}",
            f"syncs per node during the drills (replica side): full {d['full_syncs']}, "
            f"partial {d['partial_syncs']}",
            *(f"violation: {v}" for v in s.violations[:20]),
            *([f"stuck: {s.stuck}"] if s.stuck else []),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.drills.soak",
        description="Randomized failover drills on one cluster (etcd + 3 xstream nodes in "
        "Docker), each checked by the Jepsen-style checker; a summary at the end.",
    )
    p.add_argument("--drills", type=int, default=10, help="how many drills (default 10)")
    p.add_argument("--seed", type=int, default=None, help="fault order seed (default: random)")
    p.add_argument("--json", type=Path, default=None, help="write the summary as JSON here")
    p.add_argument("--image", default=None, help="node image tag (default: scripts/images.sh)")
    p.add_argument(
        "--faults",
        default="",
        help=f"comma-separated faults to draw from (default: {','.join(sorted(ALL_FAULTS))})",
    )
    args = p.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    image = args.image or build_node_image()
    print(f"soak: {args.drills} drills, seed {seed}, image {image}", flush=True)
    started = time.monotonic()
    with Cluster(image) as cluster:
        summary = run_soak(cluster, args.drills, seed, lambda s: print(s, flush=True), faults)
        if not summary.passed:
            logs = args.json.with_suffix(".logs.txt") if args.json else Path("soak-logs.txt")
            logs.write_text(cluster.logs())
            print(f"soak: node logs in {logs}")
    print(summary_text(summary))
    print(f"soak: {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"seed": seed, **summary.as_dict()}, indent=2))
    if summary.stuck:
        return 2
    return 0 if summary.passed else 1


if __name__ == "__main__":
    sys.exit(main())
