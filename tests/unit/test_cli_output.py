"""The CLI prints any bytes as redis-cli does (quoted, escaped), and passes arguments that are
not UTF-8 through unchanged: never a UnicodeEncodeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from xstream.cli import format_reply, main, quoted, words_of


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain", '"plain"'),
        (b"\xff\xfe", '"\\xff\\xfe"'),
        (b'a"b\\c', '"a\\"b\\\\c"'),
        (b"\n\r\t\x07\x08", '"\\n\\r\\t\\a\\b"'),
        (b"\x00\x1b\x7f", '"\\x00\\x1b\\x7f"'),
        ("é€".encode(), '"é€"'),  # printable UTF-8 stays text
        ("\u200b".encode(), '"\\xe2\\x80\\x8b"'),  # unprintable UTF-8: its bytes
        (b"\xc3", '"\\xc3"'),  # a cut UTF-8 sequence
    ],
)
def test_quoted_is_redis_cli_repr(raw: bytes, shown: str) -> None:
    assert quoted(raw) == shown


def test_nested_reply_with_binary() -> None:
    reply = [[b"1-1", [b"\xff", b"v\x00"]]]
    assert format_reply(reply).splitlines() == [
        '1) 1) "1-1"',
        '   2) 1) "\\xff"',
        '      2) "v\\x00"',
    ]


def test_arguments_that_are_not_utf8_pass_through() -> None:
    arg = b"\xff\xfe".decode("utf-8", "surrogateescape")  # how sys.argv holds such bytes
    assert words_of(f"XADD {arg} '*' f v") == [b"XADD", b"\xff\xfe", b"*", b"f", b"v"]


def test_shell_round_trips_binary(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    key, value = "\udcff\udcfe", "\udcff"  # sys.argv holding b"\xff\xfe" and b"\xff"
    snap = ["--snapshot", str(tmp_path / "s.snap")]
    assert main(["shell", *snap, "XADD", key, "1-1", "f", value]) == 0
    assert main(["shell", *snap, "XRANGE", key, "-", "+"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        '"1-1"',
        '1) 1) "1-1"',
        '   2) 1) "f"',
        '      2) "\\xff"',
    ]
