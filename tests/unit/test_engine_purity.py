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
# native.py chooses, at import, which build of the engine loads (compiled or pure): it reads
# XSTREAM_ENGINE and hashes the engine's own sources. No command runs any of it.
IMPORT_TIME = {ENGINE / "native.py"}
MODULES = sorted(set(ENGINE.rglob("*.py")) - IMPORT_TIME)


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
    assert {"os", "sys"} <= imported_roots(ENGINE / "native.py")  # what IMPORT_TIME excuses


def imports_native(path: Path) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "native"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
    )


def test_only_the_package_imports_the_build_switch() -> None:
    assert [p for p in MODULES if imports_native(p)] == [ENGINE / "__init__.py"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_imports_no_io(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN
