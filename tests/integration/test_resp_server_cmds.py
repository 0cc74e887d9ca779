"""Server commands over RESP (redis-py against a primary and a replica): INFO, CONFIG, TIME,
SAVE/BGSAVE/BGREWRITEAOF/LASTSAVE, DEBUG, WAITAOF, FUNCTION/SCRIPT FLUSH, SHUTDOWN."""

from __future__ import annotations

import socket
import time

import pytest
import redis
from conftest import Cluster, Node, free_port, poll

from xstream import builds


def _primary(cluster: Cluster, *args: str) -> tuple[Node, redis.Redis]:
    port = free_port()
    node = cluster.primary("--resp-port", str(port), *args)
    return node, redis.Redis(port=port, decode_responses=True)


def _replica(cluster: Cluster, primary: Node) -> tuple[Node, redis.Redis]:
    port = free_port()
    node = cluster.replica(primary, "--resp-port", str(port))
    return node, redis.Redis(port=port, decode_responses=True)


def _answers(r: redis.Redis) -> bool:
    try:
        return bool(r.ping())
    except redis.ConnectionError:
        return False


def _restart(node: Node, r: redis.Redis) -> None:
    node.stop()
    node.start()
    poll("the RESP port back", lambda: _answers(r))


def test_info_sections_parse_with_redis_py(cluster: Cluster) -> None:
    primary, r = _primary(cluster)
    replica, rr = _replica(cluster, primary)
    r.xadd("s", {"f": "v"})
    with pytest.raises(redis.ResponseError):
        r.xadd("s", {"f": "v"}, id="1-1")  # an error: counted in errorstats
    info = r.info("everything")
    assert info["redis_version"] == "8.8.0" and info["redis_mode"] == "standalone"
    assert info["arch_bits"] == 64 and info["process_id"] == primary.proc.pid  # type: ignore[union-attr]
    assert info["tcp_port"] == r.connection_pool.connection_kwargs["port"]
    assert info["uptime_in_seconds"] >= 0 and info["connected_clients"] >= 1
    assert info["blocked_clients"] == 0 and info["used_memory"] > 0
    assert info["rdb_changes_since_last_save"] >= 1 and info["aof_enabled"] == 1
    assert info["aof_rewrite_in_progress"] == 0 and info["rdb_last_save_time"] > 0
    assert info["total_commands_processed"] >= 2 and info["total_connections_received"] >= 1
    assert info["total_error_replies"] >= 1 and info["errorstat_ERR"]["count"] >= 1
    assert info["role"] == "master"
    # the node's engine build: the one this process chose too (same environment, same files)
    assert info["xstream_engine"] == ("compiled" if builds.ENGINE.compiled() else "pure")
    poll("the replica in INFO", lambda: r.info("replication")["connected_slaves"] == 1)
    assert r.info("replication")["slave0"]["port"] == replica.port
    assert info["db0"] == {"keys": 1, "expires": 0, "avg_ttl": 0, "subexpiry": 0}
    rinfo = rr.info("replication")
    assert rinfo["role"] == "slave" and rinfo["master_port"] == primary.port
    assert rinfo["master_link_status"] == "up"
    default = r.info()
    assert "errorstat_ERR" in default and "cluster_enabled" in default


def test_config_set_reaches_the_replica_and_survives_a_restart(cluster: Cluster) -> None:
    primary, r = _primary(cluster)
    replica, rr = _replica(cluster, primary)
    assert r.config_get("stream-node-max-entries") == {"stream-node-max-entries": "100"}
    assert r.config_set("stream-node-max-entries", 3) is True
    r.execute_command("CONFIG", "SET", "stream-idmp-duration", "50", "stream-idmp-maxsize", "7")
    want = {
        "stream-node-max-entries": "3",
        "stream-idmp-duration": "50",
        "stream-idmp-maxsize": "7",
    }
    assert r.config_get("stream-node-max-entries", "stream-idmp-*") == want
    poll("the replica's config", lambda: rr.config_get("stream-*") == r.config_get("stream-*"))
    with pytest.raises(redis.ReadOnlyError):
        rr.config_set("stream-node-max-entries", 5)
    for i in range(10):
        r.xadd("s", {"n": str(i)})
    assert r.xinfo_stream("s")["idmp-duration"] == 50
    _restart(primary, r)  # the log carries the XCONFIGSET record
    assert r.config_get("stream-node-max-entries") == {"stream-node-max-entries": "3"}
    r.save()  # now a snapshot carries it
    r.config_set("appendonly", "no")  # stored only: not in the data set
    _restart(primary, r)
    assert r.config_get("stream-*")["stream-node-max-entries"] == "3"
    assert r.config_get("appendonly") == {"appendonly": "yes"}
    cluster.settled(primary, [replica])
    assert replica.digest() == primary.digest()


def test_config_get_star_restores_and_errors(cluster: Cluster) -> None:
    _, r = _primary(cluster)
    everything = r.config_get("*")
    for name in ("appendonly", "save", "stream-node-max-bytes", "port", "appendfsync"):
        assert name in everything
    for name, value in everything.items():  # what a test harness does after each block
        assert r.config_set(name, value) is True, name
    assert r.config_get("nosuchparameter") == {}
    with pytest.raises(redis.ResponseError, match="Unknown option or number of arguments"):
        r.config_set("nosuchparameter", 1)
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("port", 1)
    assert r.config_resetstat() is True
    assert r.info("stats")["total_error_replies"] == 0


def test_time_and_saves(cluster: Cluster) -> None:
    primary, r = _primary(cluster)
    secs, usecs = r.time()
    assert abs(secs - time.time()) < 5 and 0 <= usecs < 1_000_000
    r.xadd("s", {"f": "v"})
    before = r.lastsave()
    time.sleep(1.1)  # LASTSAVE has one-second resolution
    assert r.save() is True
    assert r.lastsave() > before and r.info("persistence")["rdb_changes_since_last_save"] == 0
    r.xadd("s", {"f": "v"})
    assert r.info("persistence")["rdb_changes_since_last_save"] == 1
    assert r.bgsave() is True
    poll("the background save", lambda: r.info()["rdb_changes_since_last_save"] == 0)
    assert r.bgrewriteaof() is True
    poll("one snapshot", lambda: len(list(primary.data_dir.glob("snapshot-*"))) == 1)
    assert r.execute_command("WAITAOF", 1, 0, 0) == [1, 0]
    assert r.execute_command("FUNCTION", "FLUSH") == "OK"
    assert r.execute_command("SCRIPT", "FLUSH") == "OK"
    with pytest.raises(redis.ResponseError, match="unknown command 'EVAL'"):
        r.eval("return 1", 0)


def test_debug_is_refused_without_the_flag(cluster: Cluster) -> None:
    _, r = _primary(cluster)
    with pytest.raises(redis.ResponseError, match=r"^DEBUG command not allowed\. If the enable"):
        r.execute_command("DEBUG", "LOG", "hello")


def test_debug_reload_with_the_flag(cluster: Cluster) -> None:
    primary, r = _primary(cluster, "--enable-debug-command", "yes")
    r.xadd("s", {"f": "v"}, id="1-1")
    r.xgroup_create("s", "g", id="0")
    assert r.execute_command("DEBUG", "LOG", "### Starting test") == "OK"
    assert r.execute_command("DEBUG", "RELOAD") == "OK"
    assert r.xrange("s") == [("1-1", {"f": "v"})]
    assert r.xinfo_groups("s")[0]["name"] == "g"
    assert primary.events("debug_log")[0]["message"] == "### Starting test"


def test_shutdown_stops_the_node_after_a_snapshot(cluster: Cluster) -> None:
    primary, r = _primary(cluster)
    r.xadd("s", {"f": "v"})
    r.shutdown()  # redis-py expects the connection to close, as Redis does
    assert primary.proc is not None and primary.proc.wait(15) == 0
    assert len(list(primary.data_dir.glob("snapshot-*.xsnap"))) == 1
    primary.start()
    poll("the RESP port back", lambda: _answers(r))
    assert r.xlen("s") == 1


def _stats(sock: socket.socket) -> tuple[dict[str, str], int]:
    """INFO stats over a raw connection: its fields, and the reply's size on the wire."""
    sock.sendall(b"INFO stats\r\n")
    data = b""
    while not data.startswith(b"$") or len(data) < _whole(data):
        data += sock.recv(65536)
    body = data[data.index(b"\r\n") + 2 : -2].decode()
    fields = dict(line.split(":", 1) for line in body.splitlines() if ":" in line)
    return fields, len(data)


def _whole(data: bytes) -> int:
    """The size of the bulk reply `data` begins, once its header is in (else a size past it)."""
    if b"\r\n" not in data:
        return len(data) + 1
    head = data[: data.index(b"\r\n")]
    return len(head) + 2 + int(head[1:]) + 2


def test_info_counts_traffic_rates_and_expiry(cluster: Cluster) -> None:
    _, r = _primary(cluster)
    with socket.create_connection(("127.0.0.1", r.connection_pool.connection_kwargs["port"])) as s:
        before, size = _stats(s)
        s.sendall(b"PING\r\n")
        assert s.recv(16) == b"+PONG\r\n"
        after, _ = _stats(s)
    # exactly this connection's bytes between the two reads: PING and the second INFO in,
    # the first INFO's reply and PONG out
    delta_in = int(after["total_net_input_bytes"]) - int(before["total_net_input_bytes"])
    delta_out = int(after["total_net_output_bytes"]) - int(before["total_net_output_bytes"])
    assert (delta_in, delta_out) == (len(b"PING\r\nINFO stats\r\n"), size + len(b"+PONG\r\n"))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:  # ~0.5 s of pings: the rate is seen within 1.6 s
        r.ping()
    info = r.info("stats")
    assert info["instantaneous_ops_per_sec"] > 0 and info["instantaneous_output_kbps"] > 0
    assert info["total_forks"] == 0 and info["expired_keys"] == 0
    r.get("nokey")
    r.set("here", "v")
    r.get("here")
    info, again = r.info("stats"), r.info("stats")
    assert (info["keyspace_hits"], info["keyspace_misses"]) == (1, 1)
    assert again["keyspace_hits"] == 1  # INFO looks nothing up
    r.set("gone", "v", px=1)
    r.set("lazy", "v", px=1)
    time.sleep(0.01)
    r.set("lazy", "w", nx=True)  # the write finds it past its time (unless the cycle did)
    poll("the active cycle", lambda: r.info("stats")["expired_keys_active"] >= 1)
    poll("both expired", lambda: r.info("stats")["expired_keys"] == 2)
    assert r.info("stats")["expired_keys_active"] in (1, 2) and r.get("lazy") == "w"
    backlog = r.info("replication")
    assert backlog["repl_backlog_active"] == 1 and backlog["repl_backlog_size"] > 0
    first = backlog["repl_backlog_first_byte_offset"]
    assert backlog["repl_backlog_histlen"] == backlog["master_repl_offset"] - first + 1
    assert r.config_resetstat()
    info = r.info("stats")
    assert info["expired_keys"] == 0 and info["total_net_input_bytes"] < 100
