"""Structured logs: one JSON object per line on stderr.

    {"ts": "2026-11-21T10:00:00.123Z", "level": "info", "node": "primary:7700",
     "event": "replica_online", "replica": "127.0.0.1:7701", "offset": 1234}

`slog(event, **fields)` is the only way services log; `configure(node)` names the process.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

_state: dict[str, Any] = {"node": "", "stream": sys.stderr, "level": 20}
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def configure(node: str, stream: TextIO | None = None, level: str = "info") -> None:
    _state["node"] = node
    _state["stream"] = stream or sys.stderr
    _state["level"] = _LEVELS[level]


def slog(event: str, level: str = "info", **fields: Any) -> None:
    if _LEVELS[level] < _state["level"]:
        return
    now = time.time()
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    line = {"ts": ts, "level": level, "node": _state["node"], "event": event, **fields}
    stream: TextIO = _state["stream"]
    stream.write(json.dumps(line, default=str) + "\n")
    stream.flush()
