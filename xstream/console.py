"""Commands in, replies out, redis-cli style: what `xstream cli` and `xstream shell` share.

    words     a line is split as a shell splits it (quotes, backslashes); bytes that are not
              UTF-8 (arguments and stdin decoded with surrogateescape) pass through unchanged
    replies   printed as redis-cli prints them: "bulk" strings quoted and escaped as its
              sdscatrepr, (integer) n, (nil), nested arrays numbered and indented, and an
              error reply as `(error) <Redis's line>` on stdout
    sources   the words of the command line (one command), else stdin: on a terminal an
              interactive prompt with readline history (~/.xstream_history; quit, exit or
              Ctrl-D leave), otherwise one command per line

Whoever runs a command passes `execute(argv) -> Reply`, raising `ReplyError` for an error the
server (or engine) answered and `UnreachableError` when there was no answer at all (printed on
stderr as `error: ...`). A command that fails makes the exit status 1; the next one still runs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

from xstream.engine.reply import NULL_ARRAY, Reply, ReplyMap, Status

HISTORY = Path("~/.xstream_history")  # expanded when used, so HOME decides
HISTORY_LINES = 1000
LEAVE = frozenset({"quit", "exit"})  # words that end an interactive session


class ReplyError(Exception):
    """An error reply (`ERR ...`, `WRONGTYPE ...`): printed as `(error) <line>`."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line  # Redis's error line, prefix included


class UnreachableError(Exception):
    """No reply at all (no connection, a timeout): printed on stderr as `error: <text>`."""


Execute = Callable[[list[bytes]], Reply]

_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\a": "\\a",
    "\b": "\\b",
}


def quoted(b: bytes) -> str:
    """A bulk string as redis-cli prints it (sdscatrepr): in double quotes, with backslash,
    quote, \\n \\r \\t \\a \\b escaped and any other unprintable byte as \\xHH. Unlike
    redis-cli, printable UTF-8 text stays as it is; bytes that are not UTF-8 are escapes."""
    out = ['"']
    for ch in b.decode("utf-8", "surrogateescape"):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.extend(f"\\x{x:02x}" for x in ch.encode())
    out.append('"')
    return "".join(out)


def words_of(line: str) -> list[bytes]:
    """A command line's words as argv: shell quoting, and bytes that are not UTF-8 (command
    line arguments and stdin decoded with surrogateescape) passed through unchanged. An
    unbalanced quote raises ValueError."""
    return [os.fsencode(w) for w in shlex.split(line)]


def format_reply(reply: Reply, indent: int = 0) -> str:
    """A reply as redis-cli prints it."""
    pad = " " * indent
    if isinstance(reply, Status):
        return str(reply)
    if isinstance(reply, int):
        return f"(integer) {reply}"
    if isinstance(reply, bytes):
        return quoted(reply)
    if reply is None or reply is NULL_ARRAY:
        return "(nil)"
    items: list[Reply] = []
    if isinstance(reply, ReplyMap):
        for k, v in reply:
            items += [k, v]
    else:
        assert isinstance(reply, list)
        items = cast(list[Reply], reply)  # a PairMap's pairs are arrays too (mypy keeps ReplyMap)
    if not items:
        return "(empty array)"
    width = len(str(len(items)))
    lines = []
    for i, item in enumerate(items, 1):
        head = f"{i:>{width}}) "
        body = format_reply(item, indent + len(head))
        lines.append((pad if i > 1 else "") + head + body)
    return "\n".join(lines)


def safe_stdout() -> None:
    """Text the terminal's encoding cannot show is printed as escapes, never a traceback."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def run_line(line: str, execute: Execute) -> bool:
    """Split, run and print one command line; False if it failed. A blank line is no command."""
    try:
        argv = words_of(line)
    except ValueError:  # an unbalanced quote: redis-cli's own wording
        print("(error) ERR Invalid argument(s)", flush=True)
        return False
    if not argv:
        return True
    try:
        reply = execute(argv)
    except ReplyError as e:
        print(f"(error) {e.line}", flush=True)
        return False
    except UnreachableError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return False
    print(format_reply(reply), flush=True)
    return True


def run(words: list[str], execute: Execute, prompt: str) -> int:
    """One command from `words`, else stdin (interactive on a terminal); the exit status."""
    safe_stdout()
    if words:
        return 0 if run_line(shlex.join(words), execute) else 1
    if sys.stdin.isatty():
        return interactive(prompt, execute)
    lines = (os.fsdecode(raw) for raw in sys.stdin.buffer)  # bytes: never fails to decode
    return run_lines(lines, execute)


def run_lines(lines: Iterable[str], execute: Execute) -> int:
    """Each line as a command; 1 if any failed."""
    failed = False
    for line in lines:
        failed |= not run_line(line, execute)
    return 1 if failed else 0


def interactive(prompt: str, execute: Execute) -> int:
    """A prompt with readline editing and history until quit, exit or Ctrl-D. Ctrl-C drops
    the line being typed (or abandons the command being waited for) and prompts again."""
    import readline  # noqa: PLC0415 (only a terminal needs it; it changes how input() reads)

    history = HISTORY.expanduser()
    with contextlib.suppress(OSError):  # no history yet
        readline.read_history_file(history)
    readline.set_history_length(HISTORY_LINES)
    try:
        while True:
            try:
                line = input(prompt)
                if line.strip().lower() in LEAVE:
                    return 0
                run_line(line, execute)
            except EOFError:  # Ctrl-D
                print()
                return 0
            except KeyboardInterrupt:
                print()
    finally:
        try:
            readline.write_history_file(history)
        except OSError as e:
            print(f"warning: history not saved: {e}", file=sys.stderr)
