"""Faults a disk really produces, on real processes: a full file system (a tiny tmpfs), fsync
failing with EIO (strace's fault injection on the running node), a flipped byte in the middle
of a log, a primary that comes back with less than its replica. After each: no acknowledged
write is lost on any node, no failed write is visible anywhere, and the node says what is
wrong."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Cluster, Node, poll

from xstream.client import Client, ResponseError

# The only skips here, and only outside CI (CI runs as root, so there these tests always run):
# a file system that can fill is a tmpfs, and mount(2) needs root (an unprivileged user
# namespace could mount one, but the node and the test would then have to run inside it);
# attaching strace to a running node is ptrace(2) of a process that is not strace's child,
# which Yama's ptrace_scope 1 or more allows only to root (without Yama, or at 0, any process
# of the same user may, and the test runs).
YAMA = Path("/proc/sys/kernel/yama/ptrace_scope")


def _privileged(why: str) -> None:
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip(f"not root, outside CI: {why} needs root")


def _may_attach() -> None:
    scope = YAMA.read_text().strip() if YAMA.exists() else "0"
    if scope != "0":
        _privileged(f"attaching strace to a node (Yama's ptrace_scope is {scope})")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs; `_resize` grows it."""
    _privileged("mounting a tmpfs")
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _resize(mnt: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mnt)], check=True)


class Writer:
    """XADDs with unique values; what was acknowledged, and what failed with which error."""

    def __init__(self, client: Client, key: str = "s", value_bytes: int = 8192) -> None:
        self.client, self.key, self.pad = client, key, "x" * value_bytes
        self.acked: dict[str, str] = {}  # value -> id
        self.failed: dict[str, str] = {}  # value -> error line
        self.n = 0

    def write(self) -> bool:
        self.n += 1
        value = f"w{self.n}"
        try:
            eid = self.client.xadd(self.key, {"n": value, "pad": self.pad})
        except ResponseError as e:
            self.failed[value] = e.line
            return False
        self.acked[value] = eid.decode() if isinstance(eid, bytes) else eid
        return True

    def check(self, node: Node) -> None:
        """Every acked value is on `node` under its id; no failed value is."""
        c = Client("127.0.0.1", node.port, decode_responses=True)
        try:
            seen = {f["n"]: eid for eid, f in c.xrange(self.key, count=1_000_000)}
        finally:
            c.close()
        lost = [v for v, eid in self.acked.items() if seen.get(v) != eid]
        visible = [v for v in self.failed if v in seen]
        assert not lost, f"{node.address}: {len(lost)} acknowledged writes lost: {lost[:5]}"
        assert not visible, f"{node.address}: failed writes visible: {visible[:5]}"
        assert len(seen) == len(self.acked)


def _until_refused(w: Writer, limit: int = 5000) -> None:
    for _ in range(limit):
        if not w.write() and len(w.failed) >= 5:
            return
    pytest.fail(f"no write was refused in {limit} writes")


def test_a_full_disk_refuses_writes_and_loses_nothing(cluster: Cluster, tmpfs: Path) -> None:
    p = cluster._node("primary", ["--fsync", "always", "--disk-reserve-bytes", "0"])
    p.data_dir = tmpfs / "p"
    p.start()
    r = cluster.replica(p)
    w = Writer(cluster.client(p, retries=0))
    _until_refused(w)
    assert all(e.startswith("MISCONF Errors writing to the AOF file: No space left") for e in
               w.failed.values()), set(w.failed.values())  # fmt: skip
    assert p.events("disk_fault") and p.events("state_rolled_back")
    cluster.settled(p, [r])
    w.check(p)
    w.check(r)
    _resize(tmpfs, "64m")
    poll("writes to be taken again", w.write, timeout=15, every=0.2)
    assert p.events("disk_resumed")
    for _ in range(20):
        assert w.write()
    cluster.settled(p, [r])
    p.kill()
    p.start()
    cluster.settled(p, [r])
    w.check(p)
    w.check(r)
    assert p.digest() == r.digest()


def test_the_reserve_refuses_writes_before_the_disk_is_full(cluster: Cluster, tmpfs: Path) -> None:
    args = ["--fsync", "everysec", "--disk-reserve-bytes", str(2 << 20)]
    p = cluster._node("primary", args)
    p.data_dir = tmpfs / "p"
    p.start()
    w = Writer(cluster.client(p, retries=0))
    _until_refused(w)
    assert all("is below the reserve of 2097152 bytes" in e for e in w.failed.values())
    assert all(e.startswith("MISCONF ") for e in w.failed.values())
    assert not p.events("disk_fault")  # refused before anything failed
    assert p.events("disk_reserve_reached")
    assert p.info().offset > 0
    _resize(tmpfs, "64m")
    poll("writes to be taken again", w.write, timeout=15, every=0.2)
    w.check(p)


def _strace() -> str:
    path = shutil.which("strace")
    assert path is not None, "strace is missing (scripts/test.sh installs it)"
    return path


def test_fsync_eio_rolls_back_and_ships_nothing_that_failed(cluster: Cluster) -> None:
    _may_attach()
    strace = _strace()
    p = cluster.primary("--fsync", "always")
    r = cluster.replica(p)
    w = Writer(cluster.client(p, retries=0), value_bytes=64)
    for _ in range(50):
        assert w.write()
    assert p.proc is not None
    inject = subprocess.Popen(
        [strace, "-f", "-qq", "-o", "/dev/null", "-p", str(p.proc.pid),
         "-e", "trace=fsync", "-e", "inject=fsync:error=EIO"],
    )  # fmt: skip
    try:
        _until_refused(w)
        assert any(e.startswith("MISCONF Errors writing to the AOF file: Input/output error")
                   for e in w.failed.values()), set(w.failed.values())  # fmt: skip
        assert p.events("disk_fault")[0]["op"] == "fsync"
        cluster.settled(p, [r])
        w.check(p)
        w.check(r)
        assert not w.write()  # still refused: a failed fsync is never retried and trusted
    finally:
        inject.terminate()
        inject.wait(10)
    poll("writes to be taken again", w.write, timeout=15, every=0.2)
    for _ in range(20):
        assert w.write()
    cluster.settled(p, [r])
    p.kill()
    p.start()
    cluster.settled(p, [r])
    w.check(p)
    w.check(r)


def test_a_primary_refuses_a_damaged_log_and_recovers_from_its_replica(
    cluster: Cluster,
) -> None:
    p = cluster.primary("--fsync", "always")
    r = cluster.replica(p)
    w = Writer(cluster.client(p), value_bytes=64)
    for _ in range(200):
        assert w.write()
    cluster.settled(p, [r])
    p.stop()
    seg = sorted(p.data_dir.glob("aof-*.xlog"))[-1]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x01
    seg.write_bytes(bytes(data))
    cmd = [sys.executable, "-m", "xstream.cli", "primary", "--port", str(p.port),
           "--data-dir", str(p.data_dir)]  # fmt: skip
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 3
    assert f"{seg.name} at byte" in out.stderr and "will not serve it as a primary" in out.stderr
    assert seg.read_bytes() == bytes(data)  # nothing cut
    r.promote()
    p.restart_as_replica(r)
    poll("the damaged node to resync", lambda: p.info().link == "up")
    cluster.settled(r, [p])
    w.check(p)
    w.check(r)
    assert p.events("damage_set_aside") and p.events("damage_healed")
    assert list(p.data_dir.glob("*.corrupt-*"))


def test_a_replica_is_never_cut_back_by_a_primary_that_came_back_with_less(
    cluster: Cluster,
) -> None:
    p = cluster.primary("--fsync", "always")
    r = cluster.replica(p)
    w = Writer(cluster.client(p), value_bytes=64)
    for _ in range(50):
        assert w.write()
    cluster.settled(p, [r])
    r.stop()
    p.stop()
    seg = sorted(p.data_dir.glob("aof-*.xlog"))[-1]
    seg.write_bytes(seg.read_bytes()[: seg.stat().st_size // 2])  # lost, cut at any point
    p.start()
    r.start()
    poll("the primary to refuse its replica", lambda: p.events("primary_behind_replica"))
    with pytest.raises(ResponseError) as refused:
        w.client.xadd("s", {"n": "late"})
    assert refused.value.line.startswith("READONLY You can't write against this primary")
    assert "promote the replica" in refused.value.line
    assert r.info().offset > p.info().offset
    w.check(r)  # the replica kept everything
    r.promote()
    p.replicaof(r)
    cluster.settled(r, [p])
    w.check(p)
    w.check(r)
