#!/bin/sh
# xstream-start: run this pod's node in manual mode, its role from its StatefulSet ordinal
# (the N of HOSTNAME=NAME-N): ordinal $XSTREAM_PRIMARY_ORDINAL (default 0) is the primary,
# the others are replicas of NAME-<primary ordinal>.$XSTREAM_SERVICE:$XSTREAM_PORT.
# WARNING: with election the role comes from etcd ($XSTREAM_ETCD_ENDPOINTS) and this script
# only passes it through; deploy/k8s/statefulset.yaml sets the variables read here.
# Extra arguments go to `xstream primary|replica` (e.g. --fsync always).
set -eu
host=${HOSTNAME:-$(hostname)}
name=${host%-*}
ordinal=${host##*-}
primary_ordinal=${XSTREAM_PRIMARY_ORDINAL:-0}
port=${XSTREAM_PORT:-7700}
service=${XSTREAM_SERVICE:-$name}
case "$ordinal" in
  ''|*[!0-9]*) echo "xstream-start: hostname $host has no ordinal (NAME-N)" >&2; exit 2 ;;
esac
common="--host 0.0.0.0 --port $port --data-dir ${XSTREAM_DATA_DIR:-/data} --name $host"
common="$common --metrics-port ${XSTREAM_METRICS_PORT:-9700}"
if [ "$ordinal" = "$primary_ordinal" ]; then
  # shellcheck disable=SC2086  # word splitting of $common is intended
  exec xstream primary $common "$@"
fi
# shellcheck disable=SC2086
exec xstream replica $common --primary "$name-$primary_ordinal.$service:$port" "$@"
