"""A write concern: how many copies a write needs before its reply, in plain terms.

    Acks.LEADER   the primary's own log (the default)
    Acks.QUORUM   a majority of the cluster (the primary counts as one)
    Acks.ALL      every member of the cluster
    timeout_ms    how long to wait for them (0: the node's --acks-timeout-ms)

Edges build it from what their protocol carries (gRPC's WriteConcern message); the primary
turns it into a number of replica acks (Primary.required_acks).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Acks(enum.Enum):
    LEADER = "leader"
    QUORUM = "quorum"
    ALL = "all"


@dataclass(frozen=True)
class WriteConcern:
    acks: Acks = Acks.LEADER
    timeout_ms: int = 0
