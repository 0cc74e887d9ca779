"""Replication IDs on disk: `replid.json` in a node's data directory, replaced atomically.

A primary names its history with a random 40-hex replid, new at every start; the previous
one is kept as replid2 with the offset where it ended (PSYNC2), so replicas of the previous
run continue with a partial resync when their offset is within what was recovered. A replica
stores the replid of the history its data follows; it deletes the file before replacing its
data with a full sync, so a crash in between leaves no replid and forces a full sync.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

FILE = "replid.json"


def new_replid() -> str:
    return secrets.token_hex(20)


def load(directory: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((directory / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data


def save(directory: Path, ids: dict[str, Any]) -> None:
    tmp = directory / (FILE + ".tmp")
    with tmp.open("w") as f:
        json.dump(ids, f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(directory / FILE)


def forget(directory: Path) -> None:
    (directory / FILE).unlink(missing_ok=True)
