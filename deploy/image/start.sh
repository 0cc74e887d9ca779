#!/bin/sh
# xstream-start: run this pod's node. Two modes:
# - election (XSTREAM_ETCD_ENDPOINTS set, the default in deploy/k8s): `xstream node`; every pod
#   campaigns on etcd, the most up-to-date one is promoted and the others follow it. The pod
#   advertises NAME-N.$XSTREAM_SERVICE:$XSTREAM_PORT (the headless Service's DNS name).
# - manual (XSTREAM_ETCD_ENDPOINTS empty): its role from its StatefulSet ordinal (the N of
#   HOSTNAME=NAME-N): ordinal $XSTREAM_PRIMARY_ORDINAL (default 0) is the primary, the others
#   are replicas of NAME-<primary ordinal>.$XSTREAM_SERVICE:$XSTREAM_PORT.
# Extra arguments go to `xstream node|primary|replica` (e.g. --fsync always).
set -eu
host=${HOSTNAME:-$(hostname)}
name=${host%-*}
ordinal=${host##*-}
primary_ordinal=${XSTREAM_PRIMARY_ORDINAL:-0}
port=${XSTREAM_PORT:-7700}
service=${XSTREAM_SERVICE:-$name}
etcd=${XSTREAM_ETCD_ENDPOINTS:-}
case "$ordinal" in
  ''|*[!0-9]*) echo "xstream-start: hostname $host has no ordinal (NAME-N)" >&2; exit 2 ;;
esac
# --insecure: plaintext on 0.0.0.0 (TLS for the pods, with certificates made at start, is
# issue 14's next step; until then the pod network must be trusted).
common="--host 0.0.0.0 --insecure --port $port --data-dir ${XSTREAM_DATA_DIR:-/data} --name $host"
common="$common --metrics-port ${XSTREAM_METRICS_PORT:-9700}"
if [ -n "$etcd" ]; then
  # shellcheck disable=SC2086  # word splitting of $common is intended
  exec xstream node $common --etcd "$etcd" --advertise "$host.$service:$port" \
    --lease-ttl "${XSTREAM_LEASE_TTL:-2}" "$@"
fi
if [ "$ordinal" = "$primary_ordinal" ]; then
  # shellcheck disable=SC2086
  exec xstream primary $common "$@"
fi
# shellcheck disable=SC2086
exec xstream replica $common --primary "$name-$primary_ordinal.$service:$port" "$@"
