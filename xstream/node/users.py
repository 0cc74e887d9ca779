"""The node's users as replicated state: ACL changes are log records, snapshots carry users.

Users are state of the node floor, beside the engine's data set and never in it (the engine
knows nothing of ACLs: what it holds is keyed by databases and keys, its digest compares
data, and nothing in it needs a user). They travel the ways data travels:

    ACL SETUSER, DELUSER, LOAD on the primary   a users record, logged, shipped and applied
                                                in order with the data (Node.change_users)
    a snapshot file                             meta["users"]: every user, as rules
    a full sync                                 FullSync.users: the users record of a LOAD
    recovery, a replica's cut back, a primary's rollback, DEBUG RELOAD
                                                Replay: the snapshot's users, then the users
                                                records after it

A users record is a record of its own (never mixed with data effects), so its first
effect's first word, KIND, tells it apart: one comparison on the replica's apply path. Its
effects (rules are Redis's; a password only ever as `#<sha256 hex>`, never in clear):

    ACL SETUSER <name> reset <rule> ...   the user's whole state (User.tokens), created or
                                          replaced whatever it was before
    ACL DELUSER <name> ...                these users are gone
    ACL LOAD                              first of a record: the SETUSERs after it are every
                                          user there is (the others are gone)

So a record's outcome depends on nothing but the set of users before it, and a replica has
its primary's users at each record boundary. `applied` raises CorruptRecordError for any
other content (a replica then resyncs; recovery stops at it as damage).

The base of a history is the built-in default (`default on nopass ~* &* +@all`): a primary
whose users differ from it and are not in its data yet logs them as a LOAD before serving
(at its start, or when promoted in place with its own config's users), so a snapshot and a
log with no users in them mean the built-in default. A replica whose data holds no users
yet (`Acl.from_data` false) serves with its own config's users until its first sync.

Start-up config: `acl-config.json` in the data directory holds the fingerprint of the
--requirepass/--aclfile users the node last started with (a hash of hashes: nothing
secret). A primary started with a different config applies it as ACL LOAD would (a users
record): edit the file, restart the primary, and it takes effect. Started with the same
config, the users its data holds stand (runtime changes survive restarts). A replica or an
elected node only notes the fingerprint: its users are its primary's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xstream.engine import Engine, Result

from . import records
from .acl import Acl, User, apply_rule, default_user, valid_username
from .aclrules import AclError

KIND = b"ACL"
_SETUSER, _DELUSER, _LOAD = b"SETUSER", b"DELUSER", b"LOAD"
CONFIG_FILE = "acl-config.json"

Argv = list[bytes]
Users = dict[str, User]


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _s(word: bytes) -> str:
    return word.decode("utf-8", "surrogateescape")


def builtin() -> Users:
    """The users of a node nobody configured: `default on nopass ~* &* +@all`."""
    return {"default": default_user()}


# --- effects ------------------------------------------------------------------------------------


def setuser_effect(user: User) -> Argv:
    return [KIND, _SETUSER, _b(user.name), b"reset", *map(_b, user.tokens())]


def deluser_effect(names: Sequence[str]) -> Argv:
    return [KIND, _DELUSER, *map(_b, names)]


def load_effects(users: Mapping[str, User]) -> list[Argv]:
    """The record that makes `users` every user there is (sorted by name)."""
    return [[KIND, _LOAD], *(setuser_effect(users[n]) for n in sorted(users))]


def is_users_record(effects: Sequence[Sequence[bytes]]) -> bool:
    return bool(effects) and bool(effects[0]) and effects[0][0] == KIND


def same(a: Mapping[str, User], b: Mapping[str, User]) -> bool:
    """Whether two sets of users are the same users with the same rules."""
    return a.keys() == b.keys() and all(a[n].tokens() == b[n].tokens() for n in a)


# --- applying -----------------------------------------------------------------------------------


def applied(users: Mapping[str, User], effects: Sequence[Sequence[bytes]]) -> Users:
    """The users after one users record (a new dict; `users` is unchanged).
    CorruptRecordError if the record is not one `*_effect` writes."""
    out = dict(users)
    for effect in effects:
        if len(effect) < 2 or effect[0] != KIND:
            raise records.CorruptRecordError("a users record holds a data effect")
        sub = effect[1]
        if sub == _LOAD and len(effect) == 2:
            out = {}
        elif sub == _SETUSER and len(effect) >= 4 and effect[3] == b"reset":
            user = rebuild(_s(effect[2]), [_s(w) for w in effect[4:]])
            out[user.name] = user
        elif sub == _DELUSER:
            for name in effect[2:]:
                out.pop(_s(name), None)
        else:
            raise records.CorruptRecordError(f"unknown users effect {_s(sub[:32])!r}")
    if "default" not in out:
        raise records.CorruptRecordError("a users record left no default user")
    return out


def rebuild(name: str, tokens: Sequence[str]) -> User:
    """A user from its name and `User.tokens()`; CorruptRecordError if they do not apply."""
    if not valid_username(name):
        raise records.CorruptRecordError("a users record names an invalid user")
    user = User(name)
    try:
        for rule in ["reset", *tokens]:
            apply_rule(user, rule)
    except AclError as e:
        raise records.CorruptRecordError(f"a users record's rule does not apply: {e}") from None
    return user


def install(acl: Acl, users: Users) -> None:
    """The node's users are now `users`, from its data (a record, a snapshot, a full sync)."""
    acl.users = users
    acl.from_data = True


def rebuilt(acl: Acl, found: Users | None) -> None:
    """After a rebuild from the node's own snapshot and log: the users they hold; if none,
    the built-in default when the node's users came from data (the base of a history),
    else its own config's stay (a replica not synced yet)."""
    if found is not None:
        install(acl, found)
    elif acl.from_data:
        install(acl, builtin())


# --- snapshots and full syncs -------------------------------------------------------------------


def meta(acl: Acl) -> dict[str, Any]:
    """A snapshot's meta entry: every user as [name, rule, ...]; none while the node's users
    are its own config's (a replica not synced yet)."""
    return meta_of(acl.users) if acl.from_data else {}


def meta_of(users: Mapping[str, User]) -> dict[str, Any]:
    return {"users": [[n, *users[n].tokens()] for n in sorted(users)]}


def from_meta(rows: Any) -> Users:
    """The users of a snapshot's meta entry; ValueError if it is not one `meta` writes."""
    if not isinstance(rows, list) or not all(
        isinstance(r, list) and r and all(isinstance(w, str) for w in r) for r in rows
    ):
        raise ValueError("snapshot meta: users is not a list of rule lists")
    try:
        users = {r[0]: rebuild(r[0], r[1:]) for r in rows}
    except records.CorruptRecordError as e:
        raise ValueError(f"snapshot meta: {e}") from None
    if "default" not in users:
        raise ValueError("snapshot meta: no default user")
    return users


def encode(users: Mapping[str, User]) -> bytes:
    """The users as one record (a LOAD), as a full sync carries them."""
    return records.encode(load_effects(users))


def decode(blob: bytes) -> Users:
    """The users `encode` wrote; CorruptRecordError if `blob` is not that."""
    spans = list(records.scan(blob))
    if len(spans) != 1 or spans[0] != (0, len(blob)):
        raise records.CorruptRecordError("a full sync's users are not one whole record")
    effects = records.decode_payload(records.payload(blob, *spans[0]))
    if not effects or effects[0] != [KIND, _LOAD]:
        raise records.CorruptRecordError("a full sync's users are not a LOAD")
    return applied({}, effects)


class Replay:
    """A rebuild from a snapshot and the log after it (Store.recover, Store.load_upto): data
    records to `engine`, the snapshot's users and users records to `users` (None: the data
    held none)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.users: Users | None = None

    def snapshot(self, meta: Mapping[str, Any]) -> None:
        rows = meta.get("users")
        self.users = from_meta(rows) if rows is not None else None

    def record(self, effects: list[list[bytes]]) -> Result:
        if is_users_record(effects):
            self.users = applied(self.users if self.users is not None else builtin(), effects)
            return Result(None)
        return self.engine.apply_record(effects)


# --- the start-up config ------------------------------------------------------------------------


def fingerprint(users: Mapping[str, User]) -> str:
    """A digest of a set of users (their names and rules, passwords as hashes)."""
    text = "".join(f"user {n} {users[n].describe()}\n" for n in sorted(users))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def last_config(directory: Path) -> str:
    """The fingerprint of the config the node last started with; "" if none is noted."""
    try:
        data = json.loads((directory / CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return ""
    value = data.get("fingerprint", "") if isinstance(data, dict) else ""
    return value if isinstance(value, str) else ""


def note_config(directory: Path, fp: str) -> None:
    """Note the config's fingerprint (written whole, then renamed)."""
    tmp = directory / (CONFIG_FILE + ".tmp")
    with tmp.open("w") as f:
        json.dump({"fingerprint": fp}, f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(directory / CONFIG_FILE)
