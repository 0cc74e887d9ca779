"""Compile the engine (engine/, package xstream.engine) and the RESP codec (xstream/server/resp:
codec.py, requests.py) with mypyc; scripts/mypyc.sh drives it.

    mypyc_build.py key            the cache key of a build of the current sources
    mypyc_build.py build DIR      compile into DIR/engine and DIR/resp the extension modules,
                                  by their paths relative to engine/ and xstream/server/resp/:
                                  X.<suffix> for each compiled X.py, _stamp.<suffix>, and
                                  _native__mypyc.<suffix>, the library holding all their code
    mypyc_build.py install DIR    make engine/'s and resp/'s extension modules exactly DIR's
    mypyc_build.py clean          remove them (the pure build remains)

A build compiles a copy of each group's sources laid out as its installed package
(engine/ as xstream/engine/, the codec's modules as xstream/server/resp/), so that module names
are the installed ones, plus for each group a generated `_stamp.py` holding its sources' digest
(xstream/builds.py: BuildGroup.digest), which xstream/builds.py compares when the group's
package is imported, to refuse a stale build. Each group is one library (calls within it are
direct C calls); the codec's imports only the engine's pure modules. The key covers every
group's sources, this file, mypy's version, the interpreter and its C compiler: anything else
that changes the output.

The groups, and the modules of each left pure, are xstream/builds.py's GROUPS (its comments say
why each module is left pure).
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

from xstream import builds
from xstream.builds import BuildGroup

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


@dataclass(frozen=True)
class Group:
    """One compiled library (xstream/builds.py's BuildGroup) in this checkout."""

    group: BuildGroup
    folder: Path  # its sources in the checkout (its extension modules are installed here)

    @property
    def name(self) -> str:  # DIR/<name> in a build
        return self.group.name

    @property
    def package(self) -> str:  # its installed package, as a path: xstream/engine
        return self.group.package.replace(".", "/")

    @property
    def library(self) -> str:  # the library module: <package>/_native__mypyc.<suffix>
        return self.group.package + "._native"

    def sources(self) -> list[str]:
        return self.group.sources(self.folder)

    def compiled(self) -> list[str]:
        return self.group.compiled_sources(self.folder)

    def digest(self) -> str:
        """The digest xstream/builds.py checks when the group's package is imported."""
        return self.group.digest(self.folder)

    def installed(self) -> list[Path]:
        return sorted(self.folder.rglob("*" + SUFFIX))


GROUPS = tuple(Group(group, ROOT / group.checkout) for group in builds.GROUPS)


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
                f'"""The sources this build of {group.package} was made from."""\n\n'
                f"DIGEST = {group.digest()!r}  # BuildGroup.digest() of its sources\n"
                f"SOURCES = {compiled!r}  # compiled, besides this module\n"
            )
        # Packages above the groups' (and a group's own, when not one of its sources) are
        # empty here: mypy reads no more of the tree.
        for group in GROUPS:
            package = Path(group.package)
            for folder in (package, *package.parents[:-1]):
                init = Path(tmp) / folder / "__init__.py"
                if not init.exists():
                    init.write_text("")
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
    # One library per group, so calls between its modules are direct C calls; xstream/builds.py
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
