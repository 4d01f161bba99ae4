package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/source"
)

// A Ctrl-C while the node is being reached says that nothing was changed
// on it, not "context canceled", with exit code 130.
func TestInterruptWhileConnecting(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	if err := os.WriteFile(src, []byte("MZ kubelet v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := []v1alpha1.Node{{}}
	nodes[0].Name, nodes[0].Spec.Credentials.Hostname = "sim", "192.0.2.10:22"
	nodes[0].Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "kubelet", SourceURL: src, Destination: `C:\k\kubelet.exe`}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dialing := make(chan struct{})
	var once sync.Once
	connect := func(ctx context.Context, _ *v1alpha1.Node, _ func(string)) (*node.Node, error) {
		once.Do(func() { close(dialing) })
		<-ctx.Done()
		return nil, fmt.Errorf("dial 192.0.2.10:22: %w", ctx.Err())
	}
	go func() {
		<-dialing
		cancel()
	}()
	err := Run(ctx, nodes, connect, Options{
		CacheDir: filepath.Join(dir, "cache"), Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache")},
		Observer: nopObserver{},
	})
	// The Ctrl-C may come before the node's turn or while it connects.
	if err == nil || !strings.HasPrefix(err.Error(), "node sim: interrupted ") || !strings.HasSuffix(err.Error(), ": nothing was changed on the node") ||
		exitcode.Code(err) != exitcode.Interrupted {
		t.Errorf("Run: %v (exit %d)\nwant node sim interrupted, nothing changed there (exit 130)", err, exitcode.Code(err))
	}
}
