//go:build unix

package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/source"
)

// TestSessionCloseWaits: closing a session returns only once the index it
// builds in the background (--watch) has ended. The store's copy is a
// FIFO, whose open blocks until a writer opens it: the index being built
// holds close until the test releases the copy, and once close has
// returned nothing reads the copy any more (a write finds no reader).
func TestSessionCloseWaits(t *testing.T) {
	store := &delta.Store{Dir: t.TempDir()}
	digest := strings.Repeat("ab", 32)
	fifo := filepath.Join(store.Dir, digest)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s := &session{spec: &v1alpha1.Node{}}
	s.open(context.Background(), nil, nopObserver{}, true)
	items := []hotswap.Item{{Name: "kubelet", Destination: `C:\k\kubelet.exe`, Source: &source.File{SHA256: digest}}}
	report := &hotswap.Report{Results: []hotswap.Result{{Name: "kubelet", Action: hotswap.ActionUpdated}}}
	s.keep(hotswap.Options{Transfer: hotswap.Transfer{Store: store}}, items, report)

	closed := make(chan struct{})
	go func() {
		s.close()
		close(closed)
	}()
	// Returns once the index's builder has opened the copy: that
	// releases it.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	<-closed
	if _, err := w.Write([]byte("MZ")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("after close, a write to the copy gives %v, want EPIPE: the index's builder still has it open", err)
	}
}
