"""Which build of the engine this process loads: compiled (mypyc) or the pure-Python source.

The engine's modules are compiled with mypyc in place (scripts/mypyc.sh): each `X.py` gets an
extension module `X.cpython-311-<platform>.so` beside it (and `X__mypyc...so`, its code),
and the build adds a stamp module (`_stamp...so`, only ever compiled) whose `DIGEST` is the
`sources_digest()` of the sources the build was made from. Python's import
system prefers an extension module over a source file of the same name, so choosing the pure
build means keeping the extensions out of reach: a meta path finder that finds the engine's
modules as `.py` sources only.

`XSTREAM_ENGINE` chooses:
    compiled   the compiled build, or ImportError when it is missing or stale
    pure       the source, whatever is compiled beside it
    (unset)    the compiled build when it is present and current, else the source; a stale
               build (sources edited since) is named in a warning, never run

Invariants: the choice is made once, by engine/__init__.py importing this module before any
other engine module, so a process never mixes the builds; `COMPILED` says which was chosen.
The modules in PURE are never compiled. This is the one engine module that reads the
environment and the file system, at import only; no command ever calls it
(tests/unit/test_engine_purity.py).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType

ENV = "XSTREAM_ENGINE"
PACKAGE = __name__.rpartition(".")[0]  # xstream.engine
FOLDER = Path(__file__).resolve().parent
# Modules never compiled (paths relative to engine/): the two that choose the build; reply.py,
# whose classes subclass str and list (mypyc compiles no native subclass of those); errors.py,
# whose exceptions the node and the RESP codec subclass (a compiled class refuses subclasses
# defined in Python unless marked with mypy_extensions, which the engine does not depend on).
PURE = ("__init__.py", "native.py", "reply.py", "errors.py")


def sources_digest(folder: Path = FOLDER) -> str:
    """sha256 of the engine's .py files (relative paths and contents), in path order: what
    `_stamp.DIGEST` holds for the sources a build was compiled from (scripts/mypyc_build.py
    calls this function to write it)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


class SourceFinder(MetaPathFinder):
    """Finds the engine's modules as .py sources only, never an extension module beside them."""

    _loaders = ((SourceFileLoader, SOURCE_SUFFIXES),)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is None or not fullname.startswith(PACKAGE + "."):
            return None
        for entry in path:
            spec = FileFinder(entry, *self._loaders).find_spec(fullname)
            if spec is not None and spec.loader is not None:
                return spec
        return None


def _stamp() -> str | None:
    """The DIGEST of the compiled build beside the sources, None if there is none."""
    name = f"{PACKAGE}._stamp"
    if importlib.util.find_spec(name) is None:
        return None
    digest: str = importlib.import_module(name).DIGEST
    return digest


def choose() -> tuple[bool, str]:
    """(compiled, why): the build to load, by `XSTREAM_ENGINE` and what is on disk."""
    wanted = os.environ.get(ENV, "")
    if wanted not in ("", "compiled", "pure"):
        raise ImportError(f"{ENV}={wanted!r}: expected compiled or pure (or unset)")
    if wanted == "pure":
        return False, f"{ENV}=pure"
    stamp = _stamp()
    if stamp is None:
        problem = "missing (scripts/mypyc.sh builds it)"
    elif stamp != sources_digest():
        problem = "stale (engine/ changed since it was built: rerun scripts/venv.sh)"
    else:
        return True, "compiled with mypyc"
    if wanted == "compiled":
        raise ImportError(f"{ENV}=compiled, but the compiled engine is {problem}")
    if stamp is not None:
        warnings.warn(
            f"xstream.engine runs as pure Python: its compiled build is {problem}", stacklevel=1
        )
    return False, f"pure Python: the compiled build is {problem}"


def module_name(source: str) -> str:
    """The module of a source path relative to engine/: "commands/__init__.py" is
    xstream.engine.commands."""
    parts = source.removesuffix(".py").split("/")
    return ".".join([PACKAGE, *parts[: -1 if parts[-1] == "__init__" else None]])


def load_compiled() -> None:
    """Import every compiled module (`_stamp.SOURCES`), and give each the __file__, __spec__
    and (a package) __path__ of its own extension module.

    mypyc gives a module that one compiled module imports from another paths derived from
    the place of the build's library, as if it sat above the package tree
    (engine/xstream/engine/X...so for engine/_native__mypyc...so), where no file is; the
    module itself is the right one. Importing all of them here, while nothing else has run,
    leaves none to be imported that way later."""
    stamp = importlib.import_module(f"{PACKAGE}._stamp")
    suffix = Path(stamp.__file__ or "").name.removeprefix("_stamp")
    for source in stamp.SOURCES:
        name, path = module_name(source), FOLDER / (source.removesuffix(".py") + suffix)
        module = importlib.import_module(name)
        package = [str(path.parent)] if source.endswith("/__init__.py") else None
        if module.__file__ == str(path) and getattr(module, "__path__", None) == package:
            continue
        spec = spec_from_file_location(name, path, submodule_search_locations=package)
        assert spec is not None and path.exists(), path
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, str(path)
        if package is not None:
            module.__path__ = package


COMPILED, BUILD = choose()
if COMPILED:
    load_compiled()
else:
    sys.meta_path.insert(0, SourceFinder())
