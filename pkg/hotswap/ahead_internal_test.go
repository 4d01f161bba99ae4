package hotswap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

func TestSpill(t *testing.T) {
	const limit = 100
	content := bytes.Repeat([]byte("0123456789"), 50) // 500 bytes
	tests := []struct {
		name   string
		size   int   // bytes written, in writes of 30
		fail   error // the writer's end
		drop   bool  // the reader drops the stream after wait
		whole  bool
		wantEr error
	}{
		{name: "fits: whole", size: 90, whole: true},
		{name: "empty: whole", size: 0, whole: true},
		{name: "over the limit: a stream of all of it", size: 500},
		{name: "the writer failed", size: 60, fail: io.ErrUnexpectedEOF, wantEr: io.ErrUnexpectedEOF},
		{name: "the writer fails after the buffer filled", size: 500, fail: io.ErrUnexpectedEOF, wantEr: io.ErrUnexpectedEOF},
		{name: "a dropped stream stops the writer", size: 500, drop: true, wantEr: errDropped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpill(limit)
			writerDone := make(chan error, 1)
			go func() {
				var err error
				for off := 0; off < tc.size && err == nil; off += 30 {
					_, err = s.Write(content[off:min(off+30, tc.size)])
				}
				if err == nil {
					err = tc.fail
				}
				s.finish(err)
				writerDone <- err
			}()
			data, whole, err := s.wait()
			if err != nil {
				if !errors.Is(err, tc.wantEr) {
					t.Fatalf("wait: %v, want %v", err, tc.wantEr)
				}
				return
			}
			if whole != tc.whole {
				t.Fatalf("whole %v, want %v", whole, tc.whole)
			}
			if whole {
				if !bytes.Equal(data, content[:tc.size]) {
					t.Errorf("got %q", data)
				}
				return
			}
			if tc.drop {
				_ = s.Close()
				if err := <-writerDone; !errors.Is(err, tc.wantEr) {
					t.Errorf("writer ended with %v, want %v", err, tc.wantEr)
				}
				return
			}
			got, err := io.ReadAll(s)
			if tc.wantEr != nil {
				if !errors.Is(err, tc.wantEr) {
					t.Errorf("read: %v, want %v", err, tc.wantEr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, content[:tc.size]) {
				t.Errorf("read %d bytes (%v), want %d", len(got), err, tc.size)
			}
		})
	}
}

// TestNothingAheadOnAFastLink: no patch is made ahead and no copy kept
// for a link files go as they are over (expected from an earlier
// connection), and what was started is stopped as soon as the node is
// connected on such a link, before the inspect.
func TestNothingAheadOnAFastLink(t *testing.T) {
	old, next := []byte("MZ the build on the node"), []byte("MZ the new build")
	dest := `C:\k\kubelet.exe`
	tests := []struct {
		name     string
		compress delta.Mode
		expected time.Duration // Transfer.ExpectedRTT
		measured time.Duration // 0: not measured
		// wantAhead: Prepare starts work; wantStopped: Run stops it
		// before the inspect.
		wantAhead, wantStopped bool
	}{
		{name: "auto, a local link expected", compress: delta.Mode{Auto: true}, expected: time.Millisecond},
		{name: "auto, a remote link expected", compress: delta.Mode{Auto: true}, expected: 20 * time.Millisecond,
			measured: 20 * time.Millisecond, wantAhead: true},
		{name: "auto, nothing expected, a local link measured", compress: delta.Mode{Auto: true},
			measured: time.Millisecond, wantAhead: true, wantStopped: true},
		{name: "auto, nothing expected or measured", compress: delta.Mode{Auto: true}, wantAhead: true},
		{name: "a remote link expected, a local one measured", compress: delta.Mode{Auto: true}, expected: 20 * time.Millisecond,
			measured: time.Millisecond, wantAhead: true, wantStopped: true},
		{name: "a fixed level encodes on any link", compress: delta.Mode{Level: delta.LevelFastest}, expected: time.Millisecond,
			measured: time.Millisecond, wantAhead: true},
		{name: "compression off", compress: delta.Mode{Level: delta.LevelOff}, wantStopped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, store, hashes := aheadFixture(t, dest, old, next)
			items := []Item{{Name: "kubelet", Service: "kubelet", Destination: dest,
				Source: &source.File{Ref: src, Path: src, Size: int64(len(next)), SHA256: sha(next)}}}
			opts := Options{Hashes: hashes, Transfer: Transfer{Compress: tc.compress, Store: store, ExpectedRTT: tc.expected}}
			a := Prepare(context.Background(), items, opts)
			defer a.Close()
			if (a != nil) != tc.wantAhead {
				t.Fatalf("Prepare started work: %v, want %v", a != nil, tc.wantAhead)
			}
			// Run on a link measured as tc.measured, with a stand-in for
			// what Prepare starts: is it stopped when the inspect starts?
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := &measuredLink{rtt: tc.measured, ahead: ctx}
			opts.Ahead = &Ahead{cancel: cancel}
			if _, err := Run(context.Background(), n, items, opts); !errors.Is(err, errInspected) {
				t.Fatalf("Run: %v", err)
			}
			if n.stopped != tc.wantStopped {
				t.Errorf("stopped before the inspect: %v, want %v", n.stopped, tc.wantStopped)
			}
		})
	}
}

var errInspected = errors.New("inspected")

// measuredLink is a node whose link was measured (rtt 0: not measured);
// its inspect records whether ahead was done and ends the run.
type measuredLink struct {
	Node
	rtt     time.Duration
	ahead   context.Context
	stopped bool
	// wait: the link is measured, WaitLinkRTT waits for it.
	wait bool
}

func (l *measuredLink) LinkRTT() (time.Duration, bool) { return l.rtt, l.rtt > 0 }

func (l *measuredLink) Capabilities() node.Capabilities {
	return node.Capabilities{Encoding: true, LinkRTT: l.wait}
}

func (l *measuredLink) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (l *measuredLink) PrepareAgent(context.Context) error { return nil }

func (l *measuredLink) UploadStream(context.Context, func() (io.ReadCloser, error), string, func(int64)) (int64, error) {
	return 0, errors.New("not expected")
}

func (l *measuredLink) InspectLocked(context.Context, ops.NodeLockRequest, []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	l.stopped = l.ahead.Err() != nil
	return ops.ProvisionInspectResponse{}, errInspected
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestLinkRTT: a link not measured yet when files are staged is waited
// for, not taken for an unknown one (which would encode on loopback).
func TestLinkRTT(t *testing.T) {
	tests := []struct {
		name     string
		n        Node
		wantRTT  time.Duration
		wantOK   bool
		wantPlan bool // auto sends files as they are
	}{
		{name: "measured", n: &measuredLink{rtt: time.Millisecond, wait: true}, wantRTT: time.Millisecond, wantOK: true, wantPlan: true},
		{name: "not measured yet: waited for", n: &waitingLink{measuredLink: measuredLink{wait: true}, later: time.Millisecond}, wantRTT: time.Millisecond, wantOK: true, wantPlan: true},
		{name: "not measured, a remote link", n: &waitingLink{measuredLink: measuredLink{wait: true}, later: 20 * time.Millisecond}, wantRTT: 20 * time.Millisecond, wantOK: true},
		{name: "not measured and no way to wait: unknown", n: &measuredLink{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rtt, ok := linkRTT(context.Background(), tc.n)
			if rtt != tc.wantRTT || ok != tc.wantOK {
				t.Fatalf("linkRTT = %s, %v; want %s, %v", rtt, ok, tc.wantRTT, tc.wantOK)
			}
			if plain := (Transfer{Compress: delta.Mode{Auto: true}}).plain(rtt, ok); plain != tc.wantPlan {
				t.Errorf("plain = %v, want %v", plain, tc.wantPlan)
			}
		})
	}
}

// waitingLink has no measure yet; waiting gives later.
type waitingLink struct {
	measuredLink
	later time.Duration
}

func (l *waitingLink) WaitLinkRTT(context.Context) (time.Duration, bool) { return l.later, true }

// TestPrepareBeforeDigest: a patch started before its source was hashed
// (--watch hashes a rebuild while its patch is made) is made all the
// same; Resolved drops it when the source turns out to be what the node
// has, and starts the copy for the next run's patch under the digest
// resolved. Without Resolved nothing is kept.
func TestPrepareBeforeDigest(t *testing.T) {
	old := bytes.Repeat([]byte("MZ the build on the node, "), 40)
	rebuilt := append(bytes.Clone(old[:500]), []byte("a statement added")...)
	rebuilt = append(rebuilt, old[500:]...)
	dest := `C:\k\kubelet.exe`
	tests := []struct {
		name      string
		content   []byte
		resolve   bool
		wantPatch bool
		wantKept  bool
	}{
		{name: "a rebuild", content: rebuilt, resolve: true, wantPatch: true, wantKept: true},
		{name: "touched, not changed", content: old, resolve: true},
		{name: "never resolved (its source failed)", content: rebuilt, wantPatch: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, store, hashes := aheadFixture(t, dest, old, tc.content)
			item := func(digest string) Item {
				return Item{Name: "kubelet", Service: "kubelet", Destination: dest,
					Source: &source.File{Ref: src, Path: src, Size: int64(len(tc.content)), SHA256: digest}}
			}
			opts := Options{Hashes: hashes, Transfer: Transfer{Compress: delta.Mode{Auto: true}, Store: store, ExpectedRTT: 20 * time.Millisecond}}
			a := Prepare(context.Background(), []Item{item("")}, opts)
			defer a.Close()
			if a == nil {
				t.Fatal("Prepare started nothing for a source without its digest")
			}
			it := item(sha(tc.content))
			// The patch made ahead is done before the digest is known
			// (the order a loaded machine may give): what Resolved drops
			// is not taken all the same.
			if p := a.patches[it.key()]; p != nil {
				_, _, _ = p.out.wait()
			}
			if tc.resolve {
				a.Resolved([]Item{it})
			}
			data, _, ok := a.patch(it, sha(old), func(int64) {})
			if ok != tc.wantPatch {
				t.Fatalf("a patch: %v, want %v", ok, tc.wantPatch)
			}
			if ok {
				var got bytes.Buffer
				if _, err := delta.Apply(&got, bytes.NewReader(old), int64(len(old)), bytes.NewReader(data)); err != nil || !bytes.Equal(got.Bytes(), tc.content) {
					t.Fatalf("the patch rebuilds %d bytes (%v), not the source", got.Len(), err)
				}
			}
			if keeps := a.keeps(it); keeps != tc.wantKept {
				t.Fatalf("a copy kept: %v, want %v", keeps, tc.wantKept)
			}
			if !tc.wantKept {
				return
			}
			a.Close() // waits for the copy
			f, size, err := store.Open(sha(tc.content))
			if err != nil {
				t.Fatalf("the store has no copy under the resolved digest: %v", err)
			}
			f.Close()
			if size != int64(len(tc.content)) {
				t.Errorf("the copy has %d bytes, want %d", size, len(tc.content))
			}
		})
	}
}

// aheadFixture is a source holding next, a store with a copy of old and a
// hash cache that says dest holds old.
func aheadFixture(t *testing.T, dest string, old, next []byte) (string, *delta.Store, *hashcache.File) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	if err := os.WriteFile(src, next, 0o644); err != nil {
		t.Fatal(err)
	}
	store := &delta.Store{Dir: filepath.Join(dir, "store")}
	if err := store.Put(sha(old), bytes.NewReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	hashes := hashcache.Open(filepath.Join(dir, "hashes.json"))
	hashes.Remember(dest, ops.FileInfo{Exists: true, Size: int64(len(old)), SHA256: sha(old)})
	return src, store, hashes
}
