//go:build tools

// Pins Traefik's command in go.mod and go.sum for `go build github.com/traefik/traefik/v3/cmd/traefik`.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
