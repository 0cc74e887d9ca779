#!/usr/bin/env bash
# The whole test suite: installs what it needs (Debian's redis-server, etcd-server, strace and a
# Java runtime; a cached venv with pyspark), then
# lint, types, and every pytest tier. Extra arguments go to pytest.
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
echo "== pytest" && $py -m pytest "$@"
