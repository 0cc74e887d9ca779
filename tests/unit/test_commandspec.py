"""node/commandspec.py: one row for every command and subcommand xstream answers, each run
with Redis's arity, its categories and flags spelt as Redis spells them.

(tests/compat/test_command_info_compat.py checks the rows themselves against redis-server.)
"""

from __future__ import annotations

from xstream.engine.commands import COMMANDS, SUBCOMMANDS
from xstream.node import aclcats
from xstream.node.commandspec import REDIS, SPECS, XSTREAM
from xstream.server.resp import commandinfo

# COMMAND INFO's flags in the order Redis writes them
FLAGS = (
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
    "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth",
    "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys", "allow_busy",
)  # fmt: skip


def test_every_command_answered_has_a_row_and_redis_arity() -> None:
    engine = [*COMMANDS.values(), *(c for subs in SUBCOMMANDS.values() for c in subs.values())]
    for cmd in engine:
        assert SPECS[cmd.fullname].arity == cmd.arity, cmd.fullname
    for name, info in commandinfo.TABLE.items():
        assert SPECS[name].arity == info.arity, name
        for sub in (*info.subcommands, *info.listed):
            assert SPECS[sub.name].arity == sub.arity, sub.name
    assert set(aclcats.TABLE) <= set(SPECS)
    assert not set(REDIS) & set(XSTREAM)


def test_rows_spell_flags_and_categories_in_redis_order() -> None:
    for name, spec in SPECS.items():
        assert list(spec.flags) == [f for f in FLAGS if f in spec.flags], name
        cats = spec.categories
        assert list(cats) == [c for c in aclcats.CATEGORIES if c in cats], name
        assert ("fast" in cats) != ("slow" in cats), name  # Redis: not @fast is @slow
        assert ("write" in spec.flags) == ("write" in cats), name
        assert ("fast" in spec.flags) == ("fast" in cats), name
        assert spec.first >= 0 and spec.step >= 0 and (spec.first == 0) == (spec.step == 0), name


def test_categories_as_redis_gives_them() -> None:
    assert aclcats.TABLE["llen"] == ("read", "list", "fast")
    assert aclcats.TABLE["del"] == ("keyspace", "write", "slow")
    assert aclcats.TABLE["xadd"] == ("write", "stream", "fast")
    assert "xreadgroup" in aclcats.commands_in("blocking")
    assert "lpush" in aclcats.commands_in("list") and "lpush" not in aclcats.commands_in("keyspace")
