#!/usr/bin/env bash
# Installs, idempotently, every real component the tests and the demo start:
# Debian packages (redis-server, nginx-light, chromium, python3-venv, openssl, prometheus), kube-apiserver +
# kubectl + etcd + MinIO + Dex built from Go modules at pinned versions, the Python venv with MLServer,
# and the test cluster's node: kubelet, kube-proxy, kube-controller-manager, kube-scheduler and
# CoreDNS from Go modules, the pause binary from the Kubernetes module's source, containerd, runc,
# the CNI plugins, iptables, buildah and debootstrap from Debian. Slow builds are cached outside
# the clone under $TOLLGATE_CACHE (default ~/.cache/tollgate), keyed by pinned version, so every
# clone on the machine shares them. The container images are built by build-images.sh.
#
#   install.sh [all|apt|go|venv|cluster]
#
# Go modules are verified against the go.sum files committed beside each helper module
# (-mod=readonly), so a build needs the module proxy but not the checksum database. If this
# machine cannot reach the proxy, set GOPROXY to a mirror you trust; if it can reach the proxy but
# not the checksum database and a go.sum must be regenerated, run `go mod tidy` in the helper
# module with GONOSUMDB set for its modules, and review the go.sum diff before committing it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${TOLLGATE_CACHE:-$HOME/.cache/tollgate}
bin="$cache/bin"
mkdir -p "$bin"
# Several clones (or engineers) may run this at once; the builds must not race.
exec 9>"$cache/.install.lock"
flock 9

KUBE_VERSION=v1.34.4
COREDNS_VERSION=v1.12.1 # from go/coredns/go.mod
TRAEFIK_VERSION=v3.6.12 # from go/traefik/go.mod
# go-control-plane's envoy module (go/extauthz-client/go.mod), and the client's own revision.
EXTAUTHZ_CLIENT_VERSION=envoy-v1.40.0-1
# The Gateway API CRDs (standard channel) the test cluster's Traefik serves: Traefik's own (go/traefik/go.sum).
GATEWAY_API_VERSION=v1.4.0
OTELCOL_VERSION=v0.165.0 # go/otelcol/go.mod
KUBE_ROUTER_VERSION=v2.1.0 # from go/kube-router/go.mod (the one version the module proxy serves)
ETCD_VERSION=v3.6.4
MINIO_VERSION=RELEASE.2025-09-07T16-13-09Z
MINIO_TIME=2025-09-07T16:13:09Z # the same release, as MinIO's own version string
MINIO_COMMIT=07c3a429bfed       # from the pseudo-version in go/minio/go.mod
DEX_VERSION=v2.45.1             # go/dex/go.mod pins its commit (Dex tags are not module versions)
requirements="$root/images/mlserver"
VENV_KEY=$(cat "$requirements/requirements.txt" "$requirements/requirements.lock" | sha256sum | cut -c1-12)
tools="$here/tools"
TOOLS_KEY=$(cat "$tools/requirements.txt" "$tools/requirements.lock" | sha256sum | cut -c1-12)

log() { printf '[install] %s\n' "$*" >&2; }

need_apt() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v nginx >/dev/null || missing+=(nginx-light)
  command -v wrk >/dev/null || missing+=(wrk)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v prometheus >/dev/null || missing+=(prometheus)
  python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # Debian's redis and prometheus packages start system services; the tests start their own.
  local service
  for service in redis-server prometheus; do
    if command -v systemctl >/dev/null && systemctl is-active --quiet "$service" 2>/dev/null; then
      systemctl stop "$service" || true
    elif [ -x "/etc/init.d/$service" ] && "/etc/init.d/$service" status >/dev/null 2>&1; then
      "/etc/init.d/$service" stop >/dev/null 2>&1 || true
    fi
  done
}

# go_build <helper-module-dir> <package> <output> [ldflags]
go_build() {
  local dir=$1 pkg=$2 out=$3 ldflags=${4:-}
  if [ -x "$out" ]; then return; fi
  log "building $(basename "$out") (once per machine; several minutes)"
  # GOTOOLCHAIN=local keeps the installed Go; -mod=readonly makes the committed go.sum the
  # authority (a module missing from it is an error, not a silent addition).
  if ! (cd "$dir" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -tags selinux,notest -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg"); then
    rm -f "$out.tmp"
    log "building $pkg failed; see the notes at the top of $0 about the module proxy and go.sum"
    exit 1
  fi
  mv "$out.tmp" "$out"
}

need_go() {
  command -v go >/dev/null || { log "Go is required to build kube-apiserver, etcd and MinIO"; exit 1; }
  go_build "$here/go/kube" k8s.io/kubernetes/cmd/kube-apiserver "$bin/kube-apiserver-$KUBE_VERSION" \
    "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
  # kubectl at the apiserver's version: Debian's kubectl is years older than 1.34.
  go_build "$here/go/kube" k8s.io/kubernetes/cmd/kubectl "$bin/kubectl-$KUBE_VERSION" \
    "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
  go_build "$here/go/etcd" go.etcd.io/etcd/server/v3 "$bin/etcd-$ETCD_VERSION"
  go_build "$here/go/minio" github.com/minio/minio "$bin/minio-$MINIO_VERSION" \
    "-X github.com/minio/minio/cmd.Version=$MINIO_TIME -X github.com/minio/minio/cmd.ReleaseTag=$MINIO_VERSION -X github.com/minio/minio/cmd.CommitID=$MINIO_COMMIT -X github.com/minio/minio/cmd.ShortCommitID=$MINIO_COMMIT"
  # The OpenID Connect provider of the panel's sign-in tests.
  go_build "$here/go/dex" github.com/dexidp/dex/cmd/dex "$bin/dex-$DEX_VERSION"
  ln -sfn "kube-apiserver-$KUBE_VERSION" "$bin/kube-apiserver"
  ln -sfn "kubectl-$KUBE_VERSION" "$bin/kubectl"
  ln -sfn "etcd-$ETCD_VERSION" "$bin/etcd"
  ln -sfn "minio-$MINIO_VERSION" "$bin/minio"
  ln -sfn "dex-$DEX_VERSION" "$bin/dex"
  # The cluster's ingress controller, and a proxy the forward-auth tests put in front of Tollgate.
  go_build "$here/go/traefik" github.com/traefik/traefik/v3/cmd/traefik "$bin/traefik-$TRAEFIK_VERSION" \
    "-X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION"
  ln -sfn "traefik-$TRAEFIK_VERSION" "$bin/traefik"
  need_gateway_api_crds
  # A client of Envoy's ext_authz API from the published proto (go-control-plane).
  go_build "$here/go/extauthz-client" . "$bin/extauthz-client-$EXTAUTHZ_CLIENT_VERSION"
  ln -sfn "extauthz-client-$EXTAUTHZ_CLIENT_VERSION" "$bin/extauthz-client"
  # The OpenTelemetry Collector the tracing tests and the bench send spans to (OTLP receiver, debug exporter).
  go_build "$here/go/otelcol" . "$bin/otelcol-$OTELCOL_VERSION"
  ln -sfn "otelcol-$OTELCOL_VERSION" "$bin/otelcol"
}

# The Gateway API's CRDs from its Go module, at the version Traefik was built against (its go.sum
# vouches for the files), in one manifest the harness applies to the test cluster.
need_gateway_api_crds() {
  local out="$cache/gateway-api-$GATEWAY_API_VERSION.yaml"
  [ -f "$out" ] && return
  local dir
  dir=$(cd "$here/go/traefik" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly" go mod download -json sigs.k8s.io/gateway-api |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  local v
  v=$(basename "$dir")
  if [ "${v#*@}" != "$GATEWAY_API_VERSION" ]; then
    log "Traefik's module list has $v, not sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION: update GATEWAY_API_VERSION"
    exit 1
  fi
  local f
  for f in "$dir"/config/crd/standard/gateway.networking.k8s.io_*.yaml; do
    printf -- '---\n'
    cat "$f"
  done >"$out.tmp"
  mv "$out.tmp" "$out"
}

need_venv() {
  local venv="$cache/venv-$VENV_KEY"
  # The stamp is written last, so an interrupted install is redone rather than trusted.
  if [ ! -f "$venv/.complete" ]; then
    log "creating the Python venv (mlserver, scikit-learn) at $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    # requirements.lock pins every transitive package, so the venv is the same on every machine.
    "$venv/bin/pip" install -q -r "$requirements/requirements.txt" -c "$requirements/requirements.lock"
    touch "$venv/.complete"
  fi
  ln -sfn "$venv" "$root/.venv"
}

# Test tools (schemathesis) in a venv of their own: the MLServer venv mirrors the runtime image.
need_tools_venv() {
  local venv="$cache/tools-venv-$TOOLS_KEY"
  if [ ! -f "$venv/.complete" ]; then
    log "creating the test tools venv (schemathesis) at $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$tools/requirements.txt" -c "$tools/requirements.lock"
    touch "$venv/.complete"
  fi
  ln -sfn "$venv" "$root/.venv-tools"
}

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  log "apt-get install $*"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# The test cluster's node. Debian's containerd starts no service here (no systemd); the harness
# runs its own containerd with its own root, state, socket and CNI directories.
need_cluster() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v buildah >/dev/null || missing+=(buildah)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

  local kube_ldflags="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
  local cmd
  for cmd in kubelet kube-proxy kube-controller-manager kube-scheduler; do
    go_build "$here/go/kube" "k8s.io/kubernetes/cmd/$cmd" "$bin/$cmd-$KUBE_VERSION" "$kube_ldflags"
    ln -sfn "$cmd-$KUBE_VERSION" "$bin/$cmd"
  done
  go_build "$here/go/coredns" . "$bin/coredns-$COREDNS_VERSION" \
    "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
  ln -sfn "coredns-$COREDNS_VERSION" "$bin/coredns"
  # The cluster's NetworkPolicy enforcer (the bridge CNI enforces none).
  go_build "$here/go/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router \
    "$bin/kube-router-$KUBE_ROUTER_VERSION" \
    "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION"
  ln -sfn "kube-router-$KUBE_ROUTER_VERSION" "$bin/kube-router"

  # The sandbox ("pause") container: Kubernetes' own pause.c from the pinned module, static.
  local pause="$bin/pause-$KUBE_VERSION"
  if [ ! -x "$pause" ]; then
    local src
    src=$(cd "$here/go/kube" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' k8s.io/kubernetes)
    log "building pause from $src/build/pause/linux/pause.c"
    gcc -Os -Wall -Werror -static -DVERSION="$KUBE_VERSION" -o "$pause.tmp" "$src/build/pause/linux/pause.c"
    strip "$pause.tmp"
    mv "$pause.tmp" "$pause"
  fi
  ln -sfn "pause-$KUBE_VERSION" "$bin/pause"
}

what=${1:-all}
case "$what" in
  apt) need_apt ;;
  go) need_go ;;
  venv) need_venv ;;
  tools) need_tools_venv ;;
  cluster) need_cluster ;;
  # The venv (mostly downloads) is made while the Go builds (mostly CPU) run.
  all)
    need_apt
    { need_venv && need_tools_venv; } &
    venv_pid=$!
    need_go
    need_cluster
    wait "$venv_pid" || { log "creating the venv failed"; exit 1; }
    ;;
  *) echo "usage: install.sh [all|apt|go|venv|tools|cluster]" >&2; exit 2 ;;
esac
