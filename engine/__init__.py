"""xstream's engine: Redis Streams' data structures and commands, sans I/O.

No sockets, files, clocks or randomness: time comes in as `now_ms`. See engine.py for the
entry point, stream.py/node.py/listpack.py/rax.py for the data structures.

The same source runs compiled with mypyc (the default install) or as pure Python; the choice
is made outside the engine, by xstream/builds.py, before this package runs: `ENGINE.compiled()`
there says which build this process runs and `ENGINE.build()` says why, in words.
"""

from .context import BlockSpec, Result
from .engine import Engine
from .errors import EngineError, SnapshotError, StreamError
from .ids import StreamID
from .reply import NULL_ARRAY, OK, ReplyMap, Status
from .settings import EngineConfig

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
