package provision

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
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
	w, err := NewWatcher(map[string]string{"kubelet": kubelet, "kube-proxy": proxy}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// A build that writes in bursts, then replaces by rename, before Run
	// starts (as during --watch's first run): one call once Run starts.
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
	calls := make(chan []string, 10)
	// OnEvent hears of every change of a watched file at once, before
	// the debounce.
	events := make(chan []string, 100)
	w.OnEvent = func(names []string) { events <- names }
	heard := func(want string) {
		t.Helper()
		n := 0
		for len(events) > 0 {
			if got := <-events; !reflect.DeepEqual(got, []string{want}) {
				t.Fatalf("OnEvent heard %v, want [%s]", got, want)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("OnEvent heard nothing of %s before its call", want)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(_ context.Context, names []string) { calls <- names })
	}()
	select {
	case got := <-calls:
		if !reflect.DeepEqual(got, []string{"kubelet"}) {
			t.Fatalf("first call = %v, want [kubelet]", got)
		}
		heard("kubelet")
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
		heard("kube-proxy")
	case <-ctx.Done():
		t.Fatal("no call after kube-proxy.exe was rewritten")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHashEarly: the sources of the names the watcher heard of are hashed
// at once, and the resolver keeps their digest for the resolve after the
// debounce; nothing is hashed for other names, nor when every resolve
// hashes anyway (--force).
func TestHashEarly(t *testing.T) {
	tests := []struct {
		name   string
		heard  []string
		rehash bool
		want   bool
	}{
		{name: "a changed source is hashed", heard: []string{"sim/kubelet"}, want: true},
		{name: "another provisioner's change hashes nothing", heard: []string{"sim/kube-proxy"}},
		{name: "--force hashes at the resolve only", heard: []string{"sim/kubelet"}, rehash: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "kubelet.exe")
			if err := os.WriteFile(src, []byte("MZ kubelet"), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := &v1alpha1.Node{}
			spec.Name = "sim"
			b := target.Binary{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, SourceURL: src}
			r := &run{nodes: []*session{{spec: spec, provs: []target.Binary{b}}},
				opts: Options{Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache"), Rehash: tc.rehash}}}
			r.hashEarly(context.Background(), tc.heard)
			ch := r.hashing[b.SourceKey()]
			if (ch != nil) != tc.want {
				t.Fatalf("a hash started: %v, want %v", ch != nil, tc.want)
			}
			if ch == nil {
				return
			}
			<-ch
			kept, _ := filepath.Glob(filepath.Join(dir, "cache", "hashes", "*.json"))
			if len(kept) != 1 {
				t.Errorf("the resolver keeps %d digests, want the source's", len(kept))
			}
			// A second change while none is on its way starts another.
			r.hashEarly(context.Background(), tc.heard)
			if again := r.hashing[b.SourceKey()]; again == ch {
				t.Error("a change after the hash ended started none")
			} else {
				<-again
			}
		})
	}
}

// TestWatchFoldersMadeLater: a source whose folder does not exist yet is
// seen once a build makes the folders and writes it, and again after
// the folder was removed (make clean) and made again.
func TestWatchFoldersMadeLater(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "_output", "bin")
	kubelet := filepath.Join(out, "kubelet.exe")
	w, err := NewWatcher(map[string]string{"kubelet": kubelet}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls := make(chan []string, 10)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func(_ context.Context, names []string) { calls <- names }) }()
	build := func(what string) {
		t.Helper()
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kubelet, []byte(what), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-calls:
			if !reflect.DeepEqual(got, []string{"kubelet"}) {
				t.Fatalf("%s: call = %v, want [kubelet]", what, got)
			}
		case err := <-done:
			t.Fatalf("%s: the watch ended: %v", what, err)
		case <-ctx.Done():
			t.Fatalf("%s: not seen", what)
		}
	}
	build("first build")
	build("rebuild")
	if err := os.RemoveAll(filepath.Join(dir, "_output")); err != nil {
		t.Fatal(err)
	}
	build("build after make clean")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
