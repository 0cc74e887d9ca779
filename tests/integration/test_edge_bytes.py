"""Bytes at the edge: requests a node cannot decode fail alone with INVALID_ARGUMENT and a
clear message, on every service, and the node keeps serving; error lines quoting bytes that
are not UTF-8 arrive as escapes (they used to leave the call unanswered); `xstream cli`
takes and prints binary keys and values."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
from conftest import Cluster, Node

from xstream.v1 import xstream_pb2 as pb

GARBAGE = b"\xff\xff\xff\xff\x0f"  # a field number 0x1fffffff... of a corrupt wire type


def raw_unary(node: Node, method: str, payload: bytes) -> tuple[grpc.StatusCode, str]:
    call = node.channel.unary_unary(method, request_serializer=None, response_deserializer=None)
    try:
        call(payload, timeout=5)
    except grpc.RpcError as e:
        return e.code(), e.details()
    raise AssertionError(f"{method} accepted garbage")


@pytest.mark.parametrize(
    "method",
    [
        "/xstream.v1.Streams/Execute",
        "/xstream.v1.Streams/XAdd",
        "/xstream.v1.Streams/IngestOne",
        "/xstream.v1.Admin/Info",
    ],
)
def test_garbage_request_is_invalid_argument(cluster: Cluster, method: str) -> None:
    p = cluster.primary()
    code, details = raw_unary(p, method, GARBAGE)
    assert code is grpc.StatusCode.INVALID_ARGUMENT, (code, details)
    assert details.startswith(f"{method}: undecodable request: "), details
    assert p.execute("XADD", "s", "1-1", "f", "v").value.bulk == b"1-1"  # still serving
    assert p.info().offset > 0


def test_garbage_in_a_request_stream_is_invalid_argument(cluster: Cluster) -> None:
    p = cluster.primary()
    ingest = p.channel.stream_unary(
        "/xstream.v1.Streams/Ingest", request_serializer=None, response_deserializer=None
    )

    def batches() -> Iterator[bytes]:
        yield pb.IngestBatch(key=b"s", elements=[b"f", b"v"], counts=[2]).SerializeToString()
        yield GARBAGE

    with pytest.raises(grpc.RpcError) as caught:
        ingest(batches(), timeout=5)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, caught.value
    assert "undecodable request" in (caught.value.details() or "")
    assert p.execute("XLEN", "s").value.integer == 1  # the first batch, applied as sent


def test_error_line_with_binary_argument_is_escaped(cluster: Cluster) -> None:
    p = cluster.primary()
    with pytest.raises(grpc.RpcError) as caught:
        p.execute(b"NOSUCHCMD", b"\xff\xfe")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == (
        "ERR unknown command 'NOSUCHCMD', with args beginning with: '\\xff\\xfe' "
    )
    reply = p.streams().Pipeline(
        pb.PipelineRequest(commands=[pb.Command(argv=[b"NOSUCHCMD", b"\xff"])]), timeout=5
    )
    assert reply.replies[0].error.startswith("ERR unknown command 'NOSUCHCMD'")
    assert "'\\xff'" in reply.replies[0].error


def test_cli_takes_and_prints_binary(cluster: Cluster) -> None:
    p = cluster.primary()
    xstream = [sys.executable, "-m", "xstream.cli", "cli", "--node", p.address]
    key, value = b"\xff\xfe", b"\xff"
    run = lambda *a: subprocess.run([*xstream, *a], capture_output=True, check=False)  # noqa: E731
    out = run(b"XADD", key, b"1-1", b"f", value)
    assert (out.returncode, out.stdout, out.stderr) == (0, b'"1-1"\n', b"")
    out = run(b"XRANGE", key, b"-", b"+")
    assert out.stdout.splitlines() == [b'1) 1) "1-1"', b'   2) 1) "f"', b'      2) "\\xff"']
    out = run(b"NOSUCHCMD", key)
    assert out.stdout.startswith(b"(error) ERR unknown command 'NOSUCHCMD'"), out
    assert b"'\\xff\\xfe'" in out.stdout and out.stderr == b""
    line = b"XLEN " + key + b"\n"
    piped = subprocess.run(xstream, input=line, capture_output=True, check=False)
    assert piped.stdout == b"(integer) 1\n", piped
