#!/usr/bin/env bash
# The whole test suite: installs what it needs (Debian's redis-server, etcd-server, strace and a
# Java runtime; a cached venv with pyspark; gcc and the Python headers for the compiled engine),
# then lint, types, and every pytest tier on the compiled engine and RESP codec, then the unit,
# property and compat tiers again on their pure-Python builds (xstream/builds.py:
# XSTREAM_ENGINE). Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! command -v redis-server >/dev/null; then
  echo "test: installing Debian's redis-server (the compat oracle)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
  # The package starts a system instance; tests start their own on free ports.
  $sudo systemctl stop redis-server >/dev/null 2>&1 || $sudo service redis-server stop >/dev/null 2>&1 || true
fi
if ! command -v strace >/dev/null; then
  echo "test: installing strace (fault injection in tests/integration/test_disk_faults.py)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq strace >/dev/null
fi
if ! command -v java >/dev/null; then
  echo "test: installing a Java runtime (for the Spark tier)" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
scripts/etcd.sh   # Debian's etcd-server for tests/coord; the system instance is stopped
scripts/venv.sh   # pyspark and pyarrow come with the pinned dev dependencies
py=.venv/bin/python
echo "== ruff" && $py -m ruff check . && $py -m ruff format --check .
echo "== mypy" && $py -m mypy
# XSTREAM_ENGINE=compiled fails every import of the engine (and of the RESP codec) if the build
# is missing or stale,
# so a broken build cannot pass as a compiled run (tests/unit/test_engine_build.py checks too).
echo "== pytest (compiled engine)" && XSTREAM_ENGINE=compiled $py -m pytest "$@"
echo "== pytest (pure-Python engine: unit, property, compat)" &&
  XSTREAM_ENGINE=pure $py -m pytest tests/unit tests/property tests/compat "$@"
