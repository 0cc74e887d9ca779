"""Which engine build a run loads (engine/native.py): compiled with mypyc, or pure Python.

scripts/test.sh runs the suite with XSTREAM_ENGINE=compiled and the engine's tests again with
XSTREAM_ENGINE=pure; the first tests here fail when a run loaded anything but what it asked
for, so a broken build cannot pass as a compiled run, nor a pure run test compiled code.
"""

from __future__ import annotations

import importlib
import os
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, SourceFileLoader
from pathlib import Path

import pytest

import xstream.engine
from xstream.engine import native

ENGINE = Path(native.__file__).parent
SOURCES = sorted(path.relative_to(ENGINE).as_posix() for path in ENGINE.rglob("*.py"))


MODULES = [native.module_name(source) for source in SOURCES if source not in native.PURE]


def compiled(name: str) -> bool:
    return isinstance(importlib.import_module(name).__spec__.loader, ExtensionFileLoader)


def current_build_on_disk() -> bool:
    """Whether engine/ holds a compiled build of its current sources."""
    if not any(ENGINE.glob(f"_stamp{suffix}") for suffix in EXTENSION_SUFFIXES):
        return False
    stamp = importlib.import_module("xstream.engine._stamp")
    return bool(native.sources_digest() == stamp.DIGEST)


def test_the_run_loads_the_build_it_asked_for() -> None:
    wanted = os.environ.get(native.ENV, "")
    expected = wanted == "compiled" if wanted else current_build_on_disk()
    assert xstream.engine.COMPILED is expected, xstream.engine.BUILD


def test_every_engine_module_is_of_the_build_loaded() -> None:
    assert len(MODULES) > 40 and "xstream.engine.commands.read" in MODULES
    kinds = {name: compiled(name) for name in MODULES}
    wrong = [name for name, kind in kinds.items() if kind is not xstream.engine.COMPILED]
    assert not wrong, f"{xstream.engine.BUILD}, yet these are not: {wrong}"
    assert not any(compiled(native.module_name(source)) for source in native.PURE)


def test_every_engine_module_names_its_own_file() -> None:
    for source in SOURCES:
        module = importlib.import_module(native.module_name(source))
        file = Path(module.__file__ or "")
        assert file.exists() and module.__spec__.origin == str(file), source
        assert file.parent == (ENGINE / source).parent, source
        assert file.name.split(".")[0] == Path(source).stem, source
    commands = importlib.import_module("xstream.engine.commands")
    assert commands.__path__ == [str(ENGINE / "commands")]


def test_the_source_finder_finds_sources_only() -> None:
    spec = native.SourceFinder().find_spec("xstream.engine.listpack", xstream.engine.__path__)
    assert spec is not None and isinstance(spec.loader, SourceFileLoader)
    assert spec.origin == str(ENGINE / "listpack.py")
    package = native.SourceFinder().find_spec("xstream.engine.commands", xstream.engine.__path__)
    assert package is not None and package.origin == str(ENGINE / "commands" / "__init__.py")
    assert native.SourceFinder().find_spec("xstream.client", None) is None  # not the engine's
    assert native.SourceFinder().find_spec("xstream.engine.nosuch", [str(ENGINE)]) is None


# -- the choice, with the build on disk and the sources stood in for --------------------------


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(native.ENV, raising=False)
    monkeypatch.setattr(native, "sources_digest", lambda: "sources")
    return monkeypatch


def test_unset_takes_a_current_build(disk: pytest.MonkeyPatch) -> None:
    disk.setattr(native, "_stamp", lambda: "sources")
    assert native.choose() == (True, "compiled with mypyc")


def test_unset_without_a_build_is_pure_quietly(
    disk: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder
) -> None:
    disk.setattr(native, "_stamp", lambda: None)
    compiled, why = native.choose()
    assert not compiled and "missing" in why
    assert not recwarn.list


def test_unset_refuses_a_stale_build_with_a_warning(disk: pytest.MonkeyPatch) -> None:
    disk.setattr(native, "_stamp", lambda: "older sources")
    with pytest.warns(UserWarning, match="stale"):
        compiled, why = native.choose()
    assert not compiled and "rerun scripts/venv.sh" in why


def test_compiled_is_required_when_asked_for(disk: pytest.MonkeyPatch) -> None:
    disk.setenv(native.ENV, "compiled")
    disk.setattr(native, "_stamp", lambda: "sources")
    assert native.choose()[0] is True
    disk.setattr(native, "_stamp", lambda: "older sources")
    with pytest.raises(ImportError, match="stale"):
        native.choose()
    disk.setattr(native, "_stamp", lambda: None)
    with pytest.raises(ImportError, match="missing"):
        native.choose()


def test_pure_ignores_the_build(disk: pytest.MonkeyPatch) -> None:
    disk.setenv(native.ENV, "pure")
    disk.setattr(native, "_stamp", lambda: "sources")
    assert native.choose() == (False, "XSTREAM_ENGINE=pure")


def test_an_unknown_choice_is_an_error(disk: pytest.MonkeyPatch) -> None:
    disk.setenv(native.ENV, "fast")
    with pytest.raises(ImportError, match="expected compiled or pure"):
        native.choose()
