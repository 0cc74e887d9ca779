"""`xstream check-log`: inspect a node's data directory; repair damage only when told to.

In the spirit of redis-check-aof. It loads the newest snapshot and replays every log segment
after it without changing a byte, then says whether the data is whole and, where it is not,
what a repair would cut: the file, the byte and replication offset, how many bytes lie from
there to the end of the log and how many whole records with good checksums are among them
(writes that may have been acknowledged to clients). `--repair` asks before it cuts (`--yes`
answers for it), keeps every cut byte beside its file (`*.corrupt-<n>`, `*.corrupt`), and
leaves a directory a primary can start on. A torn tail (damage.py) is reported; the node cuts
it itself at start. Exit status: 0 whole (or repaired), 1 damaged, 2 not repaired.

Repairing is the last resort, for when no node has a healthy copy: a node that can sync from
a healthy primary recovers without losing anything (start it as a replica).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xstream.engine import Engine
from xstream.node import records

if TYPE_CHECKING:
    from xstream.node.damage import Damage
    from xstream.node.store import Recovery

# The node floor is imported when the command runs: it needs the `server` extra, which
# `xstream --help` does not (cli.py).


def add_parser(sub: Any) -> None:
    cp = sub.add_parser(
        "check-log",
        help="check a data directory for damage; repair it on request",
        description="Check a node's snapshot and log segments (nothing is changed), and say "
        "what a repair would cut. --repair cuts at the damage, keeping the cut bytes beside "
        "the files, after asking. Prefer resyncing from a healthy node: a repair loses "
        "whatever lay past the damage.",
    )
    cp.add_argument("--data-dir", required=True, type=Path, help="the node's data directory")
    cp.add_argument("--repair", action="store_true", help="cut at the damage (asks first)")
    cp.add_argument("--yes", action="store_true", help="with --repair: do not ask")
    cp.set_defaults(func=check_log)


def check_log(args: argparse.Namespace) -> int:
    directory: Path = args.data_dir
    if not directory.is_dir():
        print(f"error: {directory} is not a directory", file=sys.stderr)
        return 2
    rec = _inspect(directory)
    print(f"data directory: {directory}")
    print(f"snapshot at offset {rec.snapshot_offset}; {rec.records} records replayed after it")
    if rec.damage is None:
        print(f"whole: the log is readable to offset {rec.offset}")
        return 0
    print(f"DAMAGED: {rec.damage.describe()}")
    print(_would_cut(directory, rec.damage))
    if not args.repair:
        print("nothing changed; --repair cuts there (a healthy node's copy is the better cure)")
        return 1
    if not args.yes and not _confirm():
        print("not repaired")
        return 2
    fixed = _recover(directory, set_aside=True)
    print(f"repaired: the log now ends at offset {fixed.offset}; the cut bytes are kept as "
          f"*.corrupt files in {directory}")  # fmt: skip
    return 0


def _inspect(directory: Path) -> Recovery:
    return _recover(directory, dry_run=True)


def _recover(directory: Path, set_aside: bool = False, dry_run: bool = False) -> Recovery:
    """Recover `directory` as a node does: data to an engine, the users beside it."""
    from xstream.node.store import Store  # noqa: PLC0415 (the server extra: see the imports)
    from xstream.node.users import Replay  # noqa: PLC0415

    replay = Replay(Engine())
    return Store(directory, "always").recover(replay.engine, replay.record, set_aside=set_aside,
                                              dry_run=dry_run, on_meta=replay.snapshot)  # fmt: skip


def _would_cut(directory: Path, damage: Damage) -> str:
    """What a repair cuts: bytes from the damage to the log's end, and the whole records with
    good checksums among them (they may hold acknowledged writes)."""
    path = directory / damage.file
    if damage.file.startswith("snapshot-"):
        later = [p for p in directory.glob("aof-*.xlog") if p.name[4:] >= damage.file[9:]]
        size = path.stat().st_size + sum(p.stat().st_size for p in later)
        return (
            f"a repair sets aside the snapshot and the {len(later)} segment(s) after it "
            f"({size} bytes): the node starts empty"
        )
    data = path.read_bytes()
    cut_bytes = len(data) - damage.at
    found = _records_after(data, damage.at)
    later = sorted(p for p in directory.glob("aof-*.xlog") if p.name > damage.file)
    for seg in later:
        seg_data = seg.read_bytes()
        cut_bytes += len(seg_data)
        found += _records_after(seg_data, 0)
    files = f" and {len(later)} later segment(s)" if later else ""
    return (
        f"a repair would cut {cut_bytes} bytes ({damage.file} from byte {damage.at}{files}), "
        f"among them at least {found} whole records with good checksums"
    )


def _records_after(data: bytes, at: int) -> int:
    """Whole good records found from `at` on, skipping one bad record where its header still
    says where it ends."""
    count, pos = 0, at
    while pos < len(data):
        try:
            for _, stop in records.scan(data, pos):
                count += 1
                pos = stop
            return count
        except records.CorruptRecordError as e:
            if e.stop <= pos:
                return count
            pos = e.stop
    return count


def _confirm() -> bool:
    if not sys.stdin.isatty():
        print("--repair needs a terminal to ask, or --yes", file=sys.stderr)
        return False
    answer = input("cut there and keep the cut bytes aside? [y/N] ")
    return answer.strip().lower() in ("y", "yes")
