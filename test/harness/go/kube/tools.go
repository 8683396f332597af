//go:build tools

// Pins the command this module exists to build, so `go mod tidy` keeps its dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
