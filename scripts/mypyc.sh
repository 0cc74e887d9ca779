#!/usr/bin/env bash
# Compile the engine and the RESP codec with mypyc, in place: engine/X.py gets
# engine/X.cpython-311-<platform>.so beside it (gitignored), which Python imports instead of the
# source (xstream/builds.py says how the pure build stays available: XSTREAM_ENGINE=pure); so do
# xstream/server/resp/codec.py and requests.py (the same chooser, the same variable).
# scripts/venv.sh runs this.
#
# Builds are cached in $cache/engine-<key>, the key a hash of engine/*.py, the codec's modules,
# scripts/mypyc_build.py, mypy's version and the interpreter (scripts/mypyc_build.py key): an
# unchanged build is copied in, not compiled (1.5-2 min of one core, both groups: a change of
# either compiles both). The newest few builds are kept.
# Needs a C compiler and the Python headers; on Debian they are installed with apt-get when
# missing. Without them, or if the build fails, the engine stays pure Python and this says so
# in one line (exit 0: the pure engine is a complete one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=.venv/bin/python
cache=${XSTREAM_CACHE:-$HOME/.cache/xstream}
keep=4 # cached builds kept (the newest by use)
say() { echo "mypyc: $*" >&2; }
pure() {
  "$py" scripts/mypyc_build.py clean
  say "$*; the engine and the RESP codec run as pure Python"
  exit 0
}

key=$("$py" scripts/mypyc_build.py key) || pure "could not read the engine's sources"
out=$cache/engine-$key
if [ ! -f "$out/.complete" ]; then
  # The toolchain: $CC or the compiler the interpreter was built with, and its headers.
  read -r cc inc pkg < <("$py" -c 'import os, sys, sysconfig
cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
print(cc, sysconfig.get_paths()["include"], "python%d.%d-dev" % sys.version_info[:2])')
  missing=()
  command -v "$cc" >/dev/null || missing+=(gcc)
  [ -f "$inc/Python.h" ] || missing+=("$pkg")
  if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's ${missing[*]} (to compile the engine)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      "${missing[@]}" >/dev/null; } || true
  fi
  command -v "$cc" >/dev/null || pure "no C compiler ($cc)"
  [ -f "$inc/Python.h" ] || pure "no Python headers ($inc/Python.h; Debian: $pkg)"
  # One builder per key: a second checkout waits, then finds it built.
  mkdir -p "$cache"
  exec 9>"$cache/.lock-engine-$key"
  flock 9
  if [ ! -f "$out/.complete" ]; then
    say "compiling the engine and the RESP codec (once per change of either, 1-2 min) into $out"
    rm -rf "$out"
    log=$(mktemp)
    started=$SECONDS
    if ! "$py" scripts/mypyc_build.py build "$out" >"$log" 2>&1; then
      tail -30 "$log" >&2
      rm -rf "$out" "$log"
      pure "the build failed (output above)"
    fi
    rm -f "$log"
    touch "$out/.complete"
    say "compiled in $((SECONDS - started)) s"
  fi
  exec 9>&-
fi
touch "$out" # last used: pruning keeps the newest
"$py" scripts/mypyc_build.py install "$out"
# Prune: the newest $keep builds stay (another checkout may be on an older engine).
ls -1dt "$cache"/engine-*/ 2>/dev/null | tail -n +$((keep + 1)) | while read -r old; do
  rm -rf "$old"
done
