"""Writers: threads appending unique values to a stream while faults happen, recording every op.

    w = Writer(history, Sender(cluster), "w1", "drill", acks="quorum")
    w.start(); ...fault...; w.stop()          # stop() joins: nothing of w's is in flight after

Each op is `XADD key IDMP <process> <seq> * v <process>-<seq>`: the IDMP pair makes retrying
an op safe (the repeat answers the original ID), so a writer retries an op whose attempt failed
or may have applied, with the same pair, until one answers an ID or `retry_for` runs out; the
op's outcome folds its attempts (history.Attempts). Values are unique per (process, seq); a
process name must not repeat within a history.

A sender says which node answered and at which epoch; it raises `AttemptError` with the
attempt's outcome (history.Outcome) otherwise:
- `Sender(topology)` fails over: it writes to the node `topology.primary()` names, asks again
  after any failed attempt, and sends the highest epoch it has seen (a stale primary refuses).
- `Sender(topology, pinned="n1")` writes to n1 only, whatever its role: the writer that
  stays with the old primary on its side of a partition.
- `ClientSender(client, name_of)` goes through xstream.client.Client (its own failover); its
  errors all count as UNKNOWN, since the client may have retried an attempt that applied
  (even a final MISCONF or READONLY says nothing of the attempts before it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import grpc

from xstream.client import DataError, XstreamError

from . import rpc
from .history import Attempts, History, Op, Outcome, outcome_of_error

WRITE_TIMEOUT = 2.0  # s, one attempt's deadline (a paused node answers nothing)
ACKS_TIMEOUT_MS = 1000  # the write concern's own timeout: ACKTIMEOUT before the deadline
BACKOFF = (0.02, 0.05)  # s, the first pause between an op's attempts, and the longest


class Topology(Protocol):
    """What a failing-over sender needs of the cluster (harness.Cluster is one)."""

    def primary(self) -> str | None: ...

    def address(self, name: str) -> str: ...

    def credentials(self, user: str) -> grpc.ChannelCredentials | None: ...


class AttemptError(Exception):
    def __init__(self, outcome: Outcome, error: str, node: str = "", epoch: int = 0) -> None:
        super().__init__(error)
        self.outcome = outcome  # FAILED (not applied) or UNKNOWN (maybe applied)
        self.error = error
        self.node = node
        self.epoch = epoch


class Answered(Protocol):
    """A sender: one attempt of one write; (reply, node, epoch) or AttemptError."""

    def send(self, argv: list[bytes], acks: str) -> tuple[Any, str, int]: ...


class Sender:
    def __init__(
        self, topology: Topology, *, pinned: str | None = None, timeout: float = WRITE_TIMEOUT
    ) -> None:
        self.topology = topology
        self.pinned = pinned  # the only node written to; None: the primary of the moment
        self.timeout = timeout  # s, one attempt's deadline
        self.target: str | None = pinned  # the node written to next; None: ask the topology
        self.seen_epoch = 0  # the highest epoch a reply carried
        self._channels: dict[str, grpc.Channel] = {}  # by address (a restart may change it)

    def send(self, argv: list[bytes], acks: str) -> tuple[Any, str, int]:
        node = self.target or self.topology.primary()
        if node is None:
            raise AttemptError(Outcome.FAILED, "no primary found")
        try:
            answer = rpc.execute(
                self._channel(node), argv, acks=acks, acks_timeout_ms=ACKS_TIMEOUT_MS,
                timeout=self.timeout, seen_epoch=self.seen_epoch,
            )  # fmt: skip
        except rpc.CommandError as e:
            self._lost(e.epoch)
            raise AttemptError(outcome_of_error(e.line), e.line, node, e.epoch) from None
        except grpc.RpcError as e:
            self._lost(0)
            outcome = Outcome.FAILED if rpc.not_sent(e) else Outcome.UNKNOWN
            text = f"{e.code().name}: {e.details()}"
            raise AttemptError(outcome, text, node) from None
        self.target = node
        self.seen_epoch = max(self.seen_epoch, answer.epoch)
        return answer.value, node, answer.epoch

    def _lost(self, epoch: int) -> None:
        """After a failed attempt: find the primary again (unless pinned)."""
        self.seen_epoch = max(self.seen_epoch, epoch)
        self.target = self.pinned

    def _channel(self, node: str) -> grpc.Channel:
        address = self.topology.address(node)
        if address not in self._channels:
            self._channels[address] = rpc.channel(address, self.topology.credentials("app"))
        return self._channels[address]

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()


class ClientSender:
    """Through the product's Client (made with the acks level it is used with)."""

    def __init__(self, client: Any, name_of: Callable[[str], str]) -> None:
        self.client = client  # xstream.client.Client, decode_responses=True
        self.name_of = name_of  # "host:port" -> node name ("" if unknown)

    def send(self, argv: list[bytes], acks: str) -> tuple[Any, str, int]:
        transport = self.client.transport
        try:
            reply = self.client.execute_command(*argv)
        except DataError:
            raise
        except XstreamError as e:
            node = self.name_of(str(getattr(transport, "primary", "")))
            raise AttemptError(Outcome.UNKNOWN, f"{type(e).__name__}: {e}", node) from None
        node = self.name_of(str(getattr(transport, "primary", "")))
        return reply, node, int(getattr(transport, "epoch", 0))

    def close(self) -> None:
        self.client.close()


def decode_id(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)


class Writer(threading.Thread):
    def __init__(
        self,
        history: History,
        sender: Answered,
        process: str,
        key: str,
        *,
        acks: str = "quorum",
        pace: float = 0.01,
        retry_for: float = 8.0,
    ) -> None:
        super().__init__(name=f"writer-{process}", daemon=True)
        self.history = history
        self.sender = sender
        self.process = process  # also the IDMP producer ID
        self.key = key
        self.acks = acks
        self.pace = pace  # s between ops
        self.retry_for = retry_for  # s an op is retried before it is given up as is
        self._stopping = threading.Event()
        self.crashed: BaseException | None = None  # a bug in the writer itself

    def run(self) -> None:
        seq = 0
        try:
            while not self._stopping.is_set():
                seq += 1
                self.write(seq)
                self._stopping.wait(self.pace)
        except BaseException as e:  # surfaced by stop(): a writer must not die silently
            self.crashed = e

    def write(self, seq: int) -> Op:
        value = f"{self.process}-{seq}"
        argv = [b"XADD", self.key.encode(), b"IDMP", self.process.encode(), str(seq).encode()]
        argv += [b"*", b"v", value.encode()]
        op = self.history.invoke(self.process, self.key, value, seq=seq, acks=self.acks)
        attempts, last = Attempts(), AttemptError(Outcome.FAILED, "not sent")
        deadline, backoff = time.monotonic() + self.retry_for, BACKOFF[0]
        while True:
            try:
                reply, node, epoch = self.sender.send(argv, self.acks)
            except AttemptError as f:
                attempts.add(f.outcome, f.error)
                last = f
                if time.monotonic() >= deadline or self._stopping.wait(backoff):
                    break
                backoff = min(backoff * 2, BACKOFF[1])
                continue
            attempts.add(Outcome.OK)
            self.history.complete(
                op, Outcome.OK, node=node, epoch=epoch, id=decode_id(reply),
                attempts=attempts.count,
            )  # fmt: skip
            return op
        self.history.complete(
            op, attempts.outcome, node=last.node, epoch=last.epoch,
            error=_errors(attempts.errors), attempts=attempts.count,
        )  # fmt: skip
        return op

    def halt(self) -> None:
        """Ask the writer to stop after the op in flight (its retries cut short)."""
        self._stopping.set()

    def stop(self, timeout: float = 15.0) -> None:
        """halt() and join; raises if the writer crashed."""
        self.halt()
        self.join(timeout)
        assert not self.is_alive(), f"writer {self.process} did not stop in {timeout} s"
        if self.crashed is not None:
            raise AssertionError(f"writer {self.process} crashed") from self.crashed


def _errors(errors: list[str]) -> str:
    """The first and the last two error texts of an op's attempts."""
    shown = errors if len(errors) <= 3 else [errors[0], "...", *errors[-2:]]
    return " | ".join(shown)


class Writers:
    """A set of writers started and stopped together (a context manager stops them)."""

    def __init__(self, *writers: Writer) -> None:
        self.all = list(writers)

    def __enter__(self) -> Writers:
        for w in self.all:
            w.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for w in self.all:
            w.halt()
        for w in self.all:
            w.stop()
