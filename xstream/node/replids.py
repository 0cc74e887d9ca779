"""Replication IDs and epochs on disk: `replid.json` and `epoch.json` in a node's data
directory, each replaced atomically.

A primary names its history with a random 40-hex replid, new at every start; the previous
one is kept as replid2 with the offset where it ended (PSYNC2), so replicas of the previous
run continue with a partial resync when their offset is within what was recovered. A replica
stores the replid of the history its data follows; it deletes the file before replacing its
data with a full sync, so a crash in between leaves no replid and forces a full sync.
A promoted primary also persists replid2 and replid2_end (the replica history it continues).

`epoch.json` holds the node's EpochState (epochs.py): the highest epoch seen, the epoch it led
and its epoch history. It is never deleted (a full sync replaces the history, not the epoch
seen), and it is written before the node acts on a new epoch.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from xstream.node.epochs import EpochState, history_of

FILE = "replid.json"
EPOCH_FILE = "epoch.json"


def new_replid() -> str:
    return secrets.token_hex(20)


def load(directory: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((directory / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data


def save(directory: Path, ids: dict[str, Any]) -> None:
    _write(directory, FILE, ids)


def _write(directory: Path, name: str, data: dict[str, Any]) -> None:
    tmp = directory / (name + ".tmp")
    with tmp.open("w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(directory / name)


def load_epochs(directory: Path) -> EpochState:
    """The persisted epoch state (EpochState() when there is none: a node older than epochs)."""
    try:
        data = json.loads((directory / EPOCH_FILE).read_text())
        return EpochState(
            int(data["epoch"]), int(data["leader_epoch"]), history_of(data["history"])
        )
    except FileNotFoundError:
        return EpochState()


def save_epochs(directory: Path, state: EpochState) -> None:
    history = [[e.epoch, e.start] for e in state.history]
    data = {"epoch": state.epoch, "leader_epoch": state.leader_epoch, "history": history}
    _write(directory, EPOCH_FILE, data)


def forget(directory: Path) -> None:
    (directory / FILE).unlink(missing_ok=True)
