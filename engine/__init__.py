"""xstream's engine: Redis Streams' data structures and commands, sans I/O.

No sockets, files, clocks or randomness: time comes in as `now_ms`. See engine.py for the
entry point, stream.py/node.py/listpack.py/rax.py for the data structures.
"""

from .context import BlockSpec, EngineConfig, Result
from .engine import Engine
from .errors import EngineError, SnapshotError, StreamError
from .ids import StreamID
from .reply import NULL_ARRAY, OK, ReplyMap, Status

__all__ = [
    "NULL_ARRAY",
    "OK",
    "BlockSpec",
    "Engine",
    "EngineConfig",
    "EngineError",
    "ReplyMap",
    "Result",
    "SnapshotError",
    "Status",
    "StreamError",
    "StreamID",
]
