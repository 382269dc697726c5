//go:build tools

// Package tools pins the helm command this module builds so that `go mod tidy` keeps its dependencies.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
