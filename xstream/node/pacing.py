"""The flow-control window's settings (the pacing itself is the primary's: primary/flow.py).

Here, on the node floor, because CONFIG GET/SET (serverconfig.py) reads and changes them on
whatever node serves: a primary has one (`Node.window`), a replica none (the parameters are
then absent, as an unknown parameter is).
"""

from __future__ import annotations

from dataclasses import dataclass

LAG_MS = 25  # default --repl-flow-lag-ms (primary/flow.py says why 25)
TIMEOUT_MS = 500  # default --repl-flow-timeout-ms


@dataclass
class Window:
    lag_ms: int = LAG_MS  # the most a paced replica may lag at admission (0: no pacing)
    timeout_ms: int = TIMEOUT_MS  # a paced replica whose acks stall this long is ignored
