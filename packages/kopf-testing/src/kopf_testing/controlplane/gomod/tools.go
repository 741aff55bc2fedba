//go:build tools

// Package tools names the main packages built into the local control plane,
// so that the module graph (go.mod, go.sum) keeps every dependency they need.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
