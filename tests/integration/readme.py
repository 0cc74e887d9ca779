"""README.md as test data: its code blocks, its `$ command` / output transcripts, and the
shape of an output (what stays the same from run to run), so that the walk through the README
(test_readme_walk.py, tests/spark/test_example.py) runs what it shows and compares what it
prints, and the two cannot drift apart.

A code block is a run of lines indented by four spaces (blank lines inside it included). In a
transcript block, a line `$ command  # comment` is a command and the lines up to the next `$`
are what it prints.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PORTS = (7700, 7701, 7702)  # the ports the README's commands use: `xstream up`'s defaults


def blocks(text: str | None = None) -> list[list[str]]:
    """The README's code blocks, each as its lines without the four-space indent."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in [*(text if text is not None else README.read_text()).splitlines(), ""]:
        if line.startswith("    ") or (current and not line.strip()):
            current.append(line[4:])
            continue
        while current and not current[-1].strip():
            current.pop()
        if current:
            out.append(current)
        current = []
    return out


def block_with(line: str) -> list[str]:
    """The one code block holding `line` exactly (a whole line, maybe with a `# comment`)."""
    found = [b for b in blocks() if any(_is(held, line) for held in b)]
    assert len(found) == 1, f"README.md: {len(found)} code blocks hold the line {line!r}"
    return found[0]


def _is(held: str, line: str) -> bool:
    rest = held.removeprefix(line)
    return held.startswith(line) and (
        not rest or (rest.lstrip().startswith("#") and rest[0] == " ")
    )


def transcript(block: list[str]) -> list[tuple[str, list[str]]]:
    """(command, the lines it prints) for each `$ ` line of a block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block:
        if line.startswith("$ "):
            steps.append((line[2:].split("  #")[0].strip(), []))
        else:
            assert steps, f"README.md: output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def shape(lines: list[str]) -> list[str]:
    """What stays the same from run to run: a replication id and every number (IDs, offsets,
    lags) become placeholders, trailing blanks go."""
    out = []
    for line in lines:
        named = re.sub(r"\b[0-9a-f]{40}\b", "<replid>", line)
        out.append(re.sub(r"\d+", "0", named).rstrip())
    return out


def on_ports(text: str, base: int) -> str:
    """`text` with the README's ports 7700-7702 moved to base, base+1, base+2."""
    for i, port in enumerate(PORTS):
        text = re.sub(rf"\b{port}\b", str(base + i), text)
    return text
