"""Compile the engine (engine/, package xstream.engine) with mypyc; scripts/mypyc.sh drives it.

    mypyc_build.py key            the cache key of a build of the current sources
    mypyc_build.py build DIR      compile into DIR the extension modules, by their paths
                                  relative to engine/: X.<suffix> for each compiled X.py,
                                  _stamp.<suffix>, and _native__mypyc.<suffix>, the library
                                  holding all their code
    mypyc_build.py install DIR    make engine/'s extension modules exactly DIR's
    mypyc_build.py clean          remove engine/'s extension modules (the pure build remains)

A build compiles a copy of engine/ laid out as xstream/engine/, so that module names are the
installed ones, plus a generated `_stamp.py` holding the sources' digest
(engine/native.py: sources_digest), which engine/native.py compares at import to refuse a
stale build. The key covers the sources, this file, mypy's version, the interpreter and its
C compiler: anything else that changes the output.

Modules left pure: engine/native.py's PURE (its comment says why each).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
GROUP = "xstream.engine._native"  # the library: engine/_native__mypyc.<suffix>


def sources_digest() -> str:
    """The digest engine/native.py checks at import. Imported under XSTREAM_ENGINE=pure (set
    in main), so that no compiled module of a previous build is loaded by this process."""
    from xstream.engine.native import sources_digest  # noqa: PLC0415

    return sources_digest(ENGINE)


def pure_modules() -> tuple[str, ...]:
    from xstream.engine.native import PURE  # noqa: PLC0415

    return PURE


def key() -> str:
    from mypy.version import __version__ as mypy_version  # noqa: PLC0415  (the build venv's)

    h = hashlib.sha256()
    for part in (
        sources_digest(),
        Path(__file__).read_text(),
        mypy_version,
        sys.version,
        SUFFIX,
        str(sysconfig.get_config_var("CC")),
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def build(out: Path) -> None:
    pure = pure_modules()
    sources = sorted(path.relative_to(ENGINE).as_posix() for path in ENGINE.rglob("*.py"))
    with tempfile.TemporaryDirectory(prefix="xstream-mypyc-") as tmp:
        package = Path(tmp) / "xstream" / "engine"
        for rel in sources:
            (package / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ENGINE / rel, package / rel)
        (package.parent / "__init__.py").write_text("")
        compiled = tuple(rel for rel in sources if rel not in pure)
        (package / "_stamp.py").write_text(
            '"""What this build of the engine was compiled from (engine/native.py)."""\n\n'
            f"DIGEST = {sources_digest()!r}  # native.sources_digest() of engine/\n"
            f"SOURCES = {compiled!r}  # compiled, besides this module\n"
        )
        argv = [sys.executable, __file__, "setup", *compiled]
        setup = subprocess.run(argv, cwd=tmp, check=False)
        if setup.returncode:
            sys.exit(setup.returncode)  # mypy's or the compiler's messages are above
        out.mkdir(parents=True, exist_ok=True)
        for so in package.rglob("*" + SUFFIX):
            dest = out / so.relative_to(package)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(so, dest)


def setup(compiled: list[str]) -> None:
    """setuptools' build_ext --inplace of the mypyc extensions, run in the build's copy."""
    from mypyc.build import mypycify  # noqa: PLC0415  (only the build needs mypy)
    from setuptools import setup as setuptools_setup  # noqa: PLC0415

    package = Path("xstream/engine")
    files = sorted(str(p) for p in package.rglob("*.py"))
    # All files are given to mypy (the pure ones are imported); only these are compiled.
    paths = [str(package / rel) for rel in [*compiled, "_stamp.py"]]
    # No config file: the project's mypy settings name its whole tree, not this copy.
    # One library for the whole engine (GROUP), so calls between modules are direct C calls;
    # engine/native.py repairs the module paths mypyc derives from the library's place.
    extensions = mypycify(["--config-file=", *files], only_compile_paths=paths, group_name=GROUP)
    setuptools_setup(
        name="xstream-engine-mypyc",
        ext_modules=extensions,
        script_args=["build_ext", "--inplace"],
    )


def installed() -> list[Path]:
    return sorted(ENGINE.rglob("*" + SUFFIX))


def install(out: Path) -> None:
    """engine/'s extension modules become exactly `out`'s. A file is replaced by a rename,
    never rewritten in place: a running process may have it mapped."""
    wanted = {so.relative_to(out) for so in out.rglob("*" + SUFFIX)}
    for so in installed():
        if so.relative_to(ENGINE) not in wanted:
            so.unlink()
    for rel in sorted(wanted):
        src, dest = out / rel, ENGINE / rel
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
        case ["setup", *compiled]:
            setup(compiled)
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
