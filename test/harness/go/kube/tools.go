//go:build tools

// Pins the commands this module exists to build, so `go mod tidy` keeps their dependencies: the
// control plane (kube-apiserver, kube-controller-manager, kube-scheduler), the node (kubelet,
// kube-proxy) and kubectl, all from one k8s.io/kubernetes version.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
