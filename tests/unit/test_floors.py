"""The floors (docs/architecture.md): every import of every module goes down or stays on its
floor, never up and never sideways between the roles; protobuf and grpc only at the edges."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where each import package's source lives (pyproject's package-dir).
SOURCES = {
    "xstream.engine": ROOT / "engine",
    "xstream.primary": ROOT / "primary",
    "xstream.replica": ROOT / "replica",
    "xstream.pipeline": ROOT / "pipeline",
    "xstream": ROOT / "xstream",
}
ENGINE = {"xstream.engine"}
# xstream.builds: which build of the engine runs (INFO's xstream_engine), chosen outside it.
NODE = ENGINE | {"xstream.node", "xstream.clock", "xstream.builds"}
PROTOCOL = ENGINE | {"xstream.protocol", "xstream.v1", "xstream.clock"}
# What each floor may import from the project (a module of the floor itself always may).
ALLOWED = {
    "xstream.engine": ENGINE,
    "xstream.node": NODE,
    "xstream.primary": NODE | {"xstream.primary"},
    "xstream.replica": NODE | {"xstream.replica"},
    "xstream.protocol": PROTOCOL,
    "xstream.client": PROTOCOL | {"xstream.client"},
}
# The roles' own edges: they speak protobuf (and grpc) to their peer.
ROLE_EDGES = {"xstream.primary.replication", "xstream.replica.link"}
WIRE = {"grpc", "google.protobuf", "xstream.v1", "xstream.protocol"}


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            name = ".".join((package, *rel))
            out.setdefault(name, path)  # the first (most specific) package wins
    return out


def imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[: len(parts) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return found


def floor_of(name: str) -> str | None:
    for floor in sorted(ALLOWED, key=len, reverse=True):
        if name == floor or name.startswith(floor + "."):
            return floor
    return None


def under(name: str, prefixes: set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_every_import_goes_down() -> None:
    mods = modules()
    assert "xstream.node.base" in mods and "xstream.primary.primary" in mods
    wrong = []
    for name, path in sorted(mods.items()):
        floor = floor_of(name)
        if floor is None:
            continue  # edges, tools, pipeline: they may import any floor below them
        allowed = ALLOWED[floor] | {floor}
        if name in ROLE_EDGES:
            allowed = allowed | {"xstream.v1", "xstream.protocol"}
        speaks_wire = name in ROLE_EDGES or floor in ("xstream.protocol", "xstream.client")
        for target in imports(name, path):
            ours = target.startswith("xstream.") and target in mods
            if ours and not under(target, allowed):
                wrong.append(f"{name} imports {target}")
            if not speaks_wire and under(target, set(WIRE)):
                wrong.append(f"{name} imports {target} (protobuf and grpc stay at the edges)")
    assert not wrong, "\n".join(wrong)


def test_the_engine_imports_no_io() -> None:
    for name, path in modules().items():
        if floor_of(name) == "xstream.engine":
            for target in imports(name, path):
                root = target.split(".")[0]
                assert root not in {"socket", "asyncio", "grpc", "os", "time"}, (name, target)


def test_test_module_names_are_unique() -> None:
    """pytest imports test modules by basename (no __init__.py in most tiers): two tiers with
    the same file name break the whole run's collection."""
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_every_benchmark_is_type_checked() -> None:
    """benchmarks/ are scripts, named one by one in mypy's modules (pyproject.toml)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    assert "sides" in scripts and "benchmarks" in config["mypy_path"]
    assert scripts <= set(config["modules"]), scripts - set(config["modules"])
