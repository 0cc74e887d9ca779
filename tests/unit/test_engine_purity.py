"""engine/ stays sans-I/O: no module of it imports I/O, clocks, randomness or concurrency."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = {
    "asyncio",
    "datetime",
    "grpc",
    "io",
    "multiprocessing",
    "os",
    "random",
    "secrets",
    "select",
    "selectors",
    "shutil",
    "socket",
    "subprocess",
    "sys",
    "threading",
    "time",
    "uuid",
}
MODULES = sorted(ENGINE.rglob("*.py"))


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_scan_sees_the_engine() -> None:
    assert len(MODULES) > 20
    assert "struct" in imported_roots(ENGINE / "listpack.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_imports_no_io(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN
