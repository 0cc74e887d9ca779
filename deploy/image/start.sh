#!/bin/sh
# xstream-start: run this pod's node. Two modes:
# - election (XSTREAM_ETCD_ENDPOINTS set, the default in deploy/k8s): `xstream node`; every pod
#   campaigns on etcd, the most up-to-date one is promoted and the others follow it. The pod
#   advertises NAME-N.$XSTREAM_SERVICE:$XSTREAM_PORT (the headless Service's DNS name).
# - manual (XSTREAM_ETCD_ENDPOINTS empty): its role from its StatefulSet ordinal (the N of
#   HOSTNAME=NAME-N): ordinal $XSTREAM_PRIMARY_ORDINAL (default 0) is the primary, the others
#   are replicas of NAME-<primary ordinal>.$XSTREAM_SERVICE:$XSTREAM_PORT.
# TLS and users: with XSTREAM_SECRETS (a directory as `xstream secrets` makes it; deploy/k8s
# mounts the Secrets there) the node serves TLS with $XSTREAM_SECRETS/tls/<pod>.crt, loads
# $XSTREAM_SECRETS/users/users.acl and replicates as `replica`. Without it the node runs in
# plaintext only if XSTREAM_INSECURE=yes (else it refuses to listen on 0.0.0.0).
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
common="--host 0.0.0.0 --port $port --data-dir ${XSTREAM_DATA_DIR:-/data} --name $host"
common="$common --metrics-port ${XSTREAM_METRICS_PORT:-9700}"
secrets=${XSTREAM_SECRETS:-}
if [ -n "$secrets" ]; then
  common="$common --tls-dir $secrets/tls --aclfile $secrets/users/users.acl"
  common="$common --primary-user replica --primary-password-file $secrets/users/replica.password"
elif [ "${XSTREAM_INSECURE:-}" = yes ]; then
  common="$common --insecure"  # plaintext on 0.0.0.0: the pod network must be trusted
fi
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
