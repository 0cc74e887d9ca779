"""Which build of each compiled group this process loads: compiled (mypyc) or the pure source.

Groups of modules are compiled with mypyc in place (scripts/mypyc.sh, scripts/mypyc_build.py),
one library per group: the engine (`xstream.engine`, every module but ENGINE's `pure`) and the
RESP codec (`xstream.server.resp`: codec.py and requests.py). Each compiled `X.py` gets an
extension module `X.cpython-311-<platform>.so` beside it, the group's code is in
`_native__mypyc...so`, and a stamp module `_stamp...so` (only ever compiled) holds `DIGEST`, the
`BuildGroup.digest()` of the sources the build was made from, and `SOURCES`, the modules
compiled. Python's import system prefers an extension module to a source of the same name, so
the pure build is a group's modules found as `.py` sources only.

`XSTREAM_ENGINE` chooses, for every group alike:
    compiled   the compiled build, or ImportError when it is missing or stale
    pure       the source, whatever is compiled beside it
    (unset)    the compiled build when it is present and current, else the source; a stale
               build (sources edited since) is named in a warning, never run

Invariants: xstream/__init__.py imports this module before any subpackage, which puts CHOOSER
first on sys.meta_path; a group is chosen once, when its package is first imported and before
its __init__ runs, so a process never mixes a group's builds. `ENGINE.compiled()` and
`ENGINE.build()` (likewise RESP_CODEC) say which build runs and why. The groups' own modules
read neither the environment nor the file system (the engine stays sans-I/O:
tests/unit/test_engine_purity.py). Importing this module is cheap (every `xstream` command
does): sources are listed and hashed only when a group's package is imported.

The sources' digest is cached (`current_digest`), as Python caches bytecode: in the group's
__pycache__ (or under PYTHONPYCACHEPREFIX), keyed by every source's name, size, mtime, ctime
and inode, so a start whose sources are unchanged lists and stats them (~0.3 ms for the
engine's 55) instead of reading and hashing 385 KB (~2 ms, and hashlib's import where nothing
else has done it). An edit, a replaced or an added file changes the key; ctime cannot be set
back by hand (mtime can: `cp -p`, `touch -d`). Written atomically, never when Python writes no
bytecode (PYTHONDONTWRITEBYTECODE), and a cache that cannot be read or written is recomputed.

The stamp stays a compiled module rather than a plain file: it is found only under the
interpreter's own extension suffix, so a build for another interpreter reads as missing, and
it ships wherever the extension modules do (pyproject's package data: *.so).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import warnings
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType

# typing's constant without importing typing (or importlib.abc): every `xstream` command
# imports this module, so it imports only what the interpreter has loaded already.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.abc import Loader

ENV = "XSTREAM_ENGINE"


def decide(
    wanted: str, title: str, stamp: str | None, digest: Callable[[], str]
) -> tuple[bool, str]:
    """(compiled, why): the build of a group to load, by `XSTREAM_ENGINE`'s value (`wanted`),
    the DIGEST of the build on disk (`stamp`, None if there is none) and the digest of the
    sources (`digest()`, computed only when there is a build to compare)."""
    if wanted not in ("", "compiled", "pure"):
        raise ImportError(f"{ENV}={wanted!r}: expected compiled or pure (or unset)")
    if wanted == "pure":
        return False, f"{ENV}=pure"
    if stamp is None:
        problem = "missing (scripts/mypyc.sh builds it)"
    elif stamp != digest():
        problem = "stale (its sources changed since it was built: rerun scripts/venv.sh)"
    else:
        return True, "compiled with mypyc"
    if wanted == "compiled":
        raise ImportError(f"{ENV}=compiled, but the compiled {title} is {problem}")
    if stamp is not None:
        warnings.warn(
            f"the {title} runs as pure Python: its compiled build is {problem}", stacklevel=1
        )
    return False, f"pure Python: the compiled build is {problem}"


class BuildGroup:
    """One library of modules compiled together, and which build of it this process runs."""

    __slots__ = ("_choice", "checkout", "modules", "name", "package", "pure", "title")

    def __init__(
        self,
        name: str,
        title: str,
        package: str,
        checkout: str,
        modules: Sequence[str] | None,
        pure: Sequence[str] = (),
    ) -> None:
        self.name = name  # its folder in a build (scripts/mypyc_build.py): "engine"
        self.title = title  # what messages call it: "engine", "RESP codec"
        self.package = package  # its import package: "xstream.engine"
        # WARNING: its folder in the source tree must match pyproject's package-dir.
        self.checkout = checkout  # "engine", "xstream/server/resp"
        # Its sources, relative to the package's folder; None: every .py below the folder.
        self.modules = None if modules is None else tuple(modules)
        self.pure = tuple(pure)  # sources never compiled (their comments at ENGINE say why)
        self._choice: tuple[bool, str] | None = None  # (compiled, why), once chosen

    # -- what the sources are -------------------------------------------------------------

    def sources(self, folder: Path) -> list[str]:
        """The group's .py files, relative to its folder (in `folder`), in digest order."""
        if self.modules is None:
            return sorted(_python_files(str(folder)))
        return list(self.modules)

    def compiled_sources(self, folder: Path) -> list[str]:
        return [source for source in self.sources(folder) if source not in self.pure]

    def digest(self, folder: Path, sources: Sequence[str] | None = None) -> str:
        """sha256 of the sources (relative paths and contents): what `_stamp.DIGEST` holds for
        the sources a build was compiled from (scripts/mypyc_build.py writes it)."""
        import hashlib  # noqa: PLC0415  (only when a group is imported or built)

        h = hashlib.sha256()
        for source in self.sources(folder) if sources is None else sources:
            h.update(source.encode() + b"\0")
            h.update((folder / source).read_bytes() + b"\0")
        return h.hexdigest()

    def current_digest(self, folder: Path) -> str:
        """digest(folder), from its cache when no source changed since it was written (see
        the top), else computed and cached."""
        sources = self.sources(folder)
        key = "".join(_stat_line(folder, source) for source in sources)
        cache = _digest_cache(folder)
        try:
            text = cache.read_text() if cache is not None else ""
        except (OSError, UnicodeDecodeError):
            text = ""
        digest, _, cached_key = text.partition("\n")
        if cached_key == key and len(digest) == 64:
            return digest
        digest = self.digest(folder, sources)
        if cache is not None and not sys.dont_write_bytecode:
            _write_atomically(cache, digest + "\n" + key)
        return digest

    def module_name(self, source: str) -> str:
        """The module of a source path: "commands/__init__.py" is xstream.engine.commands."""
        parts = source.removesuffix(".py").split("/")
        return ".".join([self.package, *parts[: -1 if parts[-1] == "__init__" else None]])

    # -- which build runs -----------------------------------------------------------------

    def chosen(self) -> tuple[bool, str]:
        """(compiled, why in words); imports the group's package first if nothing has."""
        if self._choice is None:
            importlib.import_module(self.package)
        assert self._choice is not None, f"{self.package} was imported before xstream.builds"
        return self._choice

    def compiled(self) -> bool:
        return self.chosen()[0]

    def build(self) -> str:
        return self.chosen()[1]

    def is_chosen(self) -> bool:
        return self._choice is not None

    def is_pure(self) -> bool:
        """Chosen, and pure: its modules are found as sources only."""
        return self._choice is not None and not self._choice[0]

    def choose(self, package: ModuleType) -> None:
        """Choose the build, its package created but not yet run, and load it if compiled."""
        folder = Path(package.__path__[0])
        stamp = self._stamp()
        digest = stamp.DIGEST if stamp is not None else None
        wanted = os.environ.get(ENV, "")
        choice = decide(wanted, self.title, digest, lambda: self.current_digest(folder))
        if choice[0]:
            assert stamp is not None
            self._load_compiled(folder, stamp)
        self._choice = choice

    def _stamp(self) -> ModuleType | None:
        """The compiled build's stamp module beside the sources, None if there is none."""
        name = f"{self.package}._stamp"
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)

    def _load_compiled(self, folder: Path, stamp: ModuleType) -> None:
        """Import every compiled module (`_stamp.SOURCES`), and give each the __file__,
        __spec__ and (a package) __path__ of its own extension module.

        mypyc gives a module that one compiled module imports from another paths derived from
        the place of the group's library, as if it sat above the package tree
        (engine/xstream/engine/X...so for engine/_native__mypyc...so), where no file is; the
        module itself is the right one. Importing all of them here, before the package's
        __init__ runs, leaves none to be imported that way later."""
        suffix = Path(stamp.__file__ or "").name.removeprefix("_stamp")
        for source in stamp.SOURCES:
            name = self.module_name(source)
            path = folder / (source.removesuffix(".py") + suffix)
            module = importlib.import_module(name)
            package = [str(path.parent)] if source.endswith("__init__.py") else None
            if module.__file__ == str(path) and getattr(module, "__path__", None) == package:
                continue
            spec = spec_from_file_location(name, path, submodule_search_locations=package)
            assert spec is not None and path.exists(), path
            module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, str(path)
            if package is not None:
                module.__path__ = package


def _python_files(folder: str) -> list[str]:
    """Every .py file below `folder`, relative to it ("commands/add_trim.py"), unsorted.
    os.walk, not Path.rglob: a third of the time, and no pathlib objects per file."""
    found = []
    for root, _, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        found += [prefix + name for name in files if name.endswith(".py")]
    return found


def _stat_line(folder: Path, source: str) -> str:
    """What the digest cache's key holds of one source: its name, size, mtime, ctime, inode."""
    st = os.stat(folder / source)
    return f"{source} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}\n"


def _digest_cache(folder: Path) -> Path | None:
    """Where the digest of the sources in `folder` is cached: beside their bytecode (None when
    the interpreter keeps no bytecode cache)."""
    try:
        pyc = importlib.util.cache_from_source(str(folder / "_sources.py"))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return Path(pyc).with_suffix(".digest")


def _write_atomically(path: Path, text: str) -> None:
    """`text` into `path` by a rename (a concurrent start reads the old file or the new one,
    never half of one); nothing if the folder cannot be written."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # (importlib.util has imported contextlib)
            tmp.unlink(missing_ok=True)


class _ChoosingLoader:
    """A group package's own loader, wrapped: the build is chosen before the __init__ runs."""

    def __init__(self, group: BuildGroup, loader: Loader) -> None:
        self.group = group
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the package shows its own loader, not this one
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.group.choose(module)
        self.loader.exec_module(module)


class BuildChooser:
    """The meta path finder that makes each group's choice and keeps a pure group pure.

    The first import of a group's package is found by the finders behind this one, its loader
    wrapped so that the choice is made when the package is created; a module of a group that
    runs pure is found as a .py source only, never as the extension module beside it."""

    _source_loaders = ((SourceFileLoader, SOURCE_SUFFIXES),)

    def __init__(self, groups: Sequence[BuildGroup]) -> None:
        self.groups = {group.package: group for group in groups}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        group = self.groups.get(fullname)
        if group is not None:
            if group.is_chosen():
                return None
            return self._package_spec(group, fullname, path, target)
        if path is None:
            return None
        for group in self.groups.values():
            if group.is_pure() and fullname.startswith(group.package + "."):
                return self._source_spec(fullname, path)
        return None

    def _source_spec(self, fullname: str, path: Sequence[str]) -> ModuleSpec | None:
        for entry in path:
            spec = FileFinder(entry, *self._source_loaders).find_spec(fullname)
            if spec is not None and spec.loader is not None:
                return spec
        return None

    def _package_spec(
        self,
        group: BuildGroup,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None,
    ) -> ModuleSpec | None:
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec: ModuleSpec | None = find_spec(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is not None and spec.submodule_search_locations:
                # A Loader in all but its base class (importlib.abc is not imported here).
                spec.loader = _ChoosingLoader(group, spec.loader)  # type: ignore[assignment]
            return spec
        return None


# Modules of the engine never compiled: __init__.py; reply.py, whose classes subclass str and
# list (mypyc compiles no native subclass of those); errors.py, whose exceptions the node and
# the RESP codec subclass (a compiled class refuses subclasses defined in Python unless marked
# with mypy_extensions, which the engine does not depend on).
ENGINE = BuildGroup(
    "engine", "engine", "xstream.engine", "engine", None, ("__init__.py", "reply.py", "errors.py")
)
# The codec's hot modules, in import order (requests.py makes codec.py's RespParser, compiled
# together with it). The rest of the package (server.py, turn.py, the connection's commands)
# stays pure: they subclass asyncio's classes and run a few lines per request each. What is
# compiled imports nothing sideways: only the engine's pure modules (reply.py, errors.py).
RESP_CODEC = BuildGroup(
    "resp", "RESP codec", "xstream.server.resp", "xstream/server/resp", ("codec.py", "requests.py")
)
GROUPS = (ENGINE, RESP_CODEC)
CHOOSER = BuildChooser(GROUPS)
sys.meta_path.insert(0, CHOOSER)
