"""Compile the engine (engine/, package xstream.engine) and the RESP codec (xstream/server/resp:
codec.py, requests.py) with mypyc; scripts/mypyc.sh drives it.

    mypyc_build.py key            the cache key of a build of the current sources
    mypyc_build.py build DIR      compile into DIR/engine and DIR/resp the extension modules,
                                  by their paths relative to engine/ and xstream/server/resp/:
                                  X.<suffix> for each compiled X.py, _stamp.<suffix>, and
                                  _native__mypyc.<suffix>, the library holding all their code
    mypyc_build.py install DIR    make engine/'s and resp/'s extension modules exactly DIR's
    mypyc_build.py clean          remove them (the pure build remains)

A build compiles a copy of engine/ laid out as xstream/engine/ and of the codec's modules as
xstream/server/resp/, so that module names are the installed ones, plus for each of the two
groups a generated `_stamp.py` holding its sources' digest (engine/native.py and
xstream/server/resp/native.py: sources_digest), which the group's native.py compares at import
to refuse a stale build. Each group is one library (calls within it are direct C calls); the
codec's imports only the engine's pure modules. The key covers both groups' sources, this
file, mypy's version, the interpreter and its C compiler: anything else that changes the output.

Modules left pure: engine/native.py's PURE (its comment says why each); in the RESP edge all
but xstream/server/resp/native.py's COMPILED_SOURCES.
"""

from __future__ import annotations

import filecmp
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"
RESP = ROOT / "xstream" / "server" / "resp"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


@dataclass(frozen=True)
class Group:
    """One compiled library: where its sources are, where they are built, what is pure."""

    name: str  # DIR/<name> in a build
    folder: Path  # its sources in the checkout (its extension modules are installed here)
    package: str  # its installed package, as a path: xstream/engine
    library: str  # the library module: <package>/_native__mypyc.<suffix>

    def sources(self) -> list[str]:
        """The .py files of the group, relative to its folder."""
        if self is ENGINE_GROUP:
            return sorted(path.relative_to(ENGINE).as_posix() for path in ENGINE.rglob("*.py"))
        from xstream.server.resp.native import COMPILED_SOURCES  # noqa: PLC0415

        return list(COMPILED_SOURCES)

    def compiled(self) -> list[str]:
        if self is ENGINE_GROUP:
            from xstream.engine.native import PURE  # noqa: PLC0415

            return [rel for rel in self.sources() if rel not in PURE]
        return self.sources()

    def digest(self) -> str:
        """The digest the group's native.py checks at import. Imported under
        XSTREAM_ENGINE=pure (set in main): no compiled module of a previous build is loaded."""
        if self is ENGINE_GROUP:
            from xstream.engine.native import sources_digest  # noqa: PLC0415

            return sources_digest(ENGINE)
        from xstream.server.resp.native import sources_digest as resp_digest  # noqa: PLC0415

        return resp_digest(RESP)

    def installed(self) -> list[Path]:
        return sorted(self.folder.rglob("*" + SUFFIX))


ENGINE_GROUP = Group("engine", ENGINE, "xstream/engine", "xstream.engine._native")
RESP_GROUP = Group("resp", RESP, "xstream/server/resp", "xstream.server.resp._native")
GROUPS = (ENGINE_GROUP, RESP_GROUP)


def key() -> str:
    from mypy.version import __version__ as mypy_version  # noqa: PLC0415  (the build venv's)

    h = hashlib.sha256()
    for part in (
        *(group.digest() for group in GROUPS),
        Path(__file__).read_text(),
        mypy_version,
        sys.version,
        SUFFIX,
        str(sysconfig.get_config_var("CC")),
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def build(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="xstream-mypyc-") as tmp:
        for group in GROUPS:
            package = Path(tmp) / group.package
            for rel in group.sources():
                (package / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(group.folder / rel, package / rel)
            compiled = tuple(group.compiled())
            (package / "_stamp.py").write_text(
                f'"""What this build of {group.package} was compiled from (native.py)."""\n\n'
                f"DIGEST = {group.digest()!r}  # native.sources_digest() of its sources\n"
                f"SOURCES = {compiled!r}  # compiled, besides this module\n"
            )
        # Packages above the groups' are empty here: mypy reads no more of the tree.
        for init in ("xstream/__init__.py", "xstream/server/__init__.py",
                     "xstream/server/resp/__init__.py"):  # fmt: skip
            (Path(tmp) / init).write_text("")
        for group in GROUPS:
            paths = [f"{group.package}/{rel}" for rel in [*group.compiled(), "_stamp.py"]]
            argv = [sys.executable, __file__, "setup", group.library, *paths]
            setup = subprocess.run(argv, cwd=tmp, check=False)
            if setup.returncode:
                sys.exit(setup.returncode)  # mypy's or the compiler's messages are above
            package = Path(tmp) / group.package
            for so in package.rglob("*" + SUFFIX):
                dest = out / group.name / so.relative_to(package)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(so, dest)
                so.unlink()  # not installed again by the next group's build_ext


def setup(library: str, paths: list[str]) -> None:
    """setuptools' build_ext --inplace of one group's mypyc extensions, in the build's copy."""
    from mypyc.build import mypycify  # noqa: PLC0415  (only the build needs mypy)
    from setuptools import setup as setuptools_setup  # noqa: PLC0415

    files = sorted(str(p) for p in Path("xstream").rglob("*.py"))
    # All files are given to mypy (the pure ones are imported); only `paths` are compiled.
    # No config file: the project's mypy settings name its whole tree, not this copy.
    # One library per group, so calls between its modules are direct C calls; native.py
    # repairs the module paths mypyc derives from the library's place.
    extensions = mypycify(["--config-file=", *files], only_compile_paths=paths, group_name=library)
    setuptools_setup(
        name="xstream-mypyc-" + library.replace(".", "-"),
        ext_modules=extensions,
        script_args=["build_ext", "--inplace", "--build-temp", "build/" + library],
    )


def installed() -> list[Path]:
    return [so for group in GROUPS for so in group.installed()]


def install(out: Path) -> None:
    """Each group's extension modules become exactly `out`'s. A file is replaced by a
    rename, never rewritten in place: a running process may have it mapped."""
    for group in GROUPS:
        built = out / group.name
        wanted = {so.relative_to(built) for so in built.rglob("*" + SUFFIX)}
        for so in group.installed():
            if so.relative_to(group.folder) not in wanted:
                so.unlink()
        for rel in sorted(wanted):
            src, dest = built / rel, group.folder / rel
            if dest.exists() and filecmp.cmp(src, dest, shallow=False):
                continue
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dest)


def main(argv: list[str]) -> int:
    os.environ["XSTREAM_ENGINE"] = "pure"
    match argv:
        case ["key"]:
            print(key())
        case ["build", out]:
            build(Path(out))
        case ["install", out]:
            install(Path(out))
        case ["clean"]:
            for so in installed():
                so.unlink()
        case ["setup", library, *paths]:
            setup(library, paths)
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
