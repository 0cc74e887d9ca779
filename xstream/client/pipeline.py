"""Pipelines: commands buffered client side and sent in one round trip, like redis-py's
non-transactional `Pipeline` (`client.pipeline(transaction=False)`).

Invariants:
- every command method returns the pipeline itself, so calls chain; nothing is sent before
  `execute()`;
- `execute()` sends the whole buffer through one `transport.execute_many` call, as a write if
  any buffered command writes, and answers one value per command, in order, each shaped by
  its own callback exactly as the client would shape it;
- an error reply does not stop later commands. With `raise_on_error=True` the first one is
  raised after all replies are in, its message annotated as redis-py does ("Command # N
  (XADD s ...) of pipeline caused error: ..."); with False, the exception objects stand in
  the result list, unannotated;
- the buffer is emptied by `execute()` whatever happens, by `reset()`, and on leaving a
  `with` block.

MULTI/EXEC transactions are not supported: `Client.pipeline(transaction=True)` raises
DataError (the default there is False, unlike redis-py's True).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from xstream.client.exceptions import DataError, ResponseError

from .argv import Argv, Encodable, Key
from .commands import StreamCommands
from .shapes import Parse, to_python
from .transport import Transport

if TYPE_CHECKING:
    from xstream.engine.reply import Reply

NO_XADD_MANY = "xadd_many cannot be pipelined: call it on the client"


class Pipeline(StreamCommands):
    def __init__(
        self,
        transport: Transport,
        *,
        decode_responses: bool = False,
        encoding: str = "utf-8",
        encoding_errors: str = "strict",
    ) -> None:
        self._transport = transport
        self.decode_responses = decode_responses
        self.encoding = encoding
        self.encoding_errors = encoding_errors
        self._stack: list[tuple[Argv, Parse, bool]] = []

    def _call(self, argv: Argv, parse: Parse, *, write: bool) -> Pipeline:
        self._stack.append((argv, parse, write))
        return self

    def xadd_many(self, name: Key, entries: Iterable[Mapping[Any, Encodable]]) -> Any:
        raise DataError(NO_XADD_MANY)  # refused at the call, before its entries are encoded

    def _xadd_many(self, key: bytes, entries: Sequence[Sequence[bytes]]) -> Any:
        raise DataError(NO_XADD_MANY)

    def _shape(self, raw: Reply) -> Any:
        return to_python(raw, self.decode_responses, self.encoding, self.encoding_errors)

    def __len__(self) -> int:
        return len(self._stack)

    def __bool__(self) -> bool:
        return True

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.reset()

    def reset(self) -> None:
        """Drop every buffered command."""
        self._stack = []

    close = reset

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the buffered commands; their replies in order (see the module comment)."""
        stack = self._stack
        if not stack:
            return []
        try:
            argvs = [argv for argv, _, _ in stack]
            raws = self._transport.execute_many(argvs, write=any(w for _, _, w in stack))
            results: list[Any] = []
            for (_, parse, _), raw in zip(stack, raws, strict=True):
                if isinstance(raw, ResponseError):
                    results.append(raw)
                else:
                    results.append(parse(self._shape(raw)))
            if raise_on_error:
                for number, (r, argv) in enumerate(zip(results, argvs, strict=True), 1):
                    if isinstance(r, ResponseError):
                        raise annotate(r, number, argv)
            return results
        finally:
            self.reset()


def annotate(error: ResponseError, number: int, argv: Argv) -> ResponseError:
    """redis-py's Pipeline.annotate_exception: the command's place and words in the message."""
    cmd = " ".join(w.decode("utf-8", errors="replace") for w in argv)
    cmd = textwrap.shorten(text=cmd, width=100, placeholder="...", break_long_words=True)
    msg = f"Command # {number} ({cmd}) of pipeline caused error: {error.args[0]}"
    error.args = (msg, *error.args[1:])
    return error
