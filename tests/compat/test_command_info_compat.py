"""COMMAND INFO, COMMAND LIST and ACL CAT against redis-server: what Redis says of every command
both answer.

For every command and subcommand xstream's COMMAND LIST names that redis-server also has,
COMMAND INFO's name, arity, flags, first key, last key, step and ACL categories are equal,
each in Redis's order (tips and key specs are not compared: xstream sends none). A
container's subcommands that xstream lists are each Redis's entry. For every ACL category,
ACL CAT lists the same of the commands both have. COMMAND LIST names every command and
subcommand both describe, and its FILTERBY ACLCAT and PATTERN select the same of them;
COMMAND GETKEYS finds the same keys or refuses alike (every shared command filled to its
arity, and the movable and tricky cases). This is
what clients route by (flags, key positions) and what ACL rules such as `+@fast` or `-@list`
select.

redis-server here is 7.0.15; xstream answers as Redis 8.8 (node/commandspec.py). Where 8.8's
command table differs from 7.0's, CHANGED names the command and what changed, and the test
checks that it still differs there (so the list cannot go stale) and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from redis_conn import RedisServer, xstream_node

# Redis 8.8's table where 7.0's differs, for commands xstream answers: field -> 8.8's value.
CHANGED: dict[str, dict[str, object]] = {
    # 7.2 dropped `noscript` from the blocking list commands (they run in scripts, unblocked)
    "blpop": {"flags": ["write", "blocking"]},
    "brpop": {"flags": ["write", "blocking"]},
    # 7.2 made WAIT a blocking command (flag and @blocking), no longer `noscript`
    "wait": {"flags": ["blocking"], "categories": ["@slow", "@blocking", "@connection"]},
}
FIELDS = ("name", "arity", "flags", "first", "last", "step", "categories")


@pytest.fixture(scope="module")
def clients(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    """(redis-server's client, xstream's), COMMAND's replies left raw."""
    for port in xstream_node(tmp_path_factory.mktemp("xstream-command-info")):
        pair = (redis.Redis(port=redis_server.port), redis.Redis(port=port))
        for c in pair:
            c.set_response_callback("COMMAND", lambda resp, **_: resp)
        yield pair
        for c in pair:
            c.close()


def fields(entry: list[object]) -> dict[str, object]:
    """COMMAND INFO's first seven fields by name, text decoded."""

    def text(v: object) -> object:
        return [text(x) for x in v] if isinstance(v, list) else (
            v.decode() if isinstance(v, bytes) else v
        )  # fmt: skip

    return dict(zip(FIELDS, (text(v) for v in entry[:7]), strict=True))


def info(client: redis.Redis, name: str) -> list[object] | None:
    reply = client.execute_command("COMMAND", "INFO", name)
    assert isinstance(reply, list) and len(reply) == 1
    return reply[0]  # type: ignore[no-any-return]


def names(client: redis.Redis) -> list[str]:
    return sorted(n.decode() for n in client.execute_command("COMMAND", "LIST"))


def test_every_shared_command_is_described_as_redis_does(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    theirs_client, ours_client = clients
    compared, differ = 0, {}
    for name in names(ours_client):
        theirs, ours = info(theirs_client, name), info(ours_client, name)
        assert ours is not None, name
        if theirs is None:  # 8.8's and xstream's own commands: not in 7.0
            continue
        compared += 1
        want, got = fields(theirs), fields(ours)
        want.update(CHANGED.get(name, {}))
        assert got == want, name
        differ[name] = {k: v for k, v in fields(theirs).items() if got[k] != v}
        subs = {s[0]: s for s in theirs[9]}  # type: ignore[index, union-attr]
        for sub in ours[9]:  # type: ignore[union-attr]
            if sub[0] in subs:  # (not 7.2's and 8's: CLIENT SETINFO, NO-TOUCH)
                assert fields(sub) == fields(subs[sub[0]]), sub[0]
            assert fields(sub) == fields(info(ours_client, sub[0].decode())), sub[0]  # type: ignore[arg-type]
    assert compared > 90
    assert {n for n, d in differ.items() if d} == set(CHANGED)  # each change still is one


def test_acl_categories_list_the_same_commands(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    theirs_client, ours_client = clients
    shared = set()  # every command and subcommand both describe
    for name in names(ours_client):
        ours, theirs = info(ours_client, name), info(theirs_client, name)
        if ours is not None and theirs is not None:
            subs = [sub[0].decode() for sub in ours[9]]  # type: ignore[union-attr]
            shared |= {name, *(sub for sub in subs if info(theirs_client, sub) is not None)}
    shared -= {n for n, change in CHANGED.items() if "categories" in change}
    categories = [c.decode() for c in ours_client.execute_command("ACL", "CAT")]
    assert categories == [c.decode() for c in theirs_client.execute_command("ACL", "CAT")]
    for cat in categories:
        theirs = {c.decode() for c in theirs_client.execute_command("ACL", "CAT", cat)}
        ours = {c.decode() for c in ours_client.execute_command("ACL", "CAT", cat)}
        assert ours & shared == theirs & shared, cat


def test_command_list_names_and_filters_as_redis_does(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    theirs_client, ours_client = clients
    ours, theirs = set(names(ours_client)), set(names(theirs_client))
    described = {n for n in theirs if info(ours_client, n) is not None}
    assert {"config|get", "xgroup|create", "xinfo|stream"} <= described
    assert described <= ours  # every (sub)command both describe is listed, as Redis lists it
    shared = ours & theirs

    def listed(client: redis.Redis, kind: str, value: str) -> set[str]:
        reply = client.execute_command("COMMAND", "LIST", "FILTERBY", kind, value)
        return {n.decode() for n in reply}

    same_cats = shared - {n for n, change in CHANGED.items() if "categories" in change}
    for cat in [c.decode() for c in ours_client.execute_command("ACL", "CAT")]:
        want = listed(theirs_client, "ACLCAT", cat) & same_cats
        assert listed(ours_client, "ACLCAT", cat) & same_cats == want, cat
    for pattern in ("x*", "config*", "*|help", "client|*", "nosuch*"):
        want = listed(theirs_client, "PATTERN", pattern) & shared
        assert listed(ours_client, "PATTERN", pattern) & shared == want, pattern


def getkeys(client: redis.Redis, argv: list[str]) -> object:
    """COMMAND GETKEYS's reply to `argv`, or its error's text."""
    try:
        reply = client.execute_command("COMMAND", "GETKEYS", *argv)
    except redis.ResponseError as e:
        return str(e)
    return [k.decode() for k in reply]


GETKEYS_CASES = [
    "XREAD STREAMS a b c",  # an odd count after STREAMS: the first half
    "XREAD COUNT 1 a",  # no STREAMS: Invalid arguments
    "XREAD STREAMS a",  # arity first
    "XREADGROUP GROUP streams c STREAMS a b 0 0",  # a group named like the keyword
    "XREADGROUP GROUP g STREAMS STREAMS a 0",
    "XINFO NOSUCH s",  # a container's unknown subcommand
    "NOSUCH k",
    "PING x",  # no key arguments, before the arity
    "CONFIG GET x",
    "XLEN a b",
    "COPY a b REPLACE",
    "RENAME a b",
    "BLPOP a b 0",
    "OBJECT ENCODING k",
    "DEL a b c",
]


def test_getkeys_finds_the_keys_redis_finds(clients: tuple[redis.Redis, redis.Redis]) -> None:
    """For every (sub)command both describe, filled to its arity and two words past it, and
    for the cases above: the same keys, or the same refusal."""
    theirs_client, ours_client = clients
    compared = 0
    for name in names(ours_client):
        theirs = info(theirs_client, name)
        if theirs is None or fields(theirs)["name"] != name:
            continue
        words = name.upper().split("|")
        arity = abs(int(fields(theirs)["arity"]))  # type: ignore[call-overload]
        for extra in (0, 2):
            argv = words + [f"k{i}" for i in range(max(arity - len(words), 1) + extra)]
            assert getkeys(ours_client, argv) == getkeys(theirs_client, argv), argv
            compared += 1
    assert compared > 150
    for case in GETKEYS_CASES:
        argv = case.split()
        assert getkeys(ours_client, argv) == getkeys(theirs_client, argv), case


def test_command_help_and_subcommand_arities(clients: tuple[redis.Redis, redis.Redis]) -> None:
    theirs_client, ours_client = clients
    ours = [line.decode() for line in ours_client.execute_command("COMMAND", "HELP")]
    theirs = [line.decode() for line in theirs_client.execute_command("COMMAND", "HELP")]
    assert ours[0] == theirs[0] and ours[-2] == theirs[-2] == "HELP"
    for argv in (["COUNT", "x"], ["HELP", "x"], ["GETKEYS"], ["GETKEYS", "XLEN"], ["NOSUCH"]):
        with pytest.raises(redis.ResponseError) as want:
            theirs_client.execute_command("COMMAND", *argv)
        with pytest.raises(redis.ResponseError) as got:
            ours_client.execute_command("COMMAND", *argv)
        assert str(got.value) == str(want.value), argv


def test_a_subcommand_by_its_full_name(clients: tuple[redis.Redis, redis.Redis]) -> None:
    theirs_client, ours_client = clients
    for name in ("xgroup|create", "xinfo|stream", "config|get", "client|list", "acl|setuser"):
        theirs, ours = info(theirs_client, name), info(ours_client, name)
        assert theirs is not None and ours is not None, name
        assert fields(ours) == fields(theirs), name
    for name in ("xgroup|nosuch", "nosuch|get", "nosuch"):
        assert info(theirs_client, name) is None and info(ours_client, name) is None, name


def test_docs_give_redis_since_and_group(clients: tuple[redis.Redis, redis.Redis]) -> None:
    theirs_client, ours_client = clients

    def docs(client: redis.Redis, name: str) -> dict[bytes, object]:
        reply = client.execute_command("COMMAND", "DOCS", name)  # redis-py makes it a dict
        assert isinstance(reply, dict) and list(reply) == [name.encode()], name
        doc = reply[name.encode()]
        assert isinstance(doc, dict), name
        return doc

    compared = 0
    for name in names(ours_client):
        if info(theirs_client, name) is None:
            continue
        ours, theirs = docs(ours_client, name), docs(theirs_client, name)
        assert (ours[b"since"], ours[b"group"]) == (theirs[b"since"], theirs[b"group"]), name
        compared += 1
    assert compared > 90
