#!/usr/bin/env bash
# Installs, idempotently, the `helm` CLI used to lint and render the chart in helm/tollgate:
# built once per machine from its Go module at a pinned release (k8s 1.34 line), cached under
# $TOLLGATE_CACHE/bin (default ~/.cache/tollgate/bin). Prints the binary's path.
set -euo pipefail

HELM_VERSION=v3.19.5
cache=${TOLLGATE_CACHE:-$HOME/.cache/tollgate}
bin="$cache/bin"
out="$bin/helm-$HELM_VERSION"
mkdir -p "$bin"

if [ ! -x "$out" ]; then
  command -v go >/dev/null || { echo "[install-helm] Go is required to build helm" >&2; exit 1; }
  echo "[install-helm] building helm $HELM_VERSION (once per machine; a few minutes)" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # GOTOOLCHAIN=local keeps the installed Go; the checksum database stays at Go's default.
  GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$work" \
    go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$work/helm" "$out"
fi
ln -sfn "helm-$HELM_VERSION" "$bin/helm"
echo "$bin/helm"
