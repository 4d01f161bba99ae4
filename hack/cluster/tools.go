//go:build tools

// Package cluster pins the Kubernetes release whose control plane and
// kubelet the cluster test tier runs (internal/clustertest, test/wine). It
// is a module of its own so that swdt's go.mod never carries
// k8s.io/kubernetes: `make cluster-bins` builds kube-apiserver,
// kube-controller-manager, kubelet.exe (GOOS=windows) and crifake from it
// into a cache directory, once per version.
package cluster

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
