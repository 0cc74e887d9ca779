"""Which build a run loads of each compiled group (xstream/builds.py: the engine and the RESP
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
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    ExtensionFileLoader,
    PathFinder,
    SourceFileLoader,
)
from pathlib import Path

import pytest

import xstream.engine
import xstream.server.resp
from xstream import builds
from xstream.builds import ENGINE, RESP_CODEC, BuildChooser, BuildGroup, decide

ENGINE_DIR = Path(xstream.engine.__path__[0])
RESP_DIR = Path(xstream.server.resp.__path__[0])
FOLDERS = {ENGINE: ENGINE_DIR, RESP_CODEC: RESP_DIR}
SOURCES = ENGINE.sources(ENGINE_DIR)
MODULES = [ENGINE.module_name(source) for source in ENGINE.compiled_sources(ENGINE_DIR)]
RESP_MODULES = [RESP_CODEC.module_name(source) for source in RESP_CODEC.compiled_sources(RESP_DIR)]
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def compiled(name: str) -> bool:
    return isinstance(importlib.import_module(name).__spec__.loader, ExtensionFileLoader)


def current_build_on_disk(group: BuildGroup) -> bool:
    """Whether the group's folder holds a compiled build of its current sources."""
    folder = FOLDERS[group]
    if not any(folder.glob(f"_stamp{suffix}") for suffix in EXTENSION_SUFFIXES):
        return False
    stamp = importlib.import_module(f"{group.package}._stamp")
    return bool(group.digest(folder) == stamp.DIGEST)


def a_copy(group: BuildGroup) -> BuildGroup:
    """A group like `group`, not chosen yet: its choice is made here, not by the import."""
    return BuildGroup(
        group.name, group.title, group.package, group.checkout, group.modules, group.pure
    )


@pytest.mark.parametrize("group", [ENGINE, RESP_CODEC], ids=["engine", "codec"])
def test_the_run_loads_the_build_it_asked_for(group: BuildGroup) -> None:
    wanted = os.environ.get(builds.ENV, "")
    expected = wanted == "compiled" if wanted else current_build_on_disk(group)
    assert group.compiled() is expected, group.build()


def test_the_chooser_is_first_and_the_groups_are_chosen() -> None:
    assert sys.meta_path.index(builds.CHOOSER) < sys.meta_path.index(PathFinder)
    assert [g.package for g in builds.GROUPS] == ["xstream.engine", "xstream.server.resp"]
    assert all(group.is_chosen() for group in builds.GROUPS)  # both imported above


def test_every_engine_module_is_of_the_build_loaded() -> None:
    assert len(MODULES) > 40 and "xstream.engine.commands.read" in MODULES
    kinds = {name: compiled(name) for name in MODULES}
    wrong = [name for name, kind in kinds.items() if kind is not ENGINE.compiled()]
    assert not wrong, f"{ENGINE.build()}, yet these are not: {wrong}"
    assert not any(compiled(ENGINE.module_name(source)) for source in ENGINE.pure)
    if ENGINE.compiled():
        stamp = importlib.import_module("xstream.engine._stamp")
        assert list(stamp.SOURCES) == ENGINE.compiled_sources(ENGINE_DIR)


def test_every_engine_module_names_its_own_file() -> None:
    for source in SOURCES:
        module = importlib.import_module(ENGINE.module_name(source))
        file = Path(module.__file__ or "")
        assert file.exists() and module.__spec__.origin == str(file), source
        assert file.parent == (ENGINE_DIR / source).parent, source
        assert file.name.split(".")[0] == Path(source).stem, source
    commands = importlib.import_module("xstream.engine.commands")
    assert commands.__path__ == [str(ENGINE_DIR / "commands")]
    assert xstream.engine.__spec__.loader is xstream.engine.__loader__  # its own, unwrapped
    assert not isinstance(xstream.engine.__loader__, builds._ChoosingLoader)


def test_a_pure_group_is_found_as_sources_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(builds.ENV, "pure")
    engine, codec = a_copy(ENGINE), a_copy(RESP_CODEC)
    engine.choose(xstream.engine)
    assert engine.chosen() == (False, "XSTREAM_ENGINE=pure") and not codec.is_chosen()
    finder = BuildChooser([engine, codec])
    spec = finder.find_spec("xstream.engine.listpack", xstream.engine.__path__)
    assert spec is not None and isinstance(spec.loader, SourceFileLoader)
    assert spec.origin == str(ENGINE_DIR / "listpack.py")
    package = finder.find_spec("xstream.engine.commands", xstream.engine.__path__)
    assert package is not None and package.origin == str(ENGINE_DIR / "commands" / "__init__.py")
    assert finder.find_spec("xstream.client", None) is None  # not a group's
    assert finder.find_spec("xstream.engine.nosuch", [str(ENGINE_DIR)]) is None
    # The codec is not chosen yet: its modules are left to the other finders.
    assert finder.find_spec("xstream.server.resp.codec", xstream.server.resp.__path__) is None
    codec.choose(xstream.server.resp)
    spec = finder.find_spec("xstream.server.resp.codec", xstream.server.resp.__path__)
    assert spec is not None and spec.origin == str(RESP_DIR / "codec.py")


def test_the_first_import_of_a_package_is_wrapped_to_choose() -> None:
    engine = a_copy(ENGINE)
    finder = BuildChooser([engine])
    spec = finder.find_spec("xstream.engine", xstream.__path__)
    assert spec is not None and isinstance(spec.loader, builds._ChoosingLoader)
    assert spec.origin == str(ENGINE_DIR / "__init__.py")
    assert finder.find_spec("xstream.client", xstream.__path__) is None  # not a group's


def test_every_codec_module_is_of_the_build_loaded() -> None:
    assert RESP_MODULES == ["xstream.server.resp.codec", "xstream.server.resp.requests"]
    kinds = {name: compiled(name) for name in RESP_MODULES}
    wrong = [name for name, kind in kinds.items() if kind is not RESP_CODEC.compiled()]
    assert not wrong, f"{RESP_CODEC.build()}, yet these are not: {wrong}"
    for name in ("server", "session", "multi"):  # never compiled
        assert not compiled(f"xstream.server.resp.{name}")


def test_every_codec_module_names_its_own_file() -> None:
    for source in RESP_CODEC.compiled_sources(RESP_DIR):
        module = importlib.import_module(RESP_CODEC.module_name(source))
        file = Path(module.__file__ or "")
        assert file.exists() and module.__spec__.origin == str(file), source
        assert file.parent == RESP_DIR and file.name.split(".")[0] == Path(source).stem, source


def test_the_engine_digest_covers_every_source(tmp_path: Path) -> None:
    ignored = shutil.ignore_patterns("*.so", "__pycache__")
    shutil.copytree(ENGINE_DIR, tmp_path / "engine", ignore=ignored)
    copy = tmp_path / "engine"
    assert ENGINE.sources(copy) == SOURCES and "commands/read.py" in SOURCES
    assert ENGINE.digest(copy) == ENGINE.digest(ENGINE_DIR)
    with (copy / "reply.py").open("a") as f:  # a pure module: compiled ones import it
        f.write("# edited\n")
    assert ENGINE.digest(copy) != ENGINE.digest(ENGINE_DIR)


def _engine_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the engine's sources whose digest cache goes under tmp_path/pycache, written
    whatever this run's PYTHONDONTWRITEBYTECODE says."""
    shutil.copytree(ENGINE_DIR, tmp_path / "engine", ignore=shutil.ignore_patterns("*.so"))
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path / "engine"


def _hashing_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def digest(*_: object) -> str:
        raise AssertionError("hashed the sources: the cache was not used")

    monkeypatch.setattr(BuildGroup, "digest", digest)


def test_the_digest_is_cached_while_no_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _engine_copy(tmp_path, monkeypatch)
    expected = ENGINE.digest(copy)
    assert ENGINE.current_digest(copy) == expected  # computed, and cached
    assert list((tmp_path / "pycache").rglob("*.digest"))
    with monkeypatch.context() as m:
        _hashing_forbidden(m)
        assert ENGINE.current_digest(copy) == expected


@pytest.mark.parametrize("change", ["edited", "replaced, same size and mtime", "added", "removed"])
def test_a_changed_source_is_hashed_again(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _engine_copy(tmp_path, monkeypatch)
    ENGINE.current_digest(copy)
    reply = copy / "reply.py"
    if change == "edited":
        with reply.open("a") as f:
            f.write("# edited\n")
    elif change == "added":
        (copy / "commands" / "extra.py").write_text("# new\n")
    elif change == "removed":
        (copy / "commands" / "sets.py").unlink()
    else:  # the same bytes but one, a new inode, the old times set back by hand
        st = reply.stat()
        text = reply.read_bytes()
        (copy / "new.tmp").write_bytes(text[:-2] + b"!\n")
        os.replace(copy / "new.tmp", reply)
        os.utime(reply, ns=(st.st_atime_ns, st.st_mtime_ns))
    expected = ENGINE.digest(copy)
    assert ENGINE.current_digest(copy) == expected
    with monkeypatch.context() as m:  # and cached again
        _hashing_forbidden(m)
        assert ENGINE.current_digest(copy) == expected


def test_a_cache_that_cannot_be_used_is_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _engine_copy(tmp_path, monkeypatch)
    expected = ENGINE.digest(copy)
    ENGINE.current_digest(copy)
    (cache,) = (tmp_path / "pycache").rglob("*.digest")
    cache.write_bytes(b"\xff garbage")
    assert ENGINE.current_digest(copy) == expected
    cache.unlink()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert ENGINE.current_digest(copy) == expected
    assert not cache.exists()  # no cache written where Python writes no bytecode


def test_the_codec_digest_covers_its_sources(tmp_path: Path) -> None:
    for source in RESP_CODEC.sources(RESP_DIR):
        shutil.copyfile(RESP_DIR / source, tmp_path / source)
    assert RESP_CODEC.digest(tmp_path) == RESP_CODEC.digest(RESP_DIR)
    with (tmp_path / "requests.py").open("a") as f:
        f.write("# edited\n")
    assert RESP_CODEC.digest(tmp_path) != RESP_CODEC.digest(RESP_DIR)


def test_the_build_key_covers_every_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("mypyc_build", SCRIPTS / "mypyc_build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mypyc_build", build)  # its dataclass looks itself up
    spec.loader.exec_module(build)
    assert [(g.group, g.folder) for g in build.GROUPS] == list(FOLDERS.items())
    assert build.GROUPS[1].compiled() == ["codec.py", "requests.py"]
    before = build.key()
    for source in RESP_CODEC.sources(RESP_DIR):
        shutil.copyfile(RESP_DIR / source, tmp_path / source)
    monkeypatch.setattr(build, "GROUPS", (build.GROUPS[0], build.Group(RESP_CODEC, tmp_path)))
    assert build.key() == before
    with (tmp_path / "codec.py").open("a") as f:
        f.write("# edited\n")
    assert build.key() != before


# -- the choice, by the variable, the build on disk and the sources --------------------------

TITLES = pytest.mark.parametrize("title", ["engine", "RESP codec"])


def never() -> str:
    raise AssertionError("the sources are hashed only when there is a build to compare")


@TITLES
def test_unset_takes_a_current_build(title: str) -> None:
    assert decide("", title, "sources", lambda: "sources") == (True, "compiled with mypyc")


@TITLES
def test_unset_without_a_build_is_pure_quietly(
    title: str, recwarn: pytest.WarningsRecorder
) -> None:
    compiled, why = decide("", title, None, never)
    assert not compiled and "missing" in why
    assert not recwarn.list


@TITLES
def test_unset_refuses_a_stale_build_with_a_warning(title: str) -> None:
    with pytest.warns(UserWarning, match=f"the {title} runs as pure Python: .* stale"):
        compiled, why = decide("", title, "older sources", lambda: "sources")
    assert not compiled and "rerun scripts/venv.sh" in why


@TITLES
def test_compiled_is_required_when_asked_for(title: str) -> None:
    assert decide("compiled", title, "sources", lambda: "sources")[0] is True
    with pytest.raises(ImportError, match=f"the compiled {title} is stale"):
        decide("compiled", title, "older sources", lambda: "sources")
    with pytest.raises(ImportError, match=f"the compiled {title} is missing"):
        decide("compiled", title, None, never)


@TITLES
def test_pure_ignores_the_build(title: str) -> None:
    assert decide("pure", title, "sources", never) == (False, "XSTREAM_ENGINE=pure")


@TITLES
def test_an_unknown_choice_is_an_error(title: str) -> None:
    with pytest.raises(ImportError, match="expected compiled or pure"):
        decide("fast", title, "sources", never)


def test_a_group_reads_the_variable_when_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    """(Only the choices that load nothing: the test process has its builds loaded already.)"""
    monkeypatch.setenv(builds.ENV, "fast")
    engine = a_copy(ENGINE)
    with pytest.raises(ImportError, match="XSTREAM_ENGINE='fast'"):
        engine.choose(xstream.engine)
    assert not engine.is_chosen()
    monkeypatch.setenv(builds.ENV, "pure")
    engine.choose(xstream.engine)
    assert engine.chosen() == (False, "XSTREAM_ENGINE=pure")
