"""The RESP server's request parser: its compiled scan of whole, canonically framed requests
(RespParser._scanned) gives exactly what the state machine alone gives (the same commands,
the same protocol error at the same point) for any input, however framed, and any split of
it into reads."""

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


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    chunks, i = [], 0
    for n in cuts:
        chunks.append(data[i : i + n])
        i += n
    chunks.append(data[i:])
    return chunks


args = st.lists(st.binary(max_size=12), min_size=1, max_size=5)
# A canonical request framed otherwise, in one of the ways Redis reads alike or refuses.
reframed = st.tuples(
    args,
    st.sampled_from(
        [
            (b"$%d\r\n", b"$0%d\r\n"),  # a leading zero: refused
            (b"$%d\r\n", b"$+%d\r\n"),  # a sign: refused
            (b"$%d\r\n", b"$%d\rX"),  # any byte after the CR: skipped unchecked
            (b"\r\n$", b"XY$"),  # any two bytes after a bulk: skipped unchecked
            (b"*%d\r\n", b"*%d\n"),  # no CR: the line runs on
            (b"*%d\r\n", b"*0%d\r\n"),
            (b"*%d\r\n", b"*%d \r\n"),
        ]
    ),
).map(lambda a: _reframed(*a))


def _reframed(argv: list[bytes], change: tuple[bytes, bytes]) -> bytes:
    data = encode(argv)
    old, new = change
    if b"%d" not in old:  # after the last bulk but one (or the header, for one argument)
        i = data.rfind(old)
        return data[:i] + new + data[i + len(old) :]
    n = len(argv) if old.startswith(b"*") else len(argv[0])
    return data.replace(old % n, new % n, 1)


pieces = st.one_of(
    args.map(encode),  # canonical multibulk
    args.map(encode),
    reframed,
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
            b"*2147483648\r\n",
            b"*1\r\n$1000000000000000000000\r\n",
            b"$3\r\nabc\r\n",
        ]
    ),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(pieces, max_size=12), st.lists(st.integers(1, 40), max_size=30))
def test_the_scan_reads_as_the_state_machine(parts: list[bytes], cuts: list[int]) -> None:
    chunks = _split(b"".join(parts), cuts)
    assert _run(RespParser(LIMIT), chunks) == _run(RespParser(LIMIT, scan=False), chunks)


@settings(max_examples=100, deadline=None)
@given(st.lists(args, min_size=1, max_size=20))
def test_whole_canonical_requests_are_scanned(argvs: list[list[bytes]]) -> None:
    parser = RespParser(LIMIT)
    parser.feed(b"".join(map(encode, argvs)))
    assert [parser.next_command() for _ in argvs] == argvs
    assert parser.next_command() is None and parser.buffered == 0


def test_a_whole_canonical_request_with_a_bulk_past_the_limit_is_refused() -> None:
    data = encode([b"XADD", b"s", b"*", b"f", b"x" * (LIMIT + 1)]) + encode([b"PING"])
    refused = _run(requests.new_parser(LIMIT), [data])
    assert refused == _run(RespParser(LIMIT, scan=False), [data])
    assert refused == ["Protocol error: invalid bulk length"]
    at_limit = [b"XADD", b"s", b"*", b"f", b"x" * LIMIT]
    assert _run(requests.new_parser(LIMIT), [encode(at_limit)]) == [at_limit]


def test_a_pipeline_longer_than_the_scan_s_window_reads_whole() -> None:
    parser = requests.new_parser(LIMIT)
    argvs = [[b"XADD", b"s", b"*", b"f", b"x" * (i % 900)] for i in range(1200)]  # ~550 KB
    data = b"".join(encode(a) for a in argvs)
    for chunk in _split(data, [100_000, 300_000]):
        parser.feed(chunk)
    assert [parser.next_command() for _ in argvs] == argvs
    assert parser.next_command() is None


def test_new_parser_is_bounded_by_the_node_s_limit() -> None:
    parser = requests.new_parser(LIMIT)
    assert type(parser) is RespParser and parser.max_bulk_len == LIMIT and parser.scan


@pytest.mark.parametrize("scan", [True, False])
def test_next_alike_appends_a_run_of_one_command_then_gives_the_next(scan: bool) -> None:
    parser = RespParser(LIMIT, scan=scan)
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
