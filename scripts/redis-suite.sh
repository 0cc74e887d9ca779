#!/usr/bin/env bash
# Redis's own stream test suites against an xstream node's RESP port (issue 13's acceptance).
#
#   scripts/redis-suite.sh REDIS_SRC [PORT]
#
# REDIS_SRC: a Redis source tree of the release to compare with (8.8.0: its tests/ and
# runtest), fetched by hand outside this repository; nothing of it is copied here, and CI does
# not run this. Without PORT a fresh primary is started (RESP on a free port, data in a
# temporary directory) and stopped afterwards. Prints the harness's output and its summary
# line; exit status 0 when every test passed. Needs tclsh (Debian's tcl).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
src=$(cd "$1" && pwd)
[ -f "$src/tests/test_helper.tcl" ] || { echo "redis-suite: $src has no tests/test_helper.tcl" >&2; exit 2; }
command -v tclsh >/dev/null || { echo "redis-suite: tclsh is missing (apt-get install tcl)" >&2; exit 2; }
port=${2:-}
node_pid=""
tmp=""
if [ -z "$port" ]; then
  tmp=$(mktemp -d)
  port=$("$root/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$root/.venv/bin/xstream" primary --port 0 --resp-port "$port" --data-dir "$tmp/data" \
    >"$tmp/node.log" 2>&1 &
  node_pid=$!
  trap 'kill $node_pid 2>/dev/null || true; wait $node_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
  for _ in $(seq 100); do
    redis-cli -p "$port" PING >/dev/null 2>&1 && break
    sleep 0.1
  done
fi
cd "$src"
status=0
tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" --tags -needs:debug \
  --single unit/type/stream --single unit/type/stream-cgroups 2>&1 | tee "${tmp:-/tmp}/redis-suite.out" || status=$?
# The harness colours its tags (ESC[...m) when it writes to a terminal-like pipe: strip them.
sed 's/\x1b\[[0-9;]*m//g' "${tmp:-/tmp}/redis-suite.out" | grep -E '^\[(ok|err|exception)\]' \
  | cut -d']' -f1 | sort | uniq -c || true
exit $status
