"""ACL rules, checks and the file format (node/acl.py, node/aclcats.py), Redis's texts."""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
from pathlib import Path

import pytest

from xstream.node import acl, aclcats
from xstream.node.acl import Acl
from xstream.node.aclrules import AclError
from xstream.node.base import SERVER_COMMANDS
from xstream.server.resp.commandinfo import EDGE_COMMANDS


def make(*rules: str, name: str = "u") -> tuple[Acl, acl.User]:
    a = Acl()
    a.setuser(name, list(rules))
    return a, a.users[name]


def test_a_users_repr_shows_no_password_hash() -> None:
    _, user = make("on", ">s3cret")
    digest = hashlib.sha256(b"s3cret").hexdigest()
    assert user.passwords == [digest]
    assert digest not in repr(user) and "s3cret" not in repr(user)


def test_default_user() -> None:
    a = Acl()
    assert a.listing() == ["user default on nopass sanitize-payload ~* &* +@all"]
    assert not a.requires_auth()
    assert a.check(a.default, [b"FLUSHALL"]) is None
    assert a.authenticate("default", b"anything") is a.default


def test_requirepass() -> None:
    a = Acl(requirepass="s3cret")
    digest = hashlib.sha256(b"s3cret").hexdigest()
    assert a.listing() == [f"user default on sanitize-payload #{digest} ~* &* +@all"]
    assert a.requires_auth()
    assert a.authenticate("default", b"nope") is None
    assert a.authenticate("default", b"s3cret") is a.default


def test_new_user_and_reader() -> None:
    a, _u = make()
    assert a.listing()[1] == "user u off sanitize-payload resetchannels -@all"
    a.setuser("reader", ["on", ">secret", "~*", "+@read"])
    r = a.users["reader"]
    h = hashlib.sha256(b"secret").hexdigest()
    assert r.describe() == f"on sanitize-payload #{h} ~* resetchannels -@all +@read"
    assert a.check(r, [b"XRANGE", b"s", b"-", b"+"]) is None
    d = a.check(r, [b"XADD", b"s", b"*", b"f", b"v"])
    assert d is not None and d.reason == "command" and d.object == "xadd"
    assert d.message == "User reader has no permissions to run the 'xadd' command"
    assert a.authenticate("reader", b"secret") is r
    assert a.authenticate("reader", b"secrex") is None
    assert a.authenticate("u", b"") is None  # off


def test_rules_order_and_subcommands() -> None:
    a, u = make("on", "nopass", "allkeys", "+@all", "-@dangerous", "+keys", "-xgroup|destroy")
    assert u.command_text() == "+@all -@dangerous +keys -xgroup|destroy"
    assert a.check(u, [b"KEYS", b"*"]) is None
    assert a.check(u, [b"FLUSHALL"]) is not None
    assert a.check(u, [b"XGROUP", b"CREATE", b"s", b"g", b"$"]) is None
    d = a.check(u, [b"XGROUP", b"DESTROY", b"s", b"g"])
    assert d is not None and d.object == "xgroup|destroy"
    a.setuser("u", ["+xgroup|destroy"])  # a repeated target moves to the end
    assert a.users["u"].command_text() == "+@all -@dangerous +keys +xgroup|destroy"
    a.setuser("u", ["-@all", "+acl|whoami"])
    u = a.users["u"]
    assert u.command_text() == "-@all +acl|whoami"
    assert a.check(u, [b"ACL", b"WHOAMI"]) is None
    assert a.check(u, [b"ACL", b"LIST"]) is not None


def test_key_patterns() -> None:
    a, u = make("on", "nopass", "+@all", "~events:*", "%R~logs:*", "%W~sink:*")
    assert u.key_text() == "~events:* %R~logs:* %W~sink:*"
    assert a.check(u, [b"XADD", b"events:1", b"*", b"f", b"v"]) is None
    assert a.check(u, [b"XLEN", b"logs:1"]) is None
    d = a.check(u, [b"XADD", b"logs:1", b"*", b"f", b"v"])
    assert d is not None and (d.reason, d.message) == ("key", "No permissions to access a key")
    assert a.check(u, [b"XADD", b"sink:1", b"*", b"f", b"v"]) is None
    assert a.check(u, [b"XLEN", b"sink:1"]) is not None
    assert a.check(u, [b"XREAD", b"STREAMS", b"events:a", b"logs:b", b"0", b"0"]) is None
    d = a.check(u, [b"XREAD", b"STREAMS", b"events:a", b"other", b"0", b"0"])
    assert d is not None and d.object == "other"
    assert a.check(u, [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"logs:x", b">"])
    # STREAMS is looked for past GROUP <group> <consumer> (Redis's key spec: startfrom 4), so a
    # group or consumer named "streams" is no keyword: the keys are what follows the real one
    for group, consumer in [(b"streams", b"c"), (b"g", b"STREAMS")]:
        read = [b"XREADGROUP", b"GROUP", group, consumer, b"STREAMS"]
        assert a.check(u, [*read, b"events:a", b">"]) is None
        d = a.check(u, [*read, b"other", b">"])
        assert d is not None and d.object == "other"
    a2, u2 = make("on", "nopass", "+@all", "~S*")
    d = a2.check(u2, [b"XREADGROUP", b"GROUP", b"streams", b"Sx", b"STREAMS", b"secret", b">"])
    assert d is not None and d.object == "secret"  # not [Sx, STREAMS]: both match S*
    assert a.check(u, [b"DEL", b"events:1", b"nope"]) is not None
    assert a.check(u, [b"COPY", b"logs:1", b"sink:2"]) is None
    assert a.check(u, [b"XINFO", b"STREAM", b"logs:1"]) is None
    assert a.check(u, [b"KEYS", b"*"]) is None  # no key arguments
    # XCFGSET names its stream (Redis 8.8's key spec): checked like any write
    assert a.check(u, [b"XCFGSET", b"other", b"IDMP-MAXSIZE", b"5"]) is not None
    assert a.check(u, [b"XCFGSET", b"sink:1", b"IDMP-MAXSIZE", b"5"]) is None
    assert a.check(u, [b"BLPOP", b"events:1", b"other", b"0"]) is not None
    assert a.check(u, [b"BLPOP", b"events:1", b"events:2", b"0"]) is None  # not the timeout
    assert a.check(u, [b"UNLINK", b"events:1", b"other"]) is not None


def test_function_and_script_flush_in_redis_categories() -> None:
    a, u = make("on", "nopass", "~*", "+@all", "-@write")
    assert a.check(u, [b"FUNCTION", b"FLUSH"]) is not None  # @write @slow @scripting
    assert a.check(u, [b"SCRIPT", b"FLUSH"]) is None  # @slow @scripting
    a, u = make("on", "nopass", "~*", "+@scripting")
    assert a.check(u, [b"FUNCTION", b"FLUSH"]) is None and a.check(u, [b"SCRIPT", b"FLUSH"]) is None


def test_setuser_errors_leave_user_unchanged() -> None:
    a, _u = make("on", ">pw", "~a*", "+get")
    before = a.listing()
    for rule, reason in [
        ("bar", "Syntax error"),
        ("%Q~x", "Syntax error"),
        ("+nosuch", "Unknown command or category name in ACL"),
        ("+@nosuch", "Unknown command or category name in ACL"),
        ("<other", "The password you are trying to remove from the user does not exist"),
        ("#abc", "The password hash must be exactly 64 characters and contain only "
                 "lowercase hexadecimal characters"),
    ]:  # fmt: skip
        with pytest.raises(AclError) as e:
            a.setuser("u", ["off", rule])
        assert str(e.value) == f"Error in ACL SETUSER modifier '{rule}': {reason}"
    a.setuser("v", ["allkeys"])
    with pytest.raises(AclError, match="after the \\* pattern"):
        a.setuser("v", ["~b*"])
    assert a.listing()[0:1] == before[0:1] and a.users["u"].describe() in before[1]


def test_passwords_and_reset() -> None:
    a, u = make("on", ">one", ">two", "<one")
    assert u.passwords == [hashlib.sha256(b"two").hexdigest()]
    a.setuser("u", ["nopass"])
    assert a.users["u"].passwords == [] and a.users["u"].nopass
    a.setuser("u", ["reset"])
    assert a.users["u"].describe() == "off sanitize-payload resetchannels -@all"


def test_deluser() -> None:
    a, _ = make()
    with pytest.raises(ValueError, match="The 'default' user cannot be removed"):
        a.deluser(["u", "default"])
    assert a.deluser(["u", "u", "nobody"]) == 1


def test_file_round_trip_and_errors() -> None:
    a = Acl()
    text = "user reader on >secret ~* +@read\n\nuser admin on >adm ~* &* +@all\n"
    users = a.load(text, "users.acl")
    a.users = users
    again = a.load(a.save())
    assert {n: u.describe() for n, u in again.items()} == {
        n: u.describe() for n, u in users.items()
    }
    for bad, msg in [
        ("nouser x", "users.acl:1 should start with user keyword"),
        ("user r on +bogus", "users.acl:1: Error in applying operation '\\+bogus': Unknown"),
        ("user r on\nuser r off", "WARNING: Duplicate user 'r' found on line 2. "),
        ("user r on (~x +get", "users.acl:1: Unmatched parenthesis in selector definition.$"),
        ("user r on +bogus\n\nnouser", "^users.acl:1: Error in applying .* ACL. users.acl:3 "),
    ]:
        with pytest.raises(ValueError, match=msg):
            a.load(bad, "users.acl")
    comments = a.load("# the readers\n  user reader on ~* +@read  \n#user x on\n")
    assert sorted(comments) == ["default", "reader"]


def test_log_counts_repeats() -> None:
    a, u = make("on", "nopass")
    d = a.check(u, [b"XLEN", b"s"])
    assert d is not None
    a.note(d, "u", "toplevel", "id=1", 1000)
    a.note(d, "u", "toplevel", "id=1", 2000)
    a.note(acl.auth_denial(), "u", "toplevel", "id=1", 3000)
    assert [(e.reason, e.count) for e in a.log] == [("auth", 1), ("command", 2)]


def test_every_served_command_is_in_the_table() -> None:
    names = {n.decode().lower() for n in SERVER_COMMANDS} | {
        n.decode().lower() for n in EDGE_COMMANDS
    }
    assert names - set(aclcats.TABLE) == set()
    for cats in aclcats.TABLE.values():
        assert set(cats) <= set(aclcats.CATEGORIES)


def test_categories() -> None:
    assert "xadd" in aclcats.commands_in("write") and "xadd" in aclcats.commands_in("stream")
    assert "xrange" in aclcats.commands_in("read")
    assert "flushall" in aclcats.commands_in("dangerous")
    assert "config|set" in aclcats.commands_in("admin") and "sync" in aclcats.commands_in("admin")


def test_fuzz_setuser_and_files() -> None:
    """Random bytes as rules and as files: AclError/ValueError or success, nothing else."""
    rnd = random.Random(14)
    alphabet = "+-~%&<>#!@|*RWrw onfalxg\0\t" + "".join(map(chr, range(0x20, 0x7F)))
    for _ in range(3000):
        a = Acl()
        rule = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))
        with contextlib.suppress(AclError, ValueError):
            a.setuser("f", [rule])
        raw = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))
        with contextlib.suppress(ValueError):
            a.load(("user x " + raw.decode("utf-8", "surrogateescape")), "f")
        for user in a.users.values():
            a.check(user, [raw or b"x", raw])
            a.check(user, [raw][: len(raw) % 2])  # and empty argvs


def test_exposure_needs_tls_or_a_password() -> None:
    from xstream.node.tls import TlsConfigError  # noqa: PLC0415
    from xstream.server.config import NodeConfig, check_exposure  # noqa: PLC0415

    exposed = NodeConfig("primary", host="0.0.0.0")
    with pytest.raises(TlsConfigError, match="without TLS and without a password"):
        check_exposure(exposed, tls=False, password=False)
    check_exposure(exposed, tls=False, password=True)
    check_exposure(exposed, tls=True, password=False)


def test_selectors_first_args_and_always_allowed() -> None:
    a, u = make("on", "nopass", "~a", "+get", "(~b", "+set)", "(~c +xadd)")
    assert u.describe().endswith("-@all +get (~b resetchannels -@all +set) "
                                 "(~c resetchannels -@all +xadd)")  # fmt: skip
    assert a.check(u, [b"GET", b"a"]) is None and a.check(u, [b"SET", b"b", b"1"]) is None
    d = a.check(u, [b"SET", b"q", b"1"])  # the key refusal outranks the command refusals
    assert d is not None and (d.reason, d.object) == ("key", "q")
    d = a.check(u, [b"XLEN", b"c"])
    assert d is not None and d.reason == "command"
    for argv in ([b"AUTH", b"x"], [b"HELLO"], [b"QUIT"], [b"RESET"]):
        assert a.check(a.users["u"], argv) is None  # whatever the rules
    a.setuser("f", ["-@all", "+select|0", "+xadd|x"])
    f = a.users["f"]
    assert a.check(f, [b"SELECT", b"0"]) is None and a.check(f, [b"SELECT", b"1"]) is not None
    a.setuser("f", ["-select"])  # a later rule naming the command drops its first args
    assert a.check(a.users["f"], [b"SELECT", b"0"]) is not None
    for rule, reason in [
        ("+xgroup|bogus", "Unknown command or category name in ACL"),
        ("-xadd|x", "Unknown command or category name in ACL"),
        ("+xgroup|create|x", "Allowing first-arg of a subcommand is not supported"),
        ("+xadd|", "Syntax error"),
        ("(~x +bogus)", "Unknown command or category name in ACL"),
    ]:
        with pytest.raises(AclError, match=re.escape(f"'{rule}': {reason}")):
            a.setuser("f", [rule])
    with pytest.raises(ValueError, match=re.escape("Unmatched parenthesis in acl selector "
                                                   "starting at '(~x'.")):  # fmt: skip
        a.setuser("f", ["(~x", "+get"])
    a.setuser("f", ["clearselectors", "%R", "%W~p", "%R~p", "&c", "&c"])
    assert a.users["f"].key_text() == "%R~ ~p" and a.users["f"].channels == ["c"]


def test_log_moves_a_repeat_to_the_front() -> None:
    a, u = make("on", "nopass")
    first, second = a.check(u, [b"XLEN", b"s"]), a.check(u, [b"GET", b"s"])
    assert first is not None and second is not None
    a.note(first, "u", "toplevel", "", 1000)
    a.note(second, "u", "toplevel", "", 1001)
    a.note(first, "u", "toplevel", "", 1002)
    assert [(e.object, e.count) for e in a.log] == [("xlen", 2), ("get", 1)]


def test_primary_password_file_gives_the_links_password(tmp_path: Path) -> None:
    from xstream.server.config import ConfigError, NodeConfig, read_primary_password  # noqa: PLC0415

    secret = tmp_path / "replica.password"
    secret.write_text("s3cret words\nignored\n")
    cfg = NodeConfig("replica", primary_password_file=secret)
    read_primary_password(cfg)
    assert cfg.primary_password == "s3cret words"
    for text, says in (("", "is empty"), ("\n", "is empty"), (None, "cannot read")):
        missing = tmp_path / "other"
        missing.unlink(missing_ok=True)
        if text is not None:
            missing.write_text(text)
        cfg = NodeConfig("replica", primary_password_file=missing)
        with pytest.raises(ConfigError, match=says):
            read_primary_password(cfg)
        assert cfg.primary_password == ""


def test_no_auth_commands_need_no_rule() -> None:
    from xstream.server.resp.commandinfo import TABLE  # noqa: PLC0415

    flagged = {name for name, info in TABLE.items() if "no_auth" in info.flags}
    assert flagged == acl.NO_AUTH
    a = Acl()
    a.users = a.load("user default off resetpass -@all\nuser app on >x ~* -@all +get\n", "f")
    for user in (a.users["default"], a.users["app"]):
        for argv in ([b"AUTH", b"app", b"x"], [b"HELLO", b"3"], [b"QUIT"], [b"RESET"]):
            assert a.check(user, argv) is None, (user.name, argv)
        assert a.check(user, [b"PING"]) is not None
