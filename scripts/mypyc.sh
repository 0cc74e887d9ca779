#!/usr/bin/env bash
# Optional: compile the engine's hot modules with mypyc (the same source; the pure-Python package
# stays the default and the fallback, and nothing requires this build). The output is
# build/mypyc/xstream: a copy of the package with compiled extension modules beside the sources.
# Use it by putting it first on the import path, with the checkout root (whose xstream/ is the
# pure package) kept off it:
#
#     scripts/mypyc.sh
#     PYTHONSAFEPATH=1 PYTHONPATH=build/mypyc .venv/bin/python benchmarks/engine_bench.py --quick
#     PYTHONSAFEPATH=1 PYTHONPATH=build/mypyc .venv/bin/python -m pytest tests -q
#
# The source tree never holds a .so, so edits and tests can never meet a stale compiled module;
# rebuild after changing engine/. Needs a C compiler and the Python headers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/venv.sh
out=build/mypyc
rm -rf "$out"
mkdir -p "$out/xstream"
cp xstream/*.py "$out/xstream/"
cp -r engine "$out/xstream/engine"
find "$out" -name __pycache__ -prune -exec rm -rf {} +
# The hot paths: appends, range reads, IDs, the rax, XADD/XRANGE. Modules left out stay Python
# (reply.py subclasses builtins, which mypyc does not compile).
modules=(listpack node stream rax ids api commands/add_trim commands/read)
files=()
for m in "${modules[@]}"; do files+=("xstream/engine/$m.py"); done
cd "$out"
"$root/.venv/bin/python" -m mypyc "${files[@]}" >mypyc.log 2>&1 || { cat mypyc.log >&2; exit 1; }
rm -rf build mypyc.log  # mypyc's generated C and objects
echo "mypyc: built $(find xstream -name '*.so' | wc -l) modules in $out"
