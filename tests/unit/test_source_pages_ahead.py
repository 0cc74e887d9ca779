"""reading._pages asks for the next XNODES page as soon as a page arrives, before decoding it
and handing it to Spark: the node and gRPC work on the next page meanwhile. The requests
are the same, in the same order; a reader stopped early drops the one in flight. Pages are
answered here by an in-process engine when they are sent (nodes.send replaced)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.enginecalls import call
from xstream.engine import Engine, EngineConfig
from xstream.pipeline import arrow, nodes, reading
from xstream.v1 import xstream_pb2 as pb


class Sent:
    """A request answered when sent (what the node would read then)."""

    def __init__(self, engine: Engine, words: tuple[Any, ...], log: list[str]) -> None:
        self.reply = call(engine, *(str(w) for w in words))
        self.cursor = str(words[2])
        self.cancelled = False
        log.append(f"send {self.cursor}")

    def value(self) -> pb.Value:
        assert isinstance(self.reply, list)
        items = [pb.Value(null=pb.Null()) if x is None else pb.Value(bulk=x) for x in self.reply]
        return pb.Value(array=pb.Array(items=items))

    def cancel(self) -> None:
        self.cancelled = True


def _setup(monkeypatch: pytest.MonkeyPatch) -> tuple[Engine, list[str], list[Sent]]:
    e = Engine(EngineConfig(node_max_entries=10))
    for i in range(100):
        call(e, "XADD", "s", f"{i + 1}-0", "n", str(i))
    log: list[str] = []
    sent: list[Sent] = []

    def send(address: str, *words: Any, **_: Any) -> Sent:
        sent.append(Sent(e, words, log))
        return sent[-1]

    monkeypatch.setattr(nodes, "send", send)
    return e, log, sent


def _part(last: str) -> reading.Part:
    return reading.Part("s", "0-0", last, "node:1", 100, True, 1000, 25)


def test_the_next_page_is_asked_for_before_a_page_is_handed_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    e, log, _ = _setup(monkeypatch)
    pages = reading._pages(_part("100-0"), "0-0")
    first = next(pages)
    assert len(first) == 30  # nodes of 10 entries, until 25 are counted: three
    assert log == ["send 0-1", "send 31-0"]
    rest = list(pages)
    assert log == ["send 0-1", "send 31-0", "send 61-0", "send 91-0"]  # each once, in order
    rows = [r["id"] for p in [first, *rest] for r in arrow.batch("s", p).to_pylist()]
    assert rows == [x[0].decode() for x in call(e, "XRANGE", "s", "-", "+")]  # type: ignore[union-attr]


def test_a_reader_stopped_early_drops_the_page_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, sent = _setup(monkeypatch)
    pages = reading._pages(_part("100-0"), "0-0")
    next(pages)
    pages.close()
    assert [s.cancelled for s in sent] == [False, True]


def test_the_last_page_asks_for_none_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _, log, _ = _setup(monkeypatch)
    assert sum(len(p) for p in reading._pages(_part("20-0"), "0-0")) == 20
    assert log == ["send 0-1"]  # one page held the range: its reply's next is nil
