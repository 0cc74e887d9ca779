#!/usr/bin/env bash
# Build (or reuse) xstream's container images without any registry; print their tags on
# stdout, one a line, progress on stderr. Run with --help for the details.
#
#   xstream-rootfs:<h0>  debootstrap --variant=minbase bookworm, `docker import`ed
#   xstream-base:<h1>    FROM the rootfs + python3, python3-venv, etcd-server, strace (also etcd's)
#   xstream-node:<h2>    FROM the base + /opt/xstream venv from a host-built wheelhouse
#
# Invariants: a tag is a hash of everything that goes into its image, so `docker image inspect
# TAG` succeeding means the image is current and is reused as is; h1 covers h0, h2 covers h1.
# The debootstrap tarball and the dependency wheelhouse are cached under $cache, so a pruned
# Docker redoes neither. Only the project wheel is rebuilt when the source changes.
# The project's files (hashed into h2, and all the wheel is built from) are pyproject.toml,
# README.md and the folders of the packages pyproject.toml names.
set -euo pipefail

version=1 # bump to force new tags when this script's build steps change
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${XSTREAM_CACHE:-$HOME/.cache/xstream}/images
suite=bookworm
mirror=${XSTREAM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
image_dir=$root/deploy/image

usage() {
  cat <<EOF
usage: scripts/images.sh [--force] [--verbose] [--help]

Build xstream's images with no registry, reusing every cached step; prints the tags made:
  xstream-base:<hash>   Debian $suite minbase (debootstrap + docker import) with python3,
                        python3-venv, etcd-server (3.4) and strace; also the etcd image
  xstream-node:<hash>   the base + a venv in /opt/xstream (wheels built on the host),
                        entrypoint \`xstream\`; also tagged xstream-node:latest
Each tag is a hash of its inputs; an existing tag is reused. Cold: debootstrap and apt
(~2 min); warm: seconds. The tarball and wheelhouse are cached in $cache.

  --force     rebuild the node image even if its tag exists
  --verbose   stream docker build's output to stderr (else shown only on failure)
  --help      this text

Environment: XSTREAM_CACHE (default ~/.cache/xstream), XSTREAM_DEBIAN_MIRROR (default
$mirror). Needs docker and root (or sudo) for debootstrap, which is
installed with apt-get when missing.
EOF
}

force=0
verbose=0
for arg in "$@"; do
  case "$arg" in
    --help | -h) usage; exit 0 ;;
    --force) force=1 ;;
    --verbose | -v) verbose=1 ;;
    *) echo "images: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "images: $*" >&2; }
hash_text() { sha256sum | cut -c1-16; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# The legacy builder: it builds FROM local images without asking a registry, and needs no buildx.
# Its output goes to stderr with --verbose, else to a log shown only when the build fails.
build() {
  if [ "$verbose" = 1 ]; then DOCKER_BUILDKIT=0 docker build "$@" >&2; return; fi
  local log
  log=$(mktemp)
  DOCKER_BUILDKIT=0 docker build "$@" >"$log" 2>&1 || { tail -40 "$log" >&2; rm -f "$log"; return 1; }
  rm -f "$log"
}

command -v docker >/dev/null || { say "docker is not installed"; exit 1; }
mkdir -p "$cache"
started=$SECONDS

# --- rootfs: debootstrap, tarball cached, imported ---
rootfs_hash=$(printf '%s\n' "$version" "$suite" minbase | hash_text)
rootfs_tag=xstream-rootfs:$rootfs_hash
tarball=$cache/rootfs-$suite-$rootfs_hash.tar
if ! have_image "$rootfs_tag"; then
  if [ ! -f "$tarball" ]; then
    if ! command -v debootstrap >/dev/null; then
      say "installing debootstrap"
      as_root apt-get install -y -q debootstrap >&2 ||
        { as_root apt-get update -q >&2 && as_root apt-get install -y -q debootstrap >&2; }
    fi
    say "debootstrap $suite (minbase) from $mirror (~30 s, once)"
    tmp=$(mktemp -d "$cache/rootfs.XXXXXX")
    trap 'as_root rm -rf "$tmp"' EXIT
    as_root debootstrap --variant=minbase "$suite" "$tmp/root" "$mirror" >"$tmp/log" 2>&1 ||
      { tail -20 "$tmp/log" >&2; say "debootstrap failed (log above)"; exit 1; }
    as_root tar -C "$tmp/root" --numeric-owner -cf "$tmp/rootfs.tar" .
    mv "$tmp/rootfs.tar" "$tarball"
    as_root rm -rf "$tmp"
    trap - EXIT
  fi
  say "docker import $tarball as $rootfs_tag"
  docker import "$tarball" "$rootfs_tag" >/dev/null
fi

# --- base: python3, python3-venv, etcd-server, strace from apt ---
base_hash=$(cat <(echo "$version $rootfs_tag") "$image_dir/base.Dockerfile" \
  "$image_dir/packages.txt" | hash_text)
base_tag=xstream-base:$base_hash
if ! have_image "$base_tag"; then
  say "building $base_tag (apt-get install in the image, ~1 min)"
  ctx=$(mktemp -d)
  cp "$image_dir/base.Dockerfile" "$image_dir/packages.txt" "$ctx/"
  build -f "$ctx/base.Dockerfile" --build-arg ROOTFS="$rootfs_tag" -t "$base_tag" "$ctx"
  rm -rf "$ctx"
fi
docker tag "$base_tag" xstream-base:latest

# --- wheelhouse: dependencies (keyed by runtime.txt) + the project wheel (keyed by source) ---
py=$root/.venv/bin/python
[ -x "$py" ] || "$root/scripts/venv.sh"
# The folders of [tool.setuptools] packages (through package-dir), outermost only.
package_dirs() {
  "$py" - "$root/pyproject.toml" <<'EOF'
import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    st = tomllib.load(f)["tool"]["setuptools"]
mapping = st.get("package-dir", {})
dirs = set()
for package in st["packages"]:
    parts = package.split(".")
    for n in range(len(parts), -1, -1):
        prefix = ".".join(parts[:n])
        if prefix in mapping or n == 0:
            base = mapping.get(prefix, "").strip("/")
            dirs.add("/".join(p for p in [base, *parts[n:]] if p))
            break
for d in sorted(dirs):
    if not any(d.startswith(o + "/") for o in dirs):
        print(d)
EOF
}
mapfile -t src_paths < <(package_dirs)
[ "${#src_paths[@]}" -gt 0 ] || { say "found no package folders in pyproject.toml"; exit 1; }
for path in "${src_paths[@]}"; do
  [ -d "$root/$path" ] || { say "pyproject.toml names package folder $path, which is missing"; exit 1; }
done
src_paths+=(pyproject.toml README.md)
arch=$(uname -m)
deps_hash=$(cat <(echo "$version $arch") "$root/requirements/runtime.txt" | hash_text)
deps=$cache/wheels-deps-$deps_hash
if [ ! -f "$deps/.complete" ]; then
  say "downloading dependency wheels into $deps"
  rm -rf "$deps"
  # The wheels are for the image (CPython 3.11, glibc 2.36), not for the host's Python: name
  # its tags, and take wheels only, so a missing wheel fails here instead of compiling.
  platforms=()
  for minor in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${minor}_$arch"); done
  platforms+=(--platform "manylinux2014_$arch")
  PIP_FIND_LINKS='' "$py" -m pip download -q --only-binary=:all: --implementation cp \
    --python-version 3.11 --abi cp311 --abi abi3 --abi none "${platforms[@]}" \
    -r "$root/requirements/runtime.txt" -d "$deps" >&2
  touch "$deps/.complete"
fi
# The compiled engine and RESP codec (scripts/mypyc.sh; cached, so seconds when current) go
# into the wheel when they load here and their modules are for the image's interpreter (CPython
# 3.11 on this architecture, glibc: Debian 12 on both); else the image runs them pure Python.
"$root/scripts/mypyc.sh"
engine=pure
ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
if [ "$ext" != ".cpython-311-$arch-linux-gnu.so" ]; then
  say "the host's Python makes $ext modules, not the image's: the image's engine is pure Python"
elif ! XSTREAM_ENGINE=compiled "$py" -c 'import xstream.engine, xstream.server.resp.codec' \
  2>/dev/null; then
  say "the engine is not compiled here: the image's engine is pure Python"
else
  engine=compiled
fi
hashed=(-type f ! -path '*/__pycache__/*' ! -name '*.pyc')
excludes=(--exclude=__pycache__ --exclude='*.pyc')
if [ "$engine" = pure ]; then # else engine/'s extension modules are hashed and shipped too
  hashed+=(! -name '*.so')
  excludes+=(--exclude='*.so')
fi
src_hash=$(cd "$root" && find "${src_paths[@]}" "${hashed[@]}" -print0 | LC_ALL=C sort -z |
  xargs -0 sha256sum | hash_text)
project=$cache/wheel-project-$src_hash
if [ ! -f "$project/.complete" ]; then
  say "building the xstream wheel (source $src_hash, $engine engine)"
  rm -rf "$project"
  # Built from a copy of exactly the hashed files: setuptools' build/ in the checkout can hold
  # stale modules that would end up in the wheel.
  src=$(mktemp -d)
  (cd "$root" && tar -cf - "${excludes[@]}" "${src_paths[@]}") | tar -C "$src" -xf -
  "$py" -m pip wheel -q --no-deps --no-build-isolation -w "$project" "$src" >&2
  rm -rf "$src"
  if [ "$engine" = compiled ]; then # extension modules: the wheel is for CPython 3.11 here
    "$py" -m wheel tags --remove --python-tag cp311 --abi-tag cp311 \
      --platform-tag "linux_$arch" "$project"/*.whl >/dev/null
  fi
  touch "$project/.complete"
fi

# --- node: the venv in /opt/xstream ---
node_hash=$(cat <(echo "$version $base_tag $deps_hash $src_hash") "$image_dir/node.Dockerfile" \
  "$image_dir/healthcheck.py" "$image_dir/start.sh" | hash_text)
node_tag=xstream-node:$node_hash
if [ "$force" = 1 ] || ! have_image "$node_tag"; then
  say "building $node_tag"
  ctx=$(mktemp -d)
  mkdir "$ctx/deps" "$ctx/project"
  cp "$deps"/*.whl "$ctx/deps/"
  cp "$project"/*.whl "$ctx/project/"
  cp "$image_dir/node.Dockerfile" "$image_dir/healthcheck.py" "$image_dir/start.sh" "$ctx/"
  chmod 0755 "$ctx/healthcheck.py" "$ctx/start.sh"
  build -f "$ctx/node.Dockerfile" --build-arg BASE="$base_tag" --build-arg ENGINE="$engine" \
    -t "$node_tag" "$ctx"
  rm -rf "$ctx"
fi
docker tag "$node_tag" xstream-node:latest
echo "$node_tag" >"$root/deploy/.image-tag"

say "done in $((SECONDS - started)) s"
echo "$base_tag"
echo "$node_tag"
