#!/usr/bin/env bash
# The main job: an engine shell (redis-cli style) over a local snapshot file under ./data.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/venv.sh
mkdir -p data
exec .venv/bin/xstream shell --snapshot data/engine.snapshot "$@"
