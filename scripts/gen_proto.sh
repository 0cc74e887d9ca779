#!/usr/bin/env bash
# Generate the Python code for proto/xstream/v1/*.proto into proto/gen (package xstream.v1).
# The output is committed; tests/unit/test_proto_gen.py checks it is what this script makes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PY:-.venv/bin/python}
out=${1:-proto/gen}
mkdir -p "$out/xstream/v1"
"$py" -m grpc_tools.protoc -I proto --python_out="$out" --pyi_out="$out" \
  --grpc_python_out="$out" proto/xstream/v1/xstream.proto
touch "$out/xstream/v1/__init__.py"
