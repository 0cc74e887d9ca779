"""The wall clock in milliseconds, as Redis's mstime(): the one place xstream reads it for
commands. The engine never reads a clock: the node passes `now_ms()` into every command, and
the time a write used is in its effects, so replicas replay it without a clock of their own."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
