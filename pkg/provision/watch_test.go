package provision

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	kubelet := filepath.Join(dir, "kubelet.exe")
	proxy := filepath.Join(dir, "kube-proxy.exe")
	for _, p := range []string{kubelet, proxy} {
		if err := os.WriteFile(p, []byte("v1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := make(chan []string, 10)
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		close(ready)
		done <- Watch(ctx, map[string]string{"kubelet": kubelet, "kube-proxy": proxy}, 100*time.Millisecond, func(_ context.Context, names []string) {
			calls <- names
		})
	}()
	<-ready
	time.Sleep(200 * time.Millisecond) // let the watch start

	// A build that writes in bursts, then replaces by rename: one call.
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(kubelet, []byte("v2-part"), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tmp := filepath.Join(dir, "kubelet.exe.tmp")
	if err := os.WriteFile(tmp, []byte("v2-final"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, kubelet); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-calls:
		if !reflect.DeepEqual(got, []string{"kubelet"}) {
			t.Fatalf("first call = %v, want [kubelet]", got)
		}
	case <-ctx.Done():
		t.Fatal("no call after kubelet.exe was rewritten")
	}
	select {
	case got := <-calls:
		t.Fatalf("a second call for one rewrite: %v", got)
	case <-time.After(400 * time.Millisecond):
	}

	// An unrelated file in the same directory is ignored.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proxy, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-calls:
		if !reflect.DeepEqual(got, []string{"kube-proxy"}) {
			t.Fatalf("second call = %v, want [kube-proxy]", got)
		}
	case <-ctx.Done():
		t.Fatal("no call after kube-proxy.exe was rewritten")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
