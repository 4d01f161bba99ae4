package vm

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

func openTest(t *testing.T, n *v1alpha1.Node) Provider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Open(ctx, n, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
