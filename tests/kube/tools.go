//go:build tools

// Package kubebins only records, for `go mod tidy`, the Kubernetes commands that
// `make kube-bins` builds (kube-apiserver and kube-scheduler for the end-to-end tests).
package kubebins

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
