"""The gRPC API at the edge: typed families, errors as status + Redis's line, malformed
requests changing nothing, health and reflection, the CLI and `xstream up`."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request

import grpc
from conftest import Cluster, free_ports, poll
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from xstream.protocol import from_value
from xstream.v1 import xstream_pb2 as pb

XSTREAM = [sys.executable, "-m", "xstream.cli"]


def status_of(call) -> tuple[grpc.StatusCode, str, dict[str, str]]:  # type: ignore[no-untyped-def]
    try:
        call()
    except grpc.RpcError as e:
        return e.code(), e.details(), dict(e.trailing_metadata() or ())
    raise AssertionError("the call succeeded")


def test_typed_families_match_their_argv(cluster: Cluster) -> None:
    p = cluster.primary()
    s = p.streams()
    fields = [pb.Field(field=b"f", value=b"1"), pb.Field(field=b"g", value=b"2")]
    added = s.XAdd(pb.XAddRequest(key=b"s", id="5-1", fields=fields))
    assert added.id == "5-1" and added.offset > 0
    s.XAdd(pb.XAddRequest(key=b"s", fields=[pb.Field(field=b"f", value=b"3")]))
    got = s.XRange(pb.XRangeRequest(key=b"s", count=1))
    assert [(e.id, [(f.field, f.value) for f in e.fields]) for e in got.entries] == [
        ("5-1", [(b"f", b"1"), (b"g", b"2")])
    ]
    assert len(s.XRange(pb.XRangeRequest(key=b"s", reverse=True)).entries) == 2
    assert s.XLen(pb.KeyRequest(key=b"s")).count == 2
    read = s.XRead(pb.XReadRequest(streams=[pb.StreamOffset(key=b"s", id="0")], count=5))
    assert [st.key for st in read.streams] == [b"s"] and len(read.streams[0].entries) == 2
    s.XGroup(pb.XGroupRequest(op=pb.XGroupRequest.CREATE, key=b"s", group=b"g", id="0"))
    rg = s.XReadGroup(
        pb.XReadGroupRequest(group=b"g", consumer=b"c", streams=[pb.StreamOffset(key=b"s", id=">")])
    )
    assert len(rg.streams[0].entries) == 2
    pending = s.XPending(pb.XPendingRequest(key=b"s", group=b"g"))
    assert pending.value.array.items[0].integer == 2
    assert s.XAck(pb.XAckRequest(key=b"s", group=b"g", ids=["5-1"])).count == 1
    info = s.XInfo(pb.XInfoRequest(op=pb.XInfoRequest.STREAM, key=b"s"))
    assert info.value.map.keys[0] == b"length"
    trim = pb.Trim(strategy=pb.Trim.MAXLEN, threshold="1")
    assert s.XTrim(pb.XTrimRequest(key=b"s", trim=trim)).count == 1
    assert s.XLen(pb.KeyRequest(key=b"s")).count == 1


# Exact error lines, one request per line (long lines: the texts are Redis's).
MALFORMED = [
    ([b"XADD", b"s", b"*"], "ERR wrong number of arguments for 'xadd' command"),
    ([b"XADD", b"s", b"*", b"f"], "ERR wrong number of arguments for 'xadd' command"),
    ([b"XADD", b"s", b"bad-id", b"f", b"v"], "ERR Invalid stream ID specified as stream command argument"),  # noqa: E501
    ([b"XADD", b"s", b"1-1", b"f", b"v"], "ERR The ID specified in XADD is equal or smaller than the target stream top item"),  # noqa: E501
    ([b"XRANGE", b"s", b"-", b"+", b"COUNT", b"99999999999999999999"], "ERR value is not an integer or out of range"),  # noqa: E501
    ([b"XREAD", b"COUNT", b"-5", b"STREAMS", b"s"], "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."),  # noqa: E501
    ([b"XADD", b"str", b"*", b"f", b"v"], "WRONGTYPE Operation against a key holding the wrong kind of value"),  # noqa: E501
    ([b"XREADGROUP", b"GROUP", b"nog", b"c", b"STREAMS", b"s", b">"], "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"),  # noqa: E501
    ([b"NOSUCH", b"x"], "ERR unknown command 'NOSUCH', with args beginning with: 'x' "),
    ([], "ERR empty command"),
]  # fmt: skip


def test_malformed_requests_get_errors_and_change_nothing(cluster: Cluster) -> None:
    p = cluster.primary()
    p.execute("XADD", "s", "5-5", "f", "v")
    p.execute("SET", "str", "x")
    before, offset = p.digest(), p.info().offset
    for argv, line in MALFORMED:
        code, details, trailer = status_of(lambda a=argv: p.streams().Execute(pb.Command(argv=a)))
        assert details == line, argv
        assert trailer["xstream-error"] == "1"
        assert code in (
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.FAILED_PRECONDITION,
            grpc.StatusCode.NOT_FOUND,
        )
    s = p.streams()
    for call in (
        lambda: s.XAdd(pb.XAddRequest(key=b"s")),  # no fields
        lambda: s.XAdd(pb.XAddRequest(key=b"s", id="x", fields=[pb.Field(field=b"f")])),
        lambda: s.XRange(pb.XRangeRequest(key=b"s", start="nope")),
        lambda: s.XLen(pb.KeyRequest(key=b"str")),
    ):
        status_of(call)
    bad = pb.IngestBatch(key=b"s", counts=[2, 2], elements=[b"f", b"v", b"g"])
    assert s.Ingest(iter([bad])).error.startswith("ERR Ingest batch")
    odd = pb.IngestBatch(key=b"s", counts=[3], elements=[b"f", b"v", b"g"])
    assert s.Ingest(iter([odd])).error == "ERR wrong number of arguments for 'xadd' command"
    assert s.IngestOne(bad).error == s.Ingest(iter([bad])).error
    assert s.IngestOne(odd).error == s.Ingest(iter([odd])).error
    piped = s.Pipeline(
        pb.PipelineRequest(
            commands=[pb.Command(argv=[b"XLEN", b"s"]), pb.Command(argv=[b"XADD", b"s", b"*"])]
        )
    )
    assert piped.replies[0].value.integer == 1
    assert piped.replies[1].error == "ERR wrong number of arguments for 'xadd' command"
    assert p.digest() == before and p.info().offset == offset


def test_ingest_one_answers_as_an_ingest_stream_of_one_message(cluster: Cluster) -> None:
    p = cluster.primary()
    s = p.streams()
    batch = pb.IngestBatch(key=b"s", counts=[2, 4], elements=[b"a", b"1", b"b", b"2", b"c", b"3"])
    batch.concern.CopyFrom(pb.WriteConcern())
    one = s.IngestOne(batch)
    streamed = s.Ingest(iter([batch]))
    for reply in (one, streamed):
        assert (reply.entries, reply.batches, reply.error) == (2, 1, "")
        assert len(reply.first_ids) == len(reply.last_ids) == 1
    assert one.offset < streamed.offset == p.info().offset
    entries = from_value(p.execute("XRANGE", "s", "-", "+").value)
    ids = [e[0].decode() for e in entries]  # type: ignore[index,union-attr]
    assert ids == [one.first_ids[0], one.last_ids[0], streamed.first_ids[0], streamed.last_ids[0]]


def test_health_and_reflection_are_served(cluster: Cluster) -> None:
    p = cluster.primary()
    health = health_pb2_grpc.HealthStub(p.channel).Check(health_pb2.HealthCheckRequest())
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(p.channel)
    (resp,) = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = {s.name for s in resp.list_services_response.service}
    assert {"xstream.v1.Streams", "xstream.v1.Admin", "xstream.v1.Replication"} <= names


def test_cli_help_everywhere() -> None:
    for sub in ([], ["primary"], ["replica"], ["up"], ["info"], ["cli"], ["shell"]):
        out = subprocess.run([*XSTREAM, *sub, "--help"], capture_output=True, text=True, check=True)
        assert "usage: xstream" in out.stdout


def test_cli_and_info_against_a_cluster(cluster: Cluster) -> None:
    p = cluster.primary()
    r1 = cluster.replica(p)
    run = lambda *a: subprocess.run([*XSTREAM, *a], capture_output=True, text=True, check=False)  # noqa: E731
    out = run("cli", "--node", p.address, "XADD", "s", "7-1", "f", "v")
    assert out.stdout == '"7-1"\n' and out.returncode == 0
    cluster.settled(p, [r1])
    out = run("cli", "--node", r1.address, "XRANGE", "s", "-", "+")
    assert out.stdout.splitlines() == ['1) 1) "7-1"', '   2) 1) "f"', '      2) "v"']
    out = run("cli", "--node", r1.address, "XADD", "s", "*", "f", "v")
    assert out.stdout.startswith("(error) READONLY You can't write") and out.returncode == 1
    info = run("info", "--node", r1.address).stdout
    assert re.search(r"^role: +replica$", info, re.M), info
    assert re.search(rf"^primary: +{p.address}$", info, re.M), info
    assert re.search(r"^behind primary: +\d+ bytes, \d+ ms$", info, re.M), info
    info = run("info", "--node", p.address).stdout
    assert re.search(r"^role: +primary$", info, re.M), info
    assert re.search(rf"^  {r1.address}: +online, acked offset ", info, re.M), info


def test_xstream_up_runs_a_primary_and_two_replicas_with_metrics(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # three consecutive free ports for each of gRPC, metrics and RESP (not RESP's default
    # 6379-6381, which another local server may hold)
    base, mport, rport = free_ports(3), free_ports(3), free_ports(3)
    log = tmp_path / "up.log"
    proc = subprocess.Popen(
        [*XSTREAM, "up", "--data-dir", str(tmp_path / "data"), "--port", str(base),
         "--metrics-port", str(mport), "--resp-port", str(rport)],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        addr = [f"127.0.0.1:{base + i}" for i in range(3)]

        def replicated() -> bool:
            assert proc.poll() is None, "xstream up stopped: " + log.read_text(errors="replace")
            add = [*XSTREAM, "cli", "--node", addr[0], "XADD", "s", "*", "f", "v"]
            if subprocess.run(add, capture_output=True, check=False).returncode != 0:
                return False  # not serving yet
            out = [
                subprocess.run(
                    [*XSTREAM, "cli", "--node", a, "XLEN", "s"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                for a in addr[1:]
            ]
            return all(o.startswith("(integer) ") and o != "(integer) 0\n" for o in out)

        poll("xstream up to replicate a write", replicated, timeout=60, every=0.5)
        body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read()
        assert b"xstream_repl_offset" in body and b"xstream_commands_total" in body
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        sys.stderr.write(log.read_text(errors="replace")[-5000:])
    assert proc.returncode == 0
    assert (tmp_path / "data" / "primary").is_dir()
    out = log.read_text()
    assert "xstream up: 3 nodes running; Ctrl-C stops them all" in out and "up: stopped" in out
    assert f"127.0.0.1:{base + 2}" in out and '"event"' not in out  # JSON lines go to files
    primary_log = (tmp_path / "data" / "logs" / "primary.log").read_text()
    assert '"event": "primary_ready"' in primary_log
