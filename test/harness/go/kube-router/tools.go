//go:build tools

// Pins kube-router's command in go.mod and go.sum for
// `go build github.com/cloudnativelabs/kube-router/v2/cmd/kube-router`.
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
