#!/usr/bin/env bash
# Make /usr/bin/etcd available for tests/coord (Debian 12's etcd-server, 3.4.23; production
# wants etcd 3.5+). The package enables a system etcd on 2379; it is stopped and disabled,
# since the tests start their own on free ports in a temporary directory.
set -euo pipefail
if command -v etcd >/dev/null; then exit 0; fi
echo "etcd: installing Debian's etcd-server (the failover coordinator for tests)" >&2
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null
$sudo systemctl stop etcd >/dev/null 2>&1 || $sudo service etcd stop >/dev/null 2>&1 || true
$sudo systemctl disable etcd >/dev/null 2>&1 || true
