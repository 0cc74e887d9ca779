"""The client's failover decisions without a network: IDMP stamping, which commands may be sent
twice, what a failure means, who is primary, pacing; then the transport's retry loop driven by
scripted failures (fake RpcErrors and fake Admin.Info answers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
import pytest

from xstream.client import (
    AckTimeoutError,
    ConnectionError,
    LeaseLostError,
    ReadOnlyError,
    TryAgainError,
)
from xstream.client.exceptions import error_from_line
from xstream.client.failover import (
    Backoff,
    Failure,
    NodeView,
    Outcome,
    classify,
    next_node_for_read,
    refused_pipeline,
    resolve,
    retry_write,
)
from xstream.client.grpc_transport import GrpcTransport
from xstream.client.idempotence import (
    STAMP_WINDOW,
    Stamper,
    is_idempotent_xadd,
    repeatable,
    repeatable_batch,
    scan_xadd,
    stamp,
)


def words(text: str) -> list[bytes]:
    return [w.encode() for w in text.split()]


# ---------------------------------------------------------------- IDMP stamping


@pytest.mark.parametrize(
    ("argv", "stamped"),
    [
        ("XADD s * f v", "XADD s IDMP p 1 * f v"),
        ("xadd s MAXLEN ~ 10 * f v", "xadd s IDMP p 1 MAXLEN ~ 10 * f v"),
        ("XADD s NOMKSTREAM MINID 5 LIMIT 3 ACKED * f v", None),  # stamped: checked below
        ("XADD s 1-1 f v", "XADD s 1-1 f v"),  # an explicit ID: left alone
        ("XADD s 5-* f v", "XADD s 5-* f v"),
        ("XADD s IDMP q i * f v", "XADD s IDMP q i * f v"),  # already idempotent
        ("XADD s IDMPAUTO q * f v", "XADD s IDMPAUTO q * f v"),
        ("XLEN s", "XLEN s"),
    ],
)
def test_stamp_adds_idmp_only_to_auto_id_xadds_without_one(argv: str, stamped: str | None) -> None:
    out = stamp(words(argv), b"p", b"1")
    if stamped is None:
        assert out[:5] == words("XADD s IDMP p 1") and out[5:] == words(argv)[2:]
    else:
        assert out == words(stamped)


def test_a_stamped_xadd_parses_as_the_engine_parses_it() -> None:
    from xstream.engine import Engine  # noqa: PLC0415

    engine = Engine()
    argv = Stamper("me").stamp(words("XADD s MAXLEN ~ 10 NOMKSTREAM * f v"))
    assert argv[2:5] == [b"IDMP", b"me", b"1"]
    first = engine.execute(words("XADD s * a b"), 1000).reply
    added = engine.execute(argv, 2000).reply
    again = engine.execute(argv, 3000).reply  # the repeat: the original ID, nothing appended
    assert added == again != first
    assert engine.execute(words("XLEN s"), 3000).reply == 2


def test_a_stamper_counts_per_client_and_names_a_random_producer() -> None:
    a, b = Stamper(), Stamper()
    assert a.producer.startswith(b"xstream-client:") and a.producer != b.producer
    ids = [a.stamp(words("XADD s * f v"))[4] for _ in range(3)]
    assert ids == [b"1", b"2", b"3"]
    assert a.stamp(words("XLEN s")) == words("XLEN s")
    assert a.stamp(words("XADD s 1-1 f v"))[2] == b"1-1"
    assert a.stamp(words("XADD s * f v"))[4] == b"4"  # nothing else used a number


def test_scan_xadd_finds_the_id_after_the_options() -> None:
    shape = scan_xadd(words("XADD s KEEPREF IDMP p i MAXLEN = 3 * f v"))
    assert shape is not None and (shape.id_index, shape.auto, shape.producer) == (9, True, b"p")
    assert scan_xadd(words("XADD s")) is None
    assert scan_xadd(words("XADD s MAXLEN")) is None


# ---------------------------------------------------------------- what may be sent twice


def test_repeatable_commands() -> None:
    assert is_idempotent_xadd(words("XADD s IDMP p 1 * f v"))
    assert is_idempotent_xadd(words("XADD s IDMPAUTO p * f v"))
    assert not is_idempotent_xadd(words("XADD s * f v"))
    assert not is_idempotent_xadd(words("XADD s 1-1 f v"))
    for yes in ("XRANGE s - +", "XLEN s", "WAIT 1 0", "PING", "XADD s IDMP p 1 * f v"):
        assert repeatable(words(yes)), yes
    for no in ("XADD s * f v", "XACK s g 1-1", "XREADGROUP GROUP g c STREAMS s >", "NOSUCH x"):
        assert not repeatable(words(no)), no


def test_a_pipeline_is_repeatable_when_all_its_commands_are_and_ids_stay_remembered() -> None:
    idmp = [words(f"XADD s IDMP p {i} * f v") for i in range(STAMP_WINDOW)]
    assert repeatable_batch([*idmp, words("XLEN s")])
    assert not repeatable_batch([*idmp, words("XADD s IDMP p x * f v")])  # one too many for p
    assert repeatable_batch([*idmp, words("XADD s IDMP q x * f v")])  # another producer
    assert repeatable_batch([*idmp, words("XADD t IDMP p x * f v")])  # another key
    assert not repeatable_batch([words("XLEN s"), words("XDEL s 1-1")])


# ---------------------------------------------------------------- what a failure means


def fail(details: str, *, status: str = "") -> Failure:
    """A command error, or with `status` a transport failure."""
    return Failure("n1:7700", status or "UNKNOWN", details, command_error=not status)


@pytest.mark.parametrize(
    ("failure", "outcome"),
    [
        (fail("READONLY You can't write against a read only replica."), Outcome.REFUSED),
        (fail("READONLY You can't write against a deposed primary: ..."), Outcome.REFUSED),
        (fail("MISCONF Errors writing to the AOF file: No space left on device"), Outcome.REFUSED),
        (fail("LEASELOST the lease lapsed"), Outcome.UNKNOWN),
        (fail("ACKTIMEOUT write applied on the primary ..."), Outcome.UNKNOWN),
        (fail("NOREPLICAS Not enough good replicas to write."), Outcome.FAILED),
        (fail("ERR syntax error"), Outcome.FAILED),
        (fail("failed to connect: Connection refused", status="UNAVAILABLE"), Outcome.NOT_SENT),
        (fail("Socket closed", status="UNAVAILABLE"), Outcome.UNKNOWN),
        (fail("Deadline Exceeded", status="DEADLINE_EXCEEDED"), Outcome.UNKNOWN),
        (fail("too large", status="RESOURCE_EXHAUSTED"), Outcome.BROKEN),
    ],
)
def test_classify(failure: Failure, outcome: Outcome) -> None:
    assert classify(failure) is outcome


def test_retry_rules() -> None:
    for failover in (False, True):
        assert retry_write(Outcome.NOT_SENT, repeatable=False, failover=failover)
        assert retry_write(Outcome.REFUSED, repeatable=False, failover=failover) is failover
        assert retry_write(Outcome.UNKNOWN, repeatable=True, failover=failover)
        assert not retry_write(Outcome.UNKNOWN, repeatable=False, failover=failover)
        assert not retry_write(Outcome.FAILED, repeatable=True, failover=failover)
        assert not retry_write(Outcome.BROKEN, repeatable=True, failover=failover)


def test_a_read_moves_on_when_a_replica_is_behind_or_out_of_reach() -> None:
    for failover in (False, True):
        assert next_node_for_read(fail("TRYAGAIN replica at offset 5 ..."), failover=failover)
        assert next_node_for_read(fail("Socket closed", status="UNAVAILABLE"), failover=failover)
        assert not next_node_for_read(fail("ERR syntax error"), failover=failover)
    late = fail("Deadline Exceeded", status="DEADLINE_EXCEEDED")
    assert next_node_for_read(late, failover=True)  # a paused node: ask another
    assert not next_node_for_read(late, failover=False)  # TimeoutError, as before


def test_a_pipeline_refused_in_band_only_when_every_write_answered_readonly() -> None:
    ro = "READONLY You can't write against a read only replica."
    assert refused_pipeline([True, False, True], [ro, None, ro])
    assert not refused_pipeline([True, True], [ro, None])  # one write was applied
    assert not refused_pipeline([False], [None])  # no writes: nothing to refuse
    assert not refused_pipeline([True], ["ERR syntax error"])


def test_error_lines_map_to_their_classes() -> None:
    lost = error_from_line("LEASELOST write applied but the lease lapsed; the outcome is unknown")
    assert type(lost) is LeaseLostError and str(lost).startswith("LEASELOST ")
    assert type(error_from_line("ACKTIMEOUT x")) is AckTimeoutError


# ---------------------------------------------------------------- who is primary


def test_the_primary_is_the_undeposed_one_with_the_highest_epoch() -> None:
    views = [
        NodeView("a:1", "primary", 1),  # partitioned old primary, not told yet
        NodeView("b:1", "primary", 2),
        NodeView("c:1", "replica", 2, follows="n2:7700"),
        NodeView("d:1", "primary", 3, deposed=True),
    ]
    found = resolve(views)
    assert (found.primary, found.epoch, found.replicas, found.follow) == ("b:1", 2, ["c:1"], None)


def test_without_a_primary_among_the_seeds_the_followed_address_is_tried() -> None:
    found = resolve(
        [
            NodeView("a:1", "replica", 1, follows="old:1"),
            NodeView("b:1", "replica", 2, follows="new:1"),
        ]
    )
    assert found.primary is None and found.follow == "new:1"
    assert resolve([NodeView("a:1", "replica", 1)]).follow is None
    assert resolve([]).primary is None


def test_backoff_doubles_to_its_cap_and_stops_at_the_deadline_or_the_tries() -> None:
    b = Backoff(0.05, 0.5, deadline=10.0)
    assert [b.pause(0.0) for _ in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
    assert b.pause(9.8) == pytest.approx(0.2)
    assert b.pause(10.0) is None
    counted = Backoff(0.05, 0.5, tries=2)
    assert [counted.pause(0.0) for _ in range(3)] == [0.05, 0.1, None]


# ---------------------------------------------------------------- the transport's loop


class FakeRpcError(grpc.RpcError):
    def __init__(self, status: grpc.StatusCode, details: str, command: bool = False) -> None:
        self._status, self._details = status, details
        self._trailer = (("xstream-error", "1"), ("xstream-epoch", "2")) if command else ()

    def code(self) -> grpc.StatusCode:
        return self._status

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailer


REFUSED = FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "READONLY deposed", command=True)
GONE = FakeRpcError(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses")
BROKE = FakeRpcError(grpc.StatusCode.UNAVAILABLE, "Socket closed")
BEHIND = FakeRpcError(grpc.StatusCode.UNAVAILABLE, "TRYAGAIN replica at offset 1 ...", command=True)


class Scripted(GrpcTransport):
    """A transport whose calls and Admin.Info answers are scripted: no network."""

    def __init__(self, views: list[NodeView], **kwargs: Any) -> None:
        super().__init__("a", 1, retry_backoff=0.001, **kwargs)
        self.views = views
        self.outcomes: list[Exception | None] = []  # what each call meets (None: success)
        self.calls: list[str] = []  # the address of each call

    def _survey(self, addresses: Sequence[str]) -> list[NodeView]:
        return [v for v in self.views if v.address in addresses]

    def _invoke(self, address: str, fn: Any) -> Any:
        self.calls.append(address)
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome
        self._note_epoch({"xstream-epoch": "2"})
        return len(self.calls)

    def run(self, outcomes: list[Exception | None], *, repeatable: bool) -> int:
        """A write whose tries meet `outcomes` in turn; the tries made."""
        self.outcomes, self.calls = list(outcomes), []
        return self._write(lambda ch: (0, None), repeatable=repeatable)

    def read(self, outcomes: list[Exception | None]) -> list[str]:
        """A read whose tries meet `outcomes` in turn; the addresses tried."""
        self.outcomes, self.calls = list(outcomes), []
        self._read(lambda ch: (0, None))
        return self.calls


def test_a_refused_write_goes_to_the_primary_the_seeds_name() -> None:
    views = [NodeView("a:1", "replica", 1, follows="b:1"), NodeView("b:1", "primary", 2)]
    t = Scripted(views, nodes=["b:1"])
    assert t.run([None], repeatable=False) == 1
    assert t.calls == ["b:1"]  # found before the first call
    t.views = [NodeView("a:1", "primary", 3), NodeView("b:1", "primary", 2, deposed=True)]
    assert t.run([REFUSED, None], repeatable=False) == 2
    assert t.calls == ["b:1", "a:1"] and t.epoch == 3


def test_an_advertised_primary_joins_the_seeds_when_no_seed_is_primary() -> None:
    t = Scripted([NodeView("a:1", "replica", 1, follows="b:1")], nodes=[])
    t.views.append(NodeView("b:1", "primary", 1))
    t.run([None], repeatable=False)
    assert t.seeds == ["a:1", "b:1"] and t.calls == ["b:1"]


def test_unknown_outcomes_are_retried_only_for_repeatable_writes() -> None:
    t = Scripted([NodeView("a:1", "primary", 1)], nodes=[])
    assert t.run([BROKE, GONE, None], repeatable=True) == 3
    with pytest.raises(ConnectionError, match="outcome is unknown"):
        t.run([BROKE, None], repeatable=False)
    assert t.run([GONE, None], repeatable=False) == 2  # never sent: safe


def test_single_node_mode_raises_readonly_and_gives_up_after_its_retries() -> None:
    t = Scripted([], retries=2)
    with pytest.raises(ReadOnlyError):
        t.run([REFUSED], repeatable=True)
    with pytest.raises(ConnectionError):
        t.run([GONE, GONE, GONE, None], repeatable=False)
    assert len(t.calls) == 3


def test_failing_over_gives_up_after_failover_timeout() -> None:
    t = Scripted([NodeView("a:1", "replica", 1)], nodes=[], failover_timeout=0.05)
    with pytest.raises(ReadOnlyError):
        t.run([REFUSED] * 10_000, repeatable=False)
    assert 1 < len(t.calls) < 10_000


def test_the_epoch_seen_is_sent_with_every_call() -> None:
    t = Scripted([NodeView("a:1", "primary", 1)], nodes=[])
    t.run([None], repeatable=False)  # the reply's trailer says epoch 2
    assert dict(t._meta(7)) == {"xstream-epoch": "2", "xstream-offset": "7"}


def test_a_read_passes_by_a_replica_that_was_behind_then_goes_to_the_primary() -> None:
    views = [NodeView("a:1", "primary", 1), NodeView("r:1", "replica", 1)]
    t = Scripted([*views, NodeView("q:1", "replica", 1)], nodes=["r:1", "q:1"])
    t.read_from = "replica"
    assert t.read([BEHIND, BEHIND, None]) == ["r:1", "q:1", "a:1"]
    assert t.read([None]) == ["a:1"]  # both passed by for a while
    t._skip.clear()
    t.failover_timeout = 0.02
    with pytest.raises(TryAgainError):
        t.read([BEHIND] * 10_000)  # every node behind until failover_timeout: raised


def test_a_new_primary_behind_the_session_continues_the_session_from_its_offset() -> None:
    t = Scripted([NodeView("a:1", "primary", 1, offset=100)], nodes=["b:1"])
    t.rediscover()
    t.session_offset = t.last_offset = 100
    t.views = [NodeView("b:1", "primary", 2, offset=60)]  # a's last 40 bytes were cut back
    t.rediscover()
    assert (t.primary, t.session_offset, t.last_offset) == ("b:1", 60, 60)
