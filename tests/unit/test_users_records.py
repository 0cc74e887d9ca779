"""Users as replicated state (node/users.py): records, snapshots, full syncs, rebuilds.

A primary in-process logs users records; a replica fed its stream (the pair) has the same
users after each record; a restart from the store (snapshot meta plus records) rebuilds them;
a rollback of the log takes a users change back with it. Records carry hashes, never a
password.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from xstream.engine import Engine, StreamError
from xstream.node import records, users
from xstream.node.acl import Acl, User
from xstream.node.backlog import Backlog
from xstream.node.store import Store
from xstream.primary.primary import Primary
from xstream.replica.replica import Diverged, Replica


def _users(*lines: str) -> dict[str, User]:
    acl = Acl()
    for line in lines:
        name, *rules = line.split()
        acl.setuser(name, rules)
    return acl.users


def make_primary(directory: Path) -> Primary:
    store = Store(directory, "always")
    replay = users.Replay(Engine())
    store.recover(replay.engine, replay.record, on_meta=replay.snapshot)
    p = Primary(replay.engine, store, Backlog(1 << 20, store.written), {"replid": "r" * 40}, "p")
    if replay.users is not None:
        users.install(p.acl, replay.users)
    return p


def make_replica(directory: Path) -> Replica:
    store = Store(directory, "always")
    engine = Engine()
    store.recover(engine, engine.apply_record)
    return Replica(engine, store, 0, "r", "", "127.0.0.1:1")


def test_tokens_rebuild_every_kind_of_rule() -> None:
    found = _users(
        "a on >pw1 >pw2 ~k:* %R~r:* %W~w:* &chan:* +@read -xrange +xgroup|create",
        "b off nopass allkeys allchannels +@all -@dangerous",
        "c on #" + "ab" * 32 + " resetchannels skip-sanitize-payload",
        "d on nopass -@all +select|0 +xadd|x %R~p %W~p (~x +get) (%R~y* &c +@read)",
    )
    for name, user in found.items():
        again = users.rebuild(name, user.tokens())
        assert again.describe() == user.describe()
        assert again.allowed == user.allowed


def test_effects_carry_hashes_only() -> None:
    user = _users("alice on >s3cret-pw ~* +@all")["alice"]
    effect = users.setuser_effect(user)
    assert b"s3cret-pw" not in b" ".join(effect)
    assert b"#" + hashlib.sha256(b"s3cret-pw").hexdigest().encode() in effect
    assert effect[:4] == [b"ACL", b"SETUSER", b"alice", b"reset"]


def test_applied_setuser_deluser_load() -> None:
    base = users.builtin()
    alice = _users("alice on >x ~* +@all")["alice"]
    after = users.applied(base, [users.setuser_effect(alice)])
    assert set(after) == {"default", "alice"} and set(base) == {"default"}  # a new dict
    after = users.applied(after, [users.deluser_effect(["alice", "nobody"])])
    assert set(after) == {"default"}
    loaded = _users("bob on >y", "default off")
    after = users.applied({"default": base["default"], "zed": alice}, users.load_effects(loaded))
    assert users.same(after, loaded)


@pytest.mark.parametrize(
    "effects",
    [
        [[b"ACL", b"SETUSER", b"u", b"on"]],  # no reset: not what setuser_effect writes
        [[b"ACL", b"SETUSER", b"u", b"reset", b"+bogus"]],
        [[b"ACL", b"SETUSER", b"a b", b"reset"]],
        [[b"ACL", b"FLUSH"]],
        [[b"ACL", b"LOAD"]],  # no default user left
        [[b"ACL", b"DELUSER", b"default"]],
        [[b"ACL", b"LOAD"], [b"XADD", b"s", b"*", b"f", b"v"]],
    ],
)
def test_a_bad_users_record_is_corrupt(effects: list[list[bytes]]) -> None:
    with pytest.raises(records.CorruptRecordError):
        users.applied(users.builtin(), effects)


def test_full_sync_encoding() -> None:
    mine = _users("alice on >x ~a:* +@read", "default on >d resetkeys ~* +@all")
    assert users.same(users.decode(users.encode(mine)), mine)
    with pytest.raises(records.CorruptRecordError):
        users.decode(records.encode([[b"ACL", b"SETUSER", b"x", b"reset"]]))
    with pytest.raises(records.CorruptRecordError):
        users.decode(users.encode(mine)[:-1])


def test_the_pair_and_a_restart_have_the_primary_users(tmp_path: Path) -> None:
    p = make_primary(tmp_path / "p")
    r = make_replica(tmp_path / "r")
    shipped = 0

    def ship() -> None:
        nonlocal shipped
        data = p.store.read_log(shipped, 1 << 30, p.offset)  # no replica: the log has it
        r.on_records(shipped, data, p.offset, 0, False)
        shipped += len(data)
        assert users.same(r.acl.users, p.acl.users)

    alice = Acl().prepare("alice", ["on", ">pw", "~*", "+@all"])
    p.change_users([users.setuser_effect(alice)])
    asyncio.run(p.write([b"XADD", b"s", b"*", b"f", b"v"], None))
    ship()
    assert r.acl.authenticate("alice", b"pw") is not None and r.acl.from_data
    p.change_users([users.deluser_effect(["alice"])])
    ship()
    p.change_users(users.load_effects(_users("default on >d resetkeys ~* +@all", "bob on nopass")))
    ship()
    asyncio.run(p.write_snapshot())
    p.change_users([users.setuser_effect(Acl().prepare("carol", ["on", "nopass"]))])
    ship()
    assert r.engine.digest() == p.engine.digest()
    p.store.close()

    again = make_primary(tmp_path / "p")  # snapshot meta, then the record after it
    assert users.same(again.acl.users, p.acl.users) and again.acl.from_data


def test_a_replica_refuses_changes_and_a_bad_record_diverges(tmp_path: Path) -> None:
    r = make_replica(tmp_path / "r")
    with pytest.raises(StreamError, match=r"^READONLY You can.t write against a read only replica"):
        r.change_users([])
    bad = records.encode([[b"ACL", b"SETUSER", b"u", b"reset", b"+bogus"]])
    with pytest.raises(Diverged):
        r.on_records(0, bad, len(bad), 0, False)
    assert set(r.acl.users) == {"default"}


def test_a_rollback_takes_the_users_change_back(tmp_path: Path) -> None:
    p = make_primary(tmp_path / "p")
    p.change_users([users.setuser_effect(Acl().prepare("alice", ["on", "nopass"]))])
    end = p.offset
    asyncio.run(p.store.fsync_to(end))
    p.change_users([users.deluser_effect(["alice"])])
    p.change_users([users.setuser_effect(Acl().prepare("bob", ["on", "nopass"]))])
    p.store.truncate_to(end)  # as a failed fsync leaves it (store._fail_waiters)
    p._on_disk_fault(end)
    assert set(p.acl.users) == {"default", "alice"}


def test_a_rollback_past_every_users_record_is_the_builtin_default(tmp_path: Path) -> None:
    p = make_primary(tmp_path / "p")
    p.change_users(users.load_effects(_users("default on >pw resetkeys ~* +@all")))
    p.store.truncate_to(0)
    p._on_disk_fault(0)
    assert users.same(p.acl.users, users.builtin())


def test_the_config_fingerprint_file(tmp_path: Path) -> None:
    assert users.last_config(tmp_path) == ""
    fp = users.fingerprint(_users("default on >a"))
    assert fp != users.fingerprint(_users("default on >b"))
    users.note_config(tmp_path, fp)
    assert users.last_config(tmp_path) == fp
    (tmp_path / users.CONFIG_FILE).write_text("[1]")
    assert users.last_config(tmp_path) == ""


def test_a_node_promoted_with_its_own_users_logs_them(tmp_path: Path) -> None:
    """An elected node that never synced serves its config's users; once primary, they are
    data: logged, so its replicas and its own restart have them."""
    from xstream.server.config import NodeConfig  # noqa: PLC0415 (the upper floor's)
    from xstream.server.host import Host  # noqa: PLC0415

    replica = make_replica(tmp_path / "n")
    host = Host(NodeConfig("replica", data_dir=tmp_path / "n"), replica, Acl(requirepass="pw"))
    primary = asyncio.run(host.promote())
    assert primary.acl is host.acl and host.acl.from_data
    assert primary.acl.authenticate("default", b"pw") is not None
    primary.store.close()
    again = make_primary(tmp_path / "n")
    assert users.same(again.acl.users, Acl(requirepass="pw").users)
