"""XCFGSET: the key is looked up before the arguments are read (as Redis 8.8's
xcfgsetCommand: a missing key or another type answers first), then each argument's error."""

from __future__ import annotations

import pytest
from enginecalls import call, engine, stream_of

from xstream.engine import StreamError
from xstream.engine.reply import ReplyMap


@pytest.mark.parametrize(
    ("key", "args", "error"),
    [
        ("nokey", ["IDMP-DURATION", -1], "ERR no such key"),
        ("nokey", ["BOGUS"], "ERR no such key"),
        ("nokey", [], "ERR no such key"),
        (
            "str",
            ["IDMP-MAXSIZE", 0],
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        ("s", ["IDMP-DURATION", -1], "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
        ("s", ["IDMP-MAXSIZE", 10001], "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
        ("s", ["IDMP-MAXSIZE", "x"], "ERR value is not an integer or out of range"),
        ("s", ["IDMP-MAXSIZE", 5, "IDMP-MAXSIZE", 6], "ERR IDMP-MAXSIZE specified multiple times"),
        ("s", ["BOGUS", 1], "ERR syntax error"),
        ("s", [], "ERR At least one parameter must be specified"),
    ],
)
def test_errors_in_redis_order(key: str, args: list[str | int], error: str) -> None:
    e = stream_of(engine(), "s", "1-0")
    call(e, "SET", "str", "v")
    with pytest.raises(StreamError) as err:
        call(e, "XCFGSET", key, *args)
    assert err.value.line == error


def test_a_setting_applies() -> None:
    e = stream_of(engine(), "s", "1-0")
    assert call(e, "XCFGSET", "s", "IDMP-DURATION", 5, "IDMP-MAXSIZE", 7) == "OK"
    info = call(e, "XINFO", "STREAM", "s")
    assert isinstance(info, ReplyMap)
    assert info.get(b"idmp-duration") == 5 and info.get(b"idmp-maxsize") == 7
