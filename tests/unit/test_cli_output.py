"""The CLI prints any bytes as redis-cli does (quoted, escaped), and passes arguments that are
not UTF-8 through unchanged: never a UnicodeEncodeError. Commands come one per line of stdin
when it is not a terminal; `xstream info` prints only fields that mean something, in words."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from xstream.cli import main
from xstream.console import format_reply, quoted, words_of
from xstream.tools import format_info
from xstream.v1 import xstream_pb2 as pb


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


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """stdin as a pipe holding `data` (not a terminal)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_shell_reads_one_command_per_line_of_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _stdin(monkeypatch, b"XADD s 1-1 'two words' \"v 1\"\n\n  \nXLEN s\nXRANGE s - +\n")
    assert main(["shell"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        '"1-1"',
        "(integer) 1",
        '1) 1) "1-1"',
        '   2) 1) "two words"',
        '      2) "v 1"',
    ]


def test_stdin_errors_are_printed_and_the_next_line_still_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _stdin(monkeypatch, b'NOSUCH x\nXADD s "1-1 f v\nXADD s 1-1 f v\n')
    assert main(["shell"]) == 1  # a command failed
    assert capsys.readouterr().out.splitlines() == [
        "(error) ERR unknown command 'NOSUCH', with args beginning with: 'x' ",
        "(error) ERR Invalid argument(s)",  # the unbalanced quote, as redis-cli says it
        '"1-1"',
    ]


def test_help_of_cli_and_shell_says_where_commands_come_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for sub in ("cli", "shell"):
        with pytest.raises(SystemExit):
            main([sub, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "an interactive prompt on a terminal" in text
        assert "otherwise one command per line of stdin" in text


def _info(**fields: Any) -> dict[str, str]:
    """format_info's lines as {label: value}, checking each line is `label: value`."""
    out = {}
    for line in format_info(pb.InfoReply(**fields)).splitlines():
        label, sep, value = (line + " ").partition(": ")  # an empty value: "label:"
        assert sep, line
        out[label.strip()] = value.strip()
    return out


def test_info_of_a_fresh_primary_shows_no_meaningless_fields() -> None:
    shown = _info(
        role="primary", name="p", replid="a" * 40, offset=120, epoch=1, leader_epoch=1,
        history=[pb.EpochEntry(epoch=1, start=0)], fsync="everysec",
        replicas=[pb.ReplicaInfo(name="r", address="127.0.0.1:7701", state="online",
                                 ack_offset=120)],
    )  # fmt: skip
    assert shown["role"] == "primary" and shown["epoch"] == "1"
    assert shown["epoch history"] == "epoch 1 from offset 0"
    assert shown["offset"] == "120 (bytes in the replication stream)"
    assert shown["127.0.0.1:7701"].startswith("online, acked offset 120, 0 bytes and 0 ms behind")
    assert shown["fsync"] == "everysec (once a second)"
    assert shown["last snapshot at"] == "none yet"
    for hidden in ("continues", "deposed", "was primary in", "leader_epoch", "replid2"):
        assert hidden not in shown


def test_info_of_a_promoted_primary_names_the_history_it_continues() -> None:
    shown = _info(
        role="primary", epoch=3, leader_epoch=2, deposed=True, replid2="b" * 40,
        replid2_end=77, snapshot_offset=50,
    )  # fmt: skip
    assert shown["continues"] == f"replication id {'b' * 40} up to offset 77"
    assert shown["deposed"] == "yes: epoch 3 is newer than its own (2); it refuses writes"
    assert shown["last snapshot at"] == "offset 50"


def test_info_of_a_replica_says_whom_it_follows_and_how_far_behind() -> None:
    shown = _info(
        role="replica", primary="127.0.0.1:7700", link="up", epoch=1, offset=90,
        lag_offset=30, lag_ms=12, apply_lag_p50_ms=0.25, apply_lag_p99_ms=3,
        full_syncs=1,
    )  # fmt: skip
    assert shown["primary"] == "127.0.0.1:7700" and shown["link"] == "up"
    assert shown["behind primary"] == "30 bytes, 12 ms"
    assert shown["apply lag"] == "p50 0.2 ms, p99 3.0 ms"
    assert shown["syncs done"] == "1 full, 0 partial"
    assert "was primary in" not in shown and "continues" not in shown
    assert _info(role="replica", leader_epoch=4)["was primary in"] == "epoch 4"
