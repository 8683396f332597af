//go:build tools

// Pins the command this module exists to build, so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/dexidp/dex/cmd/dex"
