package clustertest

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVersionMatchesModule keeps Version and the release hack/cluster
// builds in step.
func TestVersionMatchesModule(t *testing.T) {
	mod, err := os.ReadFile("../../hack/cluster/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require )?k8s.io/kubernetes (v\S+)$`).FindSubmatch(mod)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("hack/cluster/go.mod requires k8s.io/kubernetes %q; clustertest.Version is %q", m, Version)
	}
}

func TestControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != Version {
		t.Errorf("server version %q, want %q (make cluster-bins stamps it)", v.GitVersion, Version)
	}
	for _, name := range []string{"kubeadm:kubelet-bootstrap", "kubeadm:node-autoapprove-bootstrap"} {
		if _, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("binding %s: %v", name, err)
		}
	}
}
