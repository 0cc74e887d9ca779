"""Which build of the RESP codec this process loads: compiled (mypyc) or the pure-Python source.

The engine's way (engine/native.py), for the edge's hot modules: COMPILED below are compiled
by scripts/mypyc.sh as a group of their own, in place, each `X.py` getting an extension
module `X.cpython-311-<platform>.so` beside it, their code in `_native__mypyc...so`, and a
stamp module `_stamp...so` whose `DIGEST` is the `sources_digest()` of the sources the build
was made from. The other modules of this package (server.py, the connection's commands) stay
pure: they subclass asyncio's classes and run a few lines per request each.

The same `XSTREAM_ENGINE` chooses, for these modules as for the engine:
    compiled   the compiled build, or ImportError when it is missing or stale
    pure       the source, whatever is compiled beside it
    (unset)    the compiled build when it is present and current, else the source; a stale
               build (sources edited since) is named in a warning, never run

Invariants: the package's __init__ imports this module before any other of the package, so
the choice is made once and a process never mixes the builds of these modules; `COMPILED`
says which was chosen. What is compiled imports nothing sideways: only xstream.engine's pure
modules (reply.py, errors.py) and hiredis.
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

ENV = "XSTREAM_ENGINE"  # WARNING: the engine's variable (engine/native.py ENV): one choice
PACKAGE = __name__.rpartition(".")[0]  # xstream.server.resp
FOLDER = Path(__file__).resolve().parent
# The compiled modules, in import order (requests.py subclasses codec.py's RespParser; a
# compiled class takes no subclass defined in Python, so the two are compiled together).
COMPILED_SOURCES = ("codec.py", "requests.py")


def sources_digest(folder: Path = FOLDER) -> str:
    """sha256 of the compiled modules' sources (names and contents), what `_stamp.DIGEST`
    holds for the sources a build was compiled from (scripts/mypyc_build.py writes it)."""
    h = hashlib.sha256()
    for source in COMPILED_SOURCES:
        h.update(source.encode() + b"\0")
        h.update((folder / source).read_bytes() + b"\0")
    return h.hexdigest()


class SourceFinder(MetaPathFinder):
    """Finds the compiled modules (and the stamp) as .py sources only, never an extension."""

    _loaders = ((SourceFileLoader, SOURCE_SUFFIXES),)
    _names = frozenset(f"{PACKAGE}.{s.removesuffix('.py')}" for s in COMPILED_SOURCES)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is None or fullname not in self._names:
            return None
        for entry in path:
            spec = FileFinder(entry, *self._loaders).find_spec(fullname)
            if spec is not None and spec.loader is not None:
                return spec
        return None


def _stamp() -> str | None:
    """The compiled build's digest, or None if there is no compiled build."""
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
        problem = "stale (its sources changed since it was built: rerun scripts/venv.sh)"
    else:
        return True, "compiled with mypyc"
    if wanted == "compiled":
        raise ImportError(f"{ENV}=compiled, but the compiled RESP codec is {problem}")
    if stamp is not None:
        warnings.warn(
            f"the RESP codec runs as pure Python: its compiled build is {problem}", stacklevel=1
        )
    return False, f"pure Python: the compiled build is {problem}"


def load_compiled() -> None:
    """Import the compiled modules, each given the __file__ and __spec__ of its own
    extension module (mypyc derives the paths of a module imported by another of its group
    from the library's place; importing all of them first leaves none imported that way)."""
    stamp = importlib.import_module(f"{PACKAGE}._stamp")
    suffix = Path(stamp.__file__ or "").name.removeprefix("_stamp")
    for source in COMPILED_SOURCES:
        name = f"{PACKAGE}.{source.removesuffix('.py')}"
        path = FOLDER / (source.removesuffix(".py") + suffix)
        module = importlib.import_module(name)
        if module.__file__ == str(path):
            continue
        spec = spec_from_file_location(name, path)
        assert spec is not None and path.exists(), path
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, str(path)


COMPILED, BUILD = choose()
if COMPILED:
    load_compiled()
else:
    sys.meta_path.insert(0, SourceFinder())
