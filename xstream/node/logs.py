"""Structured logs: one JSON object per line on stderr.

    {"ts": "2026-11-21T10:00:00.123Z", "level": "info", "node": "primary:7700",
     "event": "replica_online", "replica": "127.0.0.1:7701", "offset": 1234}

`slog(event, **fields)` is the only way services log; `configure(node)` names the process.
Libraries that log through the standard `logging` module (xstream.coord, grpc) are routed here
too by `configure`: one line {"event": "<logger name>", "message": ...} per record.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

_state: dict[str, Any] = {"node": "", "stream": sys.stderr, "level": 20}
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def configure(node: str, stream: TextIO | None = None, level: str = "info") -> None:
    _state["node"] = node
    _state["stream"] = stream or sys.stderr
    _state["level"] = _LEVELS[level]
    root = logging.getLogger()
    root.handlers = [_Bridge()]
    root.setLevel(_LEVELS[level])


class _Bridge(logging.Handler):
    """stdlib logging records as structured lines."""

    def emit(self, record: logging.LogRecord) -> None:
        level = record.levelname.lower()
        level = level if level in _LEVELS else ("error" if record.levelno >= 40 else "info")
        slog(record.name, level=level, message=record.getMessage())


def slog(event: str, level: str = "info", **fields: Any) -> None:
    if _LEVELS[level] < _state["level"]:
        return
    now = time.time()
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    line = {"ts": ts, "level": level, "node": _state["node"], "event": event, **fields}
    stream: TextIO = _state["stream"]
    stream.write(json.dumps(line, default=str) + "\n")
    stream.flush()
