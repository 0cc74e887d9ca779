#!/usr/bin/env bash
# The main job: a local cluster (a primary on 7700, replicas on 7701 and 7702, data under ./data,
# metrics on 9700-9702), no Docker needed. Ctrl-C stops it. Extra arguments go to `xstream up`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/venv.sh
exec .venv/bin/xstream up --data-dir data "$@"
