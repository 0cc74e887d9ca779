"""The RESP server's request parser: hiredis's fast path gives exactly what codec.RespParser
gives (the same commands, the same protocol error at the same point) for any input and any
split of it into reads, and the pure parser is used when hiredis is not installed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.server.resp import requests
from xstream.server.resp.codec import ProtocolError, RespParser, encode

LIMIT = 1000  # proto-max-bulk-len, small enough for inputs to cross it


def _run(parser: RespParser, chunks: list[bytes]) -> list[object]:
    """Every command (or the final protocol error's text) as the chunks arrive."""
    out: list[object] = []
    for chunk in chunks:
        parser.feed(chunk)
        try:
            while (argv := parser.next_command()) is not None:
                out.append(argv)
        except ProtocolError as e:
            out.append(e.message)
            return out
    return out


args = st.lists(st.binary(max_size=12), min_size=1, max_size=5)
pieces = st.one_of(
    args.map(encode),  # canonical multibulk
    args.map(encode),
    st.lists(st.sampled_from([b"PING", b"x", b'"a b"', b"'c'"]), max_size=3).map(
        lambda w: b" ".join(w) + b"\r\n"  # inline
    ),
    st.sampled_from(
        [
            b"*0\r\n",
            b"*-1\r\n",
            b"\r\n",
            b"*1\r\n+x\r\n",
            b"*1\r\n:1\r\n",
            b"*1\r\n$01\r\na\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"*2\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n",
            b"*1\r\n$2000\r\n",
            b"*+1\r\n$1\r\na\r\n",
            b"*1\r\n=5\r\ntxt:x\r\n",
            b'"unbalanced\r\n',
            b"*x\r\n",
            b"*1\r\n$-1\r\n",
            b"*99999999999\r\n",
            b"$3\r\nabc\r\n",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(pieces, max_size=12), st.lists(st.integers(1, 40), max_size=30))
def test_fast_parser_matches_the_pure_one(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    chunks, i = [], 0
    for n in cuts:
        chunks.append(data[i : i + n])
        i += n
    chunks.append(data[i:])
    fast = requests.new_parser(LIMIT)
    assert isinstance(fast, requests.FastRespParser)
    assert _run(fast, chunks) == _run(RespParser(LIMIT), chunks)


def test_a_whole_canonical_request_with_a_bulk_past_the_limit_is_refused_by_both() -> None:
    data = encode([b"XADD", b"s", b"*", b"f", b"x" * (LIMIT + 1)]) + encode([b"PING"])
    fast = requests.new_parser(LIMIT)
    assert isinstance(fast, requests.FastRespParser)
    refused = _run(fast, [data])
    assert refused == _run(RespParser(LIMIT), [data]) == ["Protocol error: invalid bulk length"]
    at_limit = [b"XADD", b"s", b"*", b"f", b"x" * LIMIT]
    assert _run(requests.new_parser(LIMIT), [encode(at_limit)]) == [at_limit]


def test_a_pipeline_of_canonical_requests_stays_on_the_fast_path() -> None:
    parser = requests.new_parser(LIMIT)
    argvs = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(1000)]
    parser.feed(b"".join(encode(a) for a in argvs))
    assert [parser.next_command() for _ in argvs] == argvs
    assert parser.next_command() is None
    assert isinstance(parser, requests.FastRespParser) and parser._reader is not None


def test_without_hiredis_the_pure_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests, "hiredis", None)
    parser = requests.new_parser(LIMIT)
    assert type(parser) is RespParser and parser.max_bulk_len == LIMIT


@pytest.mark.parametrize("fast", [True, False])
def test_next_alike_appends_a_run_of_one_command_then_gives_the_next(fast: bool) -> None:
    parser = requests.new_parser(LIMIT) if fast else RespParser(LIMIT)
    xadd = [b"XADD", b"s", b"*", b"f", b"v"]
    others = [[b"xadd", b"s", b"*", b"f", b"v"], [b"XADD", b"s", b"*", b"f", b"v", b"g"]]
    parser.feed(b"".join(map(encode, [xadd, others[0], xadd, others[1]])))
    batch = [xadd]
    assert parser.next_alike(b"XADD", 5, batch, 100) == others[0]  # another spelling
    assert batch == [xadd, xadd]
    assert parser.next_alike(b"XADD", 5, batch, 100) == others[1]  # another argc
    assert batch == [xadd, xadd, xadd]
    assert parser.next_alike(b"XADD", 5, batch, 100) is None  # the input ran dry
    parser.feed(encode(xadd) * 3)
    assert parser.next_alike(b"XADD", 5, batch, 5) is None  # the limit
    assert len(batch) == 5 and parser.next_command() == xadd
    parser.feed(encode(xadd) + b"*1\r\n$x\r\n")
    assert parser.next_alike(b"XADD", 5, batch, 100) is None  # a protocol error ...
    assert len(batch) == 6
    with pytest.raises(ProtocolError):  # ... raised by the next call
        parser.next_command()
