"""The drills' Jepsen-style checker (tests/drills/checker.py): a clean history passes, and each
anomaly it names is found in a history built to have it, and only that one.

Histories are built by hand: `Sim` plays sequential writers against one stream, stamping
invoke and complete times from a counter, so every case reads as what happened. Hypothesis
(derandomized) then runs random clean histories, and random damage to them.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.drills.checker import Entry, Report, check
from tests.drills.history import Attempts, History, Op, Outcome, outcome_of_error
from tests.drills.writers import AttemptError, Writer

PROPS = settings(max_examples=150, derandomize=True, deadline=None, database=None)


class Sim:
    """Writers' ops against one stream: `write` appends an acked entry, in real-time order."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.stream: list[Entry] = []
        self._clock = itertools.count(1)
        self._seq: dict[str, int] = {}

    def op(self, process: str, outcome: Outcome, acks: str = "quorum") -> Op:
        seq = self._seq[process] = self._seq.get(process, 0) + 1
        op = Op(process, seq, "s", f"{process}-{seq}", acks=acks)
        op.invoke_time = float(next(self._clock))
        op.complete_time = float(next(self._clock))
        op.outcome = outcome
        self.ops.append(op)
        return op

    def write(self, process: str = "w1", acks: str = "quorum", present: bool = True) -> Op:
        op = self.op(process, Outcome.OK, acks)
        op.id = f"{len(self.ops)}-0"
        if present:
            self.stream.append((op.id, op.value))
        return op

    def nodes(self, n: int = 3) -> dict[str, list[Entry]]:
        return {f"n{i + 1}": list(self.stream) for i in range(n)}


def only(report: Report, category: str, count: int = 1) -> None:
    """`category` has `count` anomalies and every other failure category none."""
    totals = report.totals()
    assert totals[category] == count, report.line()
    others = {k: v for k, v in totals.items() if k != category}
    failing = {"lost_quorum", "duplicated", "unexpected", "moved", "out_of_order", "disagreeing"}
    assert not {k for k, v in others.items() if v and k in failing}, report.line()


# --- one anomaly each ---


def test_clean_history_passes() -> None:
    sim = Sim()
    for i in range(10):
        sim.write(f"w{i % 3}")
    sim.op("w1", Outcome.FAILED)
    unknown = sim.op("w2", Outcome.UNKNOWN)
    report = check(sim.ops, sim.nodes(), {"n1": "d", "n2": "d", "n3": "d"})
    assert report.passed, report.line()
    assert (report.ok, report.failed, report.unknown) == (10, 1, 1)
    assert report.recovered == [] and unknown.value not in "".join(report.lost_quorum)


def test_unknown_present_is_recovered_not_unexpected() -> None:
    sim = Sim()
    sim.write()
    op = sim.op("w1", Outcome.UNKNOWN)
    sim.stream.append(("99-0", op.value))
    report = check(sim.ops, sim.nodes())
    assert report.passed, report.line()
    assert report.recovered == [op.value]


def test_quorum_acked_but_absent_is_lost() -> None:
    sim = Sim()
    sim.write()
    gone = sim.write(present=False)
    sim.write()
    report = check(sim.ops, sim.nodes())
    only(report, "lost_quorum")
    assert gone.value in report.lost_quorum[0] and "n1,n2,n3" in report.lost_quorum[0]
    assert not report.passed


def test_leader_acked_loss_is_reported_not_failed() -> None:
    sim = Sim()
    sim.write()
    sim.write(acks="leader", present=False)
    report = check(sim.ops, sim.nodes())
    assert report.passed, report.line()
    assert len(report.lost_leader) == 1 and report.lost_quorum == []


def test_lost_on_one_node_only_is_lost_and_disagreement() -> None:
    sim = Sim()
    a, b = sim.write(), sim.write()
    nodes = sim.nodes()
    nodes["n2"] = [e for e in nodes["n2"] if e[1] != b.value]
    report = check(sim.ops, nodes)
    assert report.totals()["lost_quorum"] == 1 and "on n2" in report.lost_quorum[0]
    assert report.totals()["disagreeing"] == 1
    assert a.value not in report.lost_quorum[0]


def test_duplicated() -> None:
    sim = Sim()
    a = sim.write()
    sim.write()
    sim.stream.append(("50-0", a.value))
    only(check(sim.ops, sim.nodes(1)), "duplicated")


def test_never_invoked_is_unexpected() -> None:
    sim = Sim()
    sim.write()
    sim.stream.append(("50-0", "ghost-1"))
    report = check(sim.ops, sim.nodes(1))
    only(report, "unexpected")
    assert "never invoked" in report.unexpected[0]


def test_failed_but_present_is_unexpected() -> None:
    sim = Sim()
    sim.write()
    op = sim.op("w1", Outcome.FAILED)
    op.error = "READONLY You can't write against a read only replica."
    sim.stream.append(("50-0", op.value))
    report = check(sim.ops, sim.nodes(1))
    only(report, "unexpected")
    assert "READONLY" in report.unexpected[0]


def test_acked_id_differs_is_moved() -> None:
    sim = Sim()
    sim.write()
    b = sim.write()
    sim.stream[-1] = ("77-0", b.value)
    only(check(sim.ops, sim.nodes(1)), "moved")


def test_one_writer_out_of_order() -> None:
    sim = Sim()
    a, b = sim.write(), sim.write()
    sim.stream = [(b.id, b.value), (a.id, a.value)]
    report = check(sim.ops, sim.nodes(1))
    only(report, "out_of_order")
    assert f"{a.value} acked before {b.value}" in report.out_of_order[0]


def test_out_of_order_across_writers() -> None:
    sim = Sim()
    a = sim.write("w1")
    b = sim.write("w2")  # invoked after a completed
    sim.stream.reverse()
    only(check(sim.ops, sim.nodes(1)), "out_of_order")
    assert a.complete_time is not None and b.invoke_time > a.complete_time


def test_concurrent_writes_may_land_in_any_order() -> None:
    sim = Sim()
    a, b = sim.write("w1"), sim.write("w2")
    a.complete_time = b.complete_time  # a was still in flight when b was invoked
    sim.stream.reverse()
    assert check(sim.ops, sim.nodes(1)).passed


def test_unknown_op_present_before_an_earlier_ack_is_out_of_order() -> None:
    sim = Sim()
    a = sim.write()
    b = sim.op("w1", Outcome.UNKNOWN)
    sim.stream.insert(0, ("0-1", b.value))
    report = check(sim.ops, sim.nodes(1))
    only(report, "out_of_order")
    assert a.value in report.out_of_order[0]


def test_nodes_with_different_entries_disagree() -> None:
    sim = Sim()
    sim.write()
    extra = sim.op("w1", Outcome.UNKNOWN)
    nodes = sim.nodes()
    nodes["n3"].append(("9-0", extra.value))
    report = check(sim.ops, nodes)
    only(report, "disagreeing")
    assert "n3 vs n1" in report.disagreeing[0]


def test_digests_that_differ_disagree() -> None:
    sim = Sim()
    sim.write()
    report = check(sim.ops, sim.nodes(), {"n1": "aa", "n2": "aa", "n3": "bb"})
    only(report, "disagreeing")
    assert "n3" in report.disagreeing[0]


def test_reports_add_up() -> None:
    sim = Sim()
    sim.write(present=False)
    one = check(sim.ops, sim.nodes(1))
    total = one + one
    assert total.totals()["lost_quorum"] == 2 and total.ok == 2 and not total.passed
    assert "lost(quorum)=2" in total.line()


# --- history bookkeeping ---


def test_attempts_fold_into_one_outcome() -> None:
    a, seen = Attempts(), []
    for outcome, error in [
        (Outcome.FAILED, "READONLY"),
        (Outcome.UNKNOWN, "ACKTIMEOUT"),
        (Outcome.FAILED, "READONLY"),
        (Outcome.OK, ""),
    ]:
        a.add(outcome, error)
        seen.append(a.outcome)
    assert seen == [Outcome.FAILED, Outcome.UNKNOWN, Outcome.UNKNOWN, Outcome.OK]
    assert a.count == 4 and a.errors == ["READONLY", "ACKTIMEOUT", "READONLY"]


def test_error_lines_classify() -> None:
    assert outcome_of_error("READONLY You can't write against a deposed primary") is (
        Outcome.FAILED
    )
    assert outcome_of_error("NOREPLICAS Not enough good replicas to write.") is Outcome.FAILED
    assert outcome_of_error("LEASELOST write applied ...") is Outcome.UNKNOWN
    assert outcome_of_error("ACKTIMEOUT write applied ...") is Outcome.UNKNOWN


# --- MISCONF: a node whose disk failed refused the write (nothing applied) ---

MISCONF_LINES = [
    "MISCONF Errors writing to the AOF file: No space left on device",
    "MISCONF Errors writing to the AOF file: Input/output error",
    "MISCONF Errors writing to the AOF file: free space on the data directory's file system "
    "(1048576 bytes) is below the reserve of 67108864 bytes (--disk-reserve-bytes)",
]


def test_misconf_lines_are_refusals() -> None:
    for line in MISCONF_LINES:
        assert outcome_of_error(line) is Outcome.FAILED, line
    assert outcome_of_error("ERR MISCONF in the middle is not a prefix") is Outcome.UNKNOWN


def test_misconf_attempts_fold_like_readonly() -> None:
    refused = Attempts()
    for line in [MISCONF_LINES[0], "READONLY You can't write against a deposed primary"]:
        refused.add(outcome_of_error(line), line)
    assert refused.outcome is Outcome.FAILED
    maybe = Attempts()
    for line in [MISCONF_LINES[1], "LEASELOST write applied ...", MISCONF_LINES[1]]:
        maybe.add(outcome_of_error(line), line)
    assert maybe.outcome is Outcome.UNKNOWN  # one attempt may have applied it
    retried = Attempts()
    retried.add(outcome_of_error(MISCONF_LINES[2]), MISCONF_LINES[2])
    retried.add(Outcome.OK)
    assert retried.outcome is Outcome.OK


class Refusing:
    """A sender whose node answers each line of `lines` in turn, then acknowledges."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)

    def send(self, argv: list[bytes], acks: str) -> tuple[Any, str, int]:
        if self.lines:
            line = self.lines.pop(0)
            raise AttemptError(outcome_of_error(line), line, "n1", 3)
        return b"5-0", "n2", 4


def test_a_writer_records_misconf_as_failed_then_retries_it() -> None:
    h = History()
    gave_up = Writer(h, Refusing(*MISCONF_LINES * 100), "w1", "s", retry_for=0.05).write(1)
    assert gave_up.outcome is Outcome.FAILED and gave_up.error.startswith("MISCONF")
    assert (gave_up.node, gave_up.epoch) == ("n1", 3)
    took = Writer(h, Refusing(MISCONF_LINES[0]), "w2", "s").write(1)
    assert took.outcome is Outcome.OK and (took.node, took.id, took.attempts) == ("n2", "5-0", 2)


def test_misconf_refused_and_absent_passes_but_present_is_unexpected() -> None:
    sim = Sim()
    sim.write()
    refused = sim.op("w1", Outcome.FAILED)
    refused.error = MISCONF_LINES[0]
    sim.write()
    report = check(sim.ops, sim.nodes())
    assert report.passed, report.line()
    assert (report.ok, report.failed, report.unknown) == (2, 1, 0)
    assert report.totals()["lost_quorum"] == 0 and not report.recovered
    sim.stream.append(("9-0", refused.value))  # the node applied what it said it refused
    report = check(sim.ops, sim.nodes())
    only(report, "unexpected", 3)  # once per node
    assert "No space left on device" in report.unexpected[0]


def test_history_records_and_finds_the_first_ok() -> None:
    h = History()
    a = h.invoke("w1", "s", "w1-1", seq=1, acks="leader")
    b = h.invoke("w1", "s", "w1-2", seq=2, acks="quorum")
    h.complete(a, Outcome.OK, node="n1", id="1-0")
    h.complete(b, Outcome.OK, node="n2", id="2-0")
    assert h.counts() == {"ok": 2, "failed": 0, "unknown": 0, "pending": 0}
    assert h.first_ok(0.0) is b  # a was only leader-acked
    assert h.first_ok(0.0, quorum=False, not_node="n2") is a


# --- properties ---


@st.composite
def clean_runs(draw: st.DrawFn) -> Sim:
    """Sequential writers: OK ops land in completion order; failed ones never land; unknown
    ones land (after their invoke) or not."""
    sim = Sim()
    for _ in range(draw(st.integers(1, 30))):
        process = draw(st.sampled_from(["w1", "w2", "w3"]))
        kind = draw(st.sampled_from(["ok", "ok", "ok", "leader", "failed", "unknown"]))
        if kind == "ok":
            sim.write(process)
        elif kind == "leader":
            sim.write(process, acks="leader", present=draw(st.booleans()))
        elif kind == "failed":
            sim.op(process, Outcome.FAILED)
        else:
            op = sim.op(process, Outcome.UNKNOWN)
            if draw(st.booleans()):
                sim.stream.append((f"u{op.seq}", op.value))
    return sim


@PROPS
@given(clean_runs())
def test_clean_runs_pass(sim: Sim) -> None:
    report = check(sim.ops, sim.nodes())
    assert report.passed, report.line()


@PROPS
@given(clean_runs(), st.sampled_from(["drop", "duplicate", "swap", "ghost"]), st.data())
def test_damage_is_found(sim: Sim, damage: str, data: st.DataObject) -> None:
    quorum_acked = [i for i, (_, v) in enumerate(sim.stream) if _op(sim, v).ok]
    quorum_acked = [i for i in quorum_acked if _op(sim, sim.stream[i][1]).quorum]
    nodes = sim.nodes(2)
    stream = nodes["n2"]
    if damage == "ghost":
        stream.append(("0-0", "ghost-1"))
        expect = "unexpected"
    elif damage == "duplicate" and stream:
        stream.append(data.draw(st.sampled_from(stream)))
        expect = "duplicated"
    elif damage == "drop" and quorum_acked:
        del stream[data.draw(st.sampled_from(quorum_acked))]
        expect = "lost_quorum"
    elif damage == "swap" and len(quorum_acked) >= 2:
        i, j = quorum_acked[0], quorum_acked[-1]
        stream[i], stream[j] = stream[j], stream[i]
        expect = "out_of_order"
    else:
        return  # nothing of that kind to damage in this run
    report = check(sim.ops, nodes)
    assert report.totals()[expect] >= 1, report.line()
    assert report.totals()["disagreeing"] == 1 and not report.passed


def _op(sim: Sim, value: str) -> Op:
    return next(o for o in sim.ops if o.value == value)
