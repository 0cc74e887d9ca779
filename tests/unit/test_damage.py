"""Recovery tells a torn tail from damage: only the last record of the last segment is cut;
anything else stops a primary with nothing on disk changed, or is set aside by a replica.
`xstream check-log` reports the same and repairs only when told to."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from xstream.cli import main as cli_main
from xstream.engine import Engine
from xstream.node import records
from xstream.node.damage import CorruptLog
from xstream.node.store import Store


def _fill(directory: Path, batches: int, snapshot_after: int | None = None) -> list[int]:
    """`batches` XADDs to stream s (one record each); record end offsets. A snapshot (and a
    new segment) after record `snapshot_after`."""
    store, engine = Store(directory, "always"), Engine()
    store.recover(engine, engine.apply_record)
    ends = []
    for i in range(batches):
        result = engine.execute([b"XADD", b"s", b"%d-1" % (i + 1), b"f", b"v%d" % i], 1)
        store.append(records.encode(result.effects))
        asyncio.run(store.durable(store.written))
        ends.append(store.written)
        if snapshot_after is not None and i + 1 == snapshot_after:
            store.finish_snapshot(store.begin_snapshot(engine, {"replid": "r"}))
    store.close()
    return ends


def _tree(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def _recover(directory: Path, set_aside: bool = False) -> tuple[int, int]:
    """(recovered offset, XLEN s)."""
    engine = Engine()
    rec = Store(directory).recover(engine, engine.apply_record, set_aside=set_aside)
    return rec.offset, engine.execute([b"XLEN", b"s"]).reply  # type: ignore[return-value]


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("aof-*.xlog"))


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


def test_truncation_at_every_record_boundary_and_inside_every_record(tmp_path: Path) -> None:
    ends = _fill(tmp_path / "src", 6)
    data = _segments(tmp_path / "src")[0].read_bytes()
    for cut in range(len(data) + 1):
        d = tmp_path / f"t{cut}"
        d.mkdir()
        (d / _segments(tmp_path / "src")[0].name).write_bytes(data[:cut])
        whole = sum(1 for e in ends if e <= cut)
        offset, xlen = _recover(d)
        assert (offset, xlen) == ((ends[whole - 1] if whole else 0), whole), cut
        assert bool(list(d.glob("*.cut-*"))) == (cut not in (0, *ends)), cut


def test_a_flipped_byte_in_the_middle_is_damage_not_a_tail(tmp_path: Path) -> None:
    ends = _fill(tmp_path, 8)
    (seg,) = _segments(tmp_path)
    _flip(seg, ends[2] + 12)  # inside record 4's payload, four records after it
    before = _tree(tmp_path)
    with pytest.raises(CorruptLog) as err:
        _recover(tmp_path)
    assert err.value.damage.file == seg.name and err.value.damage.at == ends[2]
    assert err.value.damage.offset == ends[2] and "checksum" in err.value.damage.reason
    assert "will not serve it as a primary" in str(err.value) and "check-log" in str(err.value)
    assert _tree(tmp_path) == before  # nothing on disk changed


@pytest.mark.parametrize("where", ["last record", "zero tail"])
def test_an_unreadable_last_record_is_a_torn_tail(tmp_path: Path, where: str) -> None:
    ends = _fill(tmp_path, 5)
    (seg,) = _segments(tmp_path)
    if where == "last record":
        _flip(seg, ends[-1] - 3)
    else:
        seg.write_bytes(seg.read_bytes() + bytes(4096))
    offset, xlen = _recover(tmp_path)
    assert (offset, xlen) == ((ends[3], 4) if where == "last record" else (ends[-1], 5))
    assert len(list(tmp_path.glob("*.cut-*"))) == 1


def test_a_bad_last_record_of_a_segment_that_is_not_the_last_is_damage(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ends = _fill(src, 6)
    data = _segments(src)[0].read_bytes()
    d = tmp_path / "d"
    d.mkdir()
    first, second = d / f"aof-{0:020d}.xlog", d / f"aof-{ends[2]:020d}.xlog"
    first.write_bytes(data[: ends[2]])
    second.write_bytes(data[ends[2] :])
    assert _recover(d) == (ends[-1], 6)
    _flip(first, ends[2] - 3)  # its last record: a tail only if the segment were the last
    with pytest.raises(CorruptLog) as err:
        _recover(d)
    assert err.value.damage.file == first.name and err.value.damage.at == ends[1]


def test_a_truncated_middle_segment_is_a_gap(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ends = _fill(src, 4)
    (seg,) = _segments(src)
    data = seg.read_bytes()
    d = tmp_path / "d"
    d.mkdir()
    (d / seg.name).write_bytes(data[: ends[1] - 5])  # torn inside record 2 ...
    (d / f"aof-{ends[1]:020d}.xlog").write_bytes(data[ends[1] :])  # ... and a segment after it
    with pytest.raises(CorruptLog) as err:
        _recover(d)
    assert err.value.damage.file == seg.name and err.value.damage.at == ends[0]


def test_a_damaged_snapshot_stops_a_primary_and_a_replica_starts_empty(tmp_path: Path) -> None:
    _fill(tmp_path, 6, snapshot_after=3)
    snap = next(tmp_path.glob("snapshot-*"))
    _flip(snap, snap.stat().st_size - 10)
    with pytest.raises(CorruptLog, match="unreadable snapshot"):
        _recover(tmp_path)
    assert _recover(tmp_path, set_aside=True) == (0, 0)
    assert {p.suffix for p in tmp_path.glob("*.corrupt")} == {".corrupt"}
    assert not list(tmp_path.glob("snapshot-*.xsnap"))


def test_a_replica_keeps_the_good_prefix_and_sets_the_rest_aside(tmp_path: Path) -> None:
    ends = _fill(tmp_path, 8)
    (seg,) = _segments(tmp_path)
    whole = seg.read_bytes()
    _flip(seg, ends[4] + 9)
    assert _recover(tmp_path, set_aside=True) == (ends[4], 5)
    (kept,) = tmp_path.glob("*.corrupt-*")
    assert kept.name == f"{seg.name}.corrupt-{ends[4]}"
    assert seg.read_bytes() + kept.read_bytes() != whole  # the flipped byte is in what was kept
    assert len(seg.read_bytes() + kept.read_bytes()) == len(whole)
    assert _recover(tmp_path) == (ends[4], 5)  # now whole: a primary could start on it


def test_check_log_reports_then_repairs_only_when_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ends = _fill(tmp_path, 8)
    (seg,) = _segments(tmp_path)
    _flip(seg, ends[2] + 12)
    before = _tree(tmp_path)
    assert cli_main(["check-log", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"DAMAGED: {seg.name} at byte {ends[2]}" in out
    assert "at least 4 whole records with good checksums" in out  # records 5..8 follow
    assert _tree(tmp_path) == before
    assert cli_main(["check-log", "--data-dir", str(tmp_path), "--repair"]) == 2  # no terminal
    assert _tree(tmp_path) == before
    assert cli_main(["check-log", "--data-dir", str(tmp_path), "--repair", "--yes"]) == 0
    assert _recover(tmp_path) == (ends[2], 3)
    assert cli_main(["check-log", "--data-dir", str(tmp_path)]) == 0
    assert "whole: the log is readable to offset" in capsys.readouterr().out


def test_an_empty_record_is_not_valid() -> None:
    with pytest.raises(records.CorruptRecordError):
        list(records.scan(bytes(64)))


@pytest.mark.parametrize("bit", [0x100, 0x4000, 0x10000, 0x400000, 0x10000000])
def test_a_damaged_length_field_is_damage_not_a_torn_tail(tmp_path: Path, bit: int) -> None:
    ends = _fill(tmp_path, 8)
    (seg,) = _segments(tmp_path)
    data = bytearray(seg.read_bytes())
    length = int.from_bytes(data[ends[2] : ends[2] + 4], "little")
    data[ends[2] : ends[2] + 4] = (length | bit).to_bytes(4, "little")  # now past the end
    assert ends[2] + 8 + (length | bit) > len(data)
    seg.write_bytes(bytes(data))
    before = _tree(tmp_path)
    with pytest.raises(CorruptLog) as err:
        _recover(tmp_path)
    assert err.value.damage.at == ends[2] and "length field is wrong" in err.value.damage.reason
    assert _tree(tmp_path) == before  # nothing cut
