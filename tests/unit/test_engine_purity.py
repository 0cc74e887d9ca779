"""engine/ stays sans-I/O: no module of it imports I/O, clocks, randomness or concurrency, nor
reads the environment or the file system: every module, without exception (which build of it
runs is chosen outside it, by xstream/builds.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = {
    "asyncio",
    "ctypes",
    "datetime",
    "fcntl",
    "glob",
    "grpc",
    "importlib",
    "io",
    "mmap",
    "multiprocessing",
    "os",
    "pathlib",
    "random",
    "secrets",
    "select",
    "selectors",
    "shutil",
    "signal",
    "socket",
    "subprocess",
    "sys",
    "tempfile",
    "threading",
    "time",
    "uuid",
    "warnings",
}
# Builtins that reach the outside world (files, the terminal, code by name).
FORBIDDEN_CALLS = {"open", "print", "input", "__import__", "exec", "eval", "breakpoint"}
MODULES = sorted(ENGINE.rglob("*.py"))


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def called_names(path: Path) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def test_the_scan_sees_the_engine() -> None:
    assert len(MODULES) > 40 and ENGINE / "commands" / "read.py" in MODULES
    assert "struct" in imported_roots(ENGINE / "listpack.py")
    assert "len" in called_names(ENGINE / "listpack.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_imports_no_io(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN
    assert not called_names(path) & FORBIDDEN_CALLS
