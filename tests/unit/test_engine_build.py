"""Which build a run loads (engine/native.py, and xstream/server/resp/native.py for the RESP
codec): compiled with mypyc, or pure Python.

scripts/test.sh runs the suite with XSTREAM_ENGINE=compiled and the engine's tests again with
XSTREAM_ENGINE=pure; the first tests here fail when a run loaded anything but what it asked
for, so a broken build cannot pass as a compiled run, nor a pure run test compiled code.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest

import xstream.engine
import xstream.server.resp
from xstream.engine import native
from xstream.server.resp import native as resp_native

ENGINE = Path(native.__file__).parent
SOURCES = sorted(path.relative_to(ENGINE).as_posix() for path in ENGINE.rglob("*.py"))


MODULES = [native.module_name(source) for source in SOURCES if source not in native.PURE]
RESP = Path(resp_native.__file__).parent
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
Chooser = ModuleType  # engine/native.py or xstream/server/resp/native.py
RESP_MODULES = [
    f"xstream.server.resp.{s.removesuffix('.py')}" for s in resp_native.COMPILED_SOURCES
]


def compiled(name: str) -> bool:
    return isinstance(importlib.import_module(name).__spec__.loader, ExtensionFileLoader)


def current_build_on_disk() -> bool:
    """Whether engine/ holds a compiled build of its current sources."""
    if not any(ENGINE.glob(f"_stamp{suffix}") for suffix in EXTENSION_SUFFIXES):
        return False
    stamp = importlib.import_module("xstream.engine._stamp")
    return bool(native.sources_digest() == stamp.DIGEST)


def current_codec_build_on_disk() -> bool:
    """Whether xstream/server/resp holds a compiled build of the codec's current sources."""
    if not any(RESP.glob(f"_stamp{suffix}") for suffix in EXTENSION_SUFFIXES):
        return False
    stamp = importlib.import_module("xstream.server.resp._stamp")
    return bool(resp_native.sources_digest() == stamp.DIGEST)


def test_the_run_loads_the_build_it_asked_for() -> None:
    wanted = os.environ.get(native.ENV, "")
    expected = wanted == "compiled" if wanted else current_build_on_disk()
    assert xstream.engine.COMPILED is expected, xstream.engine.BUILD
    expected = wanted == "compiled" if wanted else current_codec_build_on_disk()
    assert resp_native.COMPILED is expected, resp_native.BUILD


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


def test_every_codec_module_is_of_the_build_loaded() -> None:
    assert RESP_MODULES == ["xstream.server.resp.codec", "xstream.server.resp.requests"]
    kinds = {name: compiled(name) for name in RESP_MODULES}
    wrong = [name for name, kind in kinds.items() if kind is not resp_native.COMPILED]
    assert not wrong, f"{resp_native.BUILD}, yet these are not: {wrong}"
    for name in ("server", "session", "native", "multi"):  # never compiled
        assert not compiled(f"xstream.server.resp.{name}")


def test_every_codec_module_names_its_own_file() -> None:
    for source in resp_native.COMPILED_SOURCES:
        module = importlib.import_module(f"xstream.server.resp.{source.removesuffix('.py')}")
        file = Path(module.__file__ or "")
        assert file.exists() and module.__spec__.origin == str(file), source
        assert file.parent == RESP and file.name.split(".")[0] == Path(source).stem, source


def test_the_codec_source_finder_finds_its_sources_only() -> None:
    finder = resp_native.SourceFinder()
    spec = finder.find_spec("xstream.server.resp.codec", xstream.server.resp.__path__)
    assert spec is not None and isinstance(spec.loader, SourceFileLoader)
    assert spec.origin == str(RESP / "codec.py")
    assert finder.find_spec("xstream.server.resp.server", xstream.server.resp.__path__) is None
    assert finder.find_spec("xstream.engine.listpack", xstream.engine.__path__) is None


def test_the_codec_digest_covers_its_sources(tmp_path: Path) -> None:
    for source in resp_native.COMPILED_SOURCES:
        shutil.copyfile(RESP / source, tmp_path / source)
    assert resp_native.sources_digest(tmp_path) == resp_native.sources_digest()
    with (tmp_path / "requests.py").open("a") as f:
        f.write("# edited\n")
    assert resp_native.sources_digest(tmp_path) != resp_native.sources_digest()


def test_the_build_key_covers_the_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("mypyc_build", SCRIPTS / "mypyc_build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mypyc_build", build)  # its dataclass looks itself up
    spec.loader.exec_module(build)
    monkeypatch.setenv(native.ENV, "pure")
    before = build.key()
    assert [g.name for g in build.GROUPS] == ["engine", "resp"]
    assert build.RESP_GROUP.compiled() == list(resp_native.COMPILED_SOURCES)
    monkeypatch.setattr(resp_native, "sources_digest", lambda folder=RESP: "edited")
    assert build.key() != before


# -- the choice, with the build on disk and the sources stood in for --------------------------


# The engine's chooser and the codec's make the same choices (one variable for both).
@pytest.fixture(params=[native, resp_native], ids=["engine", "codec"])
def chooser(request: pytest.FixtureRequest) -> Chooser:
    return cast(Chooser, request.param)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch, chooser: Chooser) -> pytest.MonkeyPatch:
    monkeypatch.delenv(native.ENV, raising=False)
    monkeypatch.setattr(chooser, "sources_digest", lambda: "sources")
    return monkeypatch


def test_unset_takes_a_current_build(disk: pytest.MonkeyPatch, chooser: Chooser) -> None:
    disk.setattr(chooser, "_stamp", lambda: "sources")
    assert chooser.choose() == (True, "compiled with mypyc")


def test_unset_without_a_build_is_pure_quietly(
    disk: pytest.MonkeyPatch, chooser: Chooser, recwarn: pytest.WarningsRecorder
) -> None:
    disk.setattr(chooser, "_stamp", lambda: None)
    compiled, why = chooser.choose()
    assert not compiled and "missing" in why
    assert not recwarn.list


def test_unset_refuses_a_stale_build_with_a_warning(
    disk: pytest.MonkeyPatch, chooser: Chooser
) -> None:
    disk.setattr(chooser, "_stamp", lambda: "older sources")
    with pytest.warns(UserWarning, match="stale"):
        compiled, why = chooser.choose()
    assert not compiled and "rerun scripts/venv.sh" in why


def test_compiled_is_required_when_asked_for(disk: pytest.MonkeyPatch, chooser: Chooser) -> None:
    disk.setenv(chooser.ENV, "compiled")
    disk.setattr(chooser, "_stamp", lambda: "sources")
    assert chooser.choose()[0] is True
    disk.setattr(chooser, "_stamp", lambda: "older sources")
    with pytest.raises(ImportError, match="stale"):
        chooser.choose()
    disk.setattr(chooser, "_stamp", lambda: None)
    with pytest.raises(ImportError, match="missing"):
        chooser.choose()


def test_pure_ignores_the_build(disk: pytest.MonkeyPatch, chooser: Chooser) -> None:
    disk.setenv(chooser.ENV, "pure")
    disk.setattr(chooser, "_stamp", lambda: "sources")
    assert chooser.choose() == (False, "XSTREAM_ENGINE=pure")


def test_an_unknown_choice_is_an_error(disk: pytest.MonkeyPatch, chooser: Chooser) -> None:
    disk.setenv(chooser.ENV, "fast")
    with pytest.raises(ImportError, match="expected compiled or pure"):
        chooser.choose()
