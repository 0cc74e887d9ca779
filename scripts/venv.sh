#!/usr/bin/env bash
# Make ./.venv: a thin per-checkout venv whose site-packages links (via a .pth file) to a shared,
# cached venv of pinned dependencies keyed by the hash of requirements/*.txt, plus an editable
# install of this checkout. Rebuilding the shared venv happens only when the pins change.
# Last, the engine is compiled with mypyc in place (scripts/mypyc.sh: cached by its sources).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
hash=$(cat requirements/*.txt | sha256sum | cut -c1-16)
cache=${XSTREAM_CACHE:-$HOME/.cache/xstream}
deps="$cache/deps-$hash"
if [ ! -f "$deps/.complete" ]; then
  # One builder at a time (a lock per pin set): a second checkout waits, then finds it built,
  # instead of deleting a venv another checkout's tests are running from.
  mkdir -p "$cache"
  exec 9>"$cache/.lock-$hash"
  flock 9
  if [ ! -f "$deps/.complete" ]; then
    echo "venv: building dependency venv $deps (once per pin set)" >&2
    rm -rf "$deps"
    "$py" -m venv "$deps"
    "$deps/bin/python" -m pip install -q --upgrade pip
    "$deps/bin/python" -m pip install -q -r requirements/dev.txt
    touch "$deps/.complete"
  fi
  exec 9>&-
fi
site=$("$deps/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -f .venv/.deps ] || [ "$(cat .venv/.deps)" != "$deps" ]; then
  rm -rf .venv
  "$py" -m venv --without-pip .venv
  vsite=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site" > "$vsite/_xstream_deps.pth"
  echo "$deps" > .venv/.deps
fi
# The editable install is redone only when its inputs change (a new venv, or pyproject.toml):
# once per change, silently; its output is shown only if it fails. It is the server's install,
# `.[server]`, whose packages the shared venv already holds (requirements/runtime.txt).
stamp=$(cat pyproject.toml "$deps/.complete" | sha256sum | cut -c1-16)
if [ ! -f .venv/.editable ] || [ "$(cat .venv/.editable)" != "$stamp" ]; then
  if ! out=$(.venv/bin/python -m pip install -q --no-build-isolation --no-deps -e ".[server]" 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  echo "$stamp" > .venv/.editable
fi
# Spark finds data sources by listing top-level `pyspark_*` modules on sys.path; the editable
# install's import hook is invisible to that listing, so put the module's folder on the path.
vsite=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$root/pipeline/spark_autoload" > "$vsite/_xstream_spark_autoload.pth"
scripts/mypyc.sh
