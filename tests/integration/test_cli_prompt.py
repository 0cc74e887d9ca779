"""`xstream cli` on a terminal is an interactive prompt, as redis-cli is: driven here through a
pseudo-terminal (python's `pty`) against a real primary. The prompt is `HOST:PORT> `, quoted
words stay one word, an error reply prints `(error) ...` and the prompt comes back, history is
kept in ~/.xstream_history (HOME is the test's folder) and recalled with the up arrow in the
next session, and quit, exit and Ctrl-D leave with status 0. Without a terminal, commands are
read one per line of stdin."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Cluster

UP = "\x1b[A"  # the up arrow, as a terminal sends it
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")  # cursor and bracketed-paste sequences


class Terminal:
    """A child process on a pseudo-terminal: type lines, wait for output."""

    def __init__(self, argv: list[str], home: Path) -> None:
        self.fd, child = pty.openpty()
        env = {**os.environ, "HOME": str(home), "TERM": "xterm", "INPUTRC": "/dev/null"}
        self.proc = subprocess.Popen(
            argv, stdin=child, stdout=child, stderr=child, env=env, close_fds=True
        )
        os.close(child)
        self.seen = ""  # everything printed so far, control sequences removed
        self.read_to = 0  # how far expect() has consumed `seen`

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, pattern: str, timeout: float = 15.0) -> str:
        """Output up to the first match of `pattern` after what was already consumed."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.compile(pattern).search(self.seen, self.read_to)
            if m:
                out, self.read_to = self.seen[self.read_to : m.end()], m.end()
                return out
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                pytest.fail(f"no {pattern!r} on the terminal; it shows:\n{self.seen}")

    def _read(self, timeout: float) -> bool:
        if not select.select([self.fd], [], [], timeout)[0]:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.seen += _CONTROL.sub("", data.decode(errors="replace"))
        return bool(data)

    def exit_status(self) -> int:
        try:
            return self.proc.wait(15)
        finally:
            os.close(self.fd)


def cli(node: str) -> list[str]:
    return [sys.executable, "-m", "xstream.cli", "cli", "--node", node]


def test_prompt_runs_commands_keeps_history_and_quits(cluster: Cluster, tmp_path: Path) -> None:
    p = cluster.primary()
    prompt = re.escape(f"{p.address}> ")
    t = Terminal(cli(p.address), tmp_path)
    t.expect(prompt)
    t.type("XADD s 1-1 'two words' \"v 1\"\r")
    assert t.expect(prompt).splitlines()[1:] == ['"1-1"', f"{p.address}> "]
    t.type("XRANGE s - +\r")
    out = t.expect(prompt).splitlines()[1:-1]
    assert out == ['1) 1) "1-1"', '   2) 1) "two words"', '      2) "v 1"']
    t.type("NOSUCH x\r")  # an error reply, and the prompt continues
    assert "(error) ERR unknown command 'NOSUCH'" in t.expect(prompt)
    t.type("\r")  # an empty line: just the prompt again
    t.expect(prompt)
    t.type("quit\r")
    assert t.exit_status() == 0
    history = (tmp_path / ".xstream_history").read_text().splitlines()
    assert history[-3:] == ["XRANGE s - +", "NOSUCH x", "quit"]

    t = Terminal(cli(p.address), tmp_path)  # a new session recalls the history
    t.expect(prompt)
    t.type(UP + UP + "\r")  # up twice: past `quit` to `NOSUCH x`
    assert "(error) ERR unknown command 'NOSUCH'" in t.expect(prompt)
    t.type("XLEN s\r")
    assert "(integer) 1" in t.expect(prompt)
    t.type("\x04")  # Ctrl-D
    assert t.exit_status() == 0


def test_exit_and_a_node_that_does_not_answer(cluster: Cluster, tmp_path: Path) -> None:
    p = cluster.primary()
    p.stop()  # nothing listens there now
    prompt = re.escape(f"{p.address}> ")
    t = Terminal(cli(p.address), tmp_path)
    t.expect(prompt)
    t.type("XLEN s\r")
    assert f"error: {p.address}: UNAVAILABLE" in t.expect(prompt)
    t.type("exit\r")
    assert t.exit_status() == 0


def test_without_a_terminal_commands_come_one_per_line(cluster: Cluster) -> None:
    p = cluster.primary()
    lines = b"XADD s 1-1 f v\nNOSUCH\n\nXLEN s\n"
    out = subprocess.run(cli(p.address), input=lines, capture_output=True, check=False)
    assert out.stdout.decode().splitlines() == [
        '"1-1"',
        "(error) ERR unknown command 'NOSUCH'",
        "(integer) 1",
    ]
    assert out.returncode == 1 and out.stderr == b""
