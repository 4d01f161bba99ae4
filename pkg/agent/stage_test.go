package agent_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

func TestStageDecode(t *testing.T) {
	t.Parallel()
	const dest = `C:\k\tool.exe`
	old := bytes.Repeat([]byte("MZ old kubelet code, mostly kept by a rebuild. "), 40_000)
	nw := append(bytes.Clone(old[:900_000]), append([]byte("a small change"), old[900_000:]...)...)
	compressed := func(t *testing.T) []byte {
		var b bytes.Buffer
		if _, err := delta.Compress(context.Background(), &b, bytes.NewReader(nw), func() delta.Level { return delta.LevelFastest }); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	patch := func(t *testing.T, ref []byte) []byte {
		var b bytes.Buffer
		if _, err := delta.Diff(context.Background(), &b, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(nw)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	const staged = dest + ".swdt-new-run1"
	tests := []struct {
		name     string
		encoding string
		encoded  func(t *testing.T) []byte
		onNode   []byte // the destination's content when the agent runs
		damage   string
		wantErr  string
	}{
		{"compressed", ops.EncodingZstd, compressed, old, "", ""},
		{"patch", ops.EncodingPatch, func(t *testing.T) []byte { return patch(t, old) }, old, "", ""},
		{"destination replaced by a file of the same size", ops.EncodingPatch,
			func(t *testing.T) []byte { return patch(t, old) }, bytes.ReplaceAll(old, []byte("code"), []byte("CODE")), "", "SHA-256"},
		{"destination changed since the patch was made", ops.EncodingPatch,
			func(t *testing.T) []byte { return patch(t, old) }, old[:len(old)-10], "", "another file"},
		{"truncated patch", ops.EncodingPatch, func(t *testing.T) []byte { return patch(t, old) }, old, "truncate", "decode"},
		{"corrupted compressed upload", ops.EncodingZstd, compressed, old, "corrupt", "decode"},
		{"truncated compressed upload", ops.EncodingZstd, compressed, old, "truncate", "decode"},
		{"unknown encoding", "gzip", compressed, old, "", "unknown encoding"},
		{"compressed upload longer than declared", ops.EncodingZstd, func(t *testing.T) []byte {
			var b bytes.Buffer
			if _, err := delta.Compress(context.Background(), &b, bytes.NewReader(append(bytes.Clone(nw), '!')), func() delta.Level { return delta.LevelFastest }); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}, old, "", "longer than its declared size of 1880014 bytes"},
		{"patch longer than declared", ops.EncodingPatch, func(t *testing.T) []byte {
			var b bytes.Buffer
			if _, err := delta.Diff(context.Background(), &b, bytes.NewReader(old), int64(len(old)), "", bytes.NewReader(append(bytes.Clone(nw), nw...))); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}, old, "", "longer than its declared size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{DamageEncoded: tc.damage}))
			n := ts.Node()
			item := ops.StageDecodeItem{Encoded: staged + ".swdt-zst", Encoding: tc.encoding, Staged: staged, SHA256: provSum(nw), Size: int64(len(nw))}
			if tc.encoding == ops.EncodingPatch {
				item.Reference = dest
			}
			if err := n.WriteFile(dest, tc.onNode); err != nil {
				t.Fatal(err)
			}
			if err := n.WriteFile(item.Encoded, tc.encoded(t)); err != nil {
				t.Fatal(err)
			}
			file, leftover, err := agent.DecodeStaged(n.OS(), item)
			if leftover != nil {
				t.Errorf("leftover: %v", leftover)
			}
			if _, err := n.Stat(item.Encoded); err == nil {
				t.Error("the encoded upload was left on the node")
			}
			staged, serr := n.ReadFile(item.Staged)
			if tc.wantErr == "" {
				if err != nil || serr != nil || !bytes.Equal(staged, nw) {
					t.Fatalf("decode: %v, staged err %v", err, serr)
				}
				if file.SHA256 != provSum(nw) || file.Size != int64(len(nw)) || file.ModTicks == 0 {
					t.Errorf("file %+v", file)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("decode: %v, want an error with %q", err, tc.wantErr)
			}
			if serr == nil {
				t.Error("a staged file that failed its check was kept")
			}
			if got, _ := n.ReadFile(dest); !bytes.Equal(got, tc.onNode) {
				t.Error("the destination changed")
			}
		})
	}
}

// TestStageDecodeRefuses: names that are not a run's staged file and its
// encoded upload leave every file as it was. (The swap op that decodes
// refuses a caller without the node's lock before it decodes anything:
// TestServiceSwapRefusedWhileLocked.)
func TestStageDecodeRefuses(t *testing.T) {
	t.Parallel()
	const dest = `C:\k\tool.exe`
	content := []byte("MZ the binary the service runs")
	var enc bytes.Buffer
	if _, err := delta.Compress(context.Background(), &enc, bytes.NewReader(content), func() delta.Level { return delta.LevelFastest }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		item    ops.StageDecodeItem
		wantErr string
	}{
		{name: "the destination as the encoded upload",
			item:    ops.StageDecodeItem{Encoded: dest, Staged: dest + ".swdt-new-r", Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "the destination as the staged file",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-zst", Staged: dest, Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "a staged name without a run ID",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-new-.swdt-zst", Staged: dest + ".swdt-new-", Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "a staged name with a path after the mark",
			item:    ops.StageDecodeItem{Encoded: dest + `.swdt-new-x\..\tool.exe.swdt-zst`, Staged: dest + `.swdt-new-x\..\tool.exe`, Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			tc.item.SHA256 = provSum(content)
			files := map[string][]byte{dest: content, tc.item.Encoded: enc.Bytes()}
			for p, b := range files {
				if err := n.WriteFile(p, b); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := agent.DecodeStaged(n.OS(), tc.item)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("decode: %v, want an error with %q", err, tc.wantErr)
			}
			for p, b := range files {
				if got, err := n.ReadFile(p); err != nil || !bytes.Equal(got, b) {
					t.Errorf("%s changed (%v)", p, err)
				}
			}
			// (A name that resolves to the destination is checked above.)
			if _, err := n.Stat(tc.item.Staged); err == nil && tc.item.Staged != dest && !strings.Contains(tc.item.Staged, "..") {
				t.Errorf("%s was written", tc.item.Staged)
			}
		})
	}
}

// writeCounter is the node's file system, counting what is written to the
// files it creates.
type writeCounter struct {
	winos.OS
	written int64
}

func (w *writeCounter) Create(path string) (io.WriteCloser, error) {
	f, err := w.OS.Create(path)
	if err != nil {
		return nil, err
	}
	return &countedFile{WriteCloser: f, n: &w.written}, nil
}

type countedFile struct {
	io.WriteCloser
	n *int64
}

func (f *countedFile) Write(p []byte) (int, error) {
	n, err := f.WriteCloser.Write(p)
	*f.n += int64(n)
	return n, err
}

// A zstd bomb (36 KB that decode to 1 GiB) writes no more than the
// size the swap declared before it is refused.
func TestDecodeBombStopsAtDeclaredSize(t *testing.T) {
	t.Parallel()
	const dest = `C:\k\tool.exe`
	const staged = dest + ".swdt-new-run1"
	var frame bytes.Buffer
	if _, err := delta.Compress(context.Background(), &frame, bytes.NewReader(make([]byte, 4<<20)), func() delta.Level { return delta.LevelBest }); err != nil {
		t.Fatal(err)
	}
	bomb := bytes.Repeat(frame.Bytes(), 256) // frames concatenate: 1 GiB of zeros
	const declared = 2 << 20
	ts := simnode.StartTest(t)
	n := ts.Node()
	item := ops.StageDecodeItem{Encoded: staged + ".swdt-zst", Encoding: ops.EncodingZstd, Staged: staged, SHA256: provSum([]byte("x")), Size: declared}
	if err := n.WriteFile(item.Encoded, bomb); err != nil {
		t.Fatal(err)
	}
	w := &writeCounter{OS: n.OS()}
	_, _, err := agent.DecodeStaged(w, item)
	if err == nil || !strings.Contains(err.Error(), "longer than its declared size of 2097152 bytes") {
		t.Fatalf("decode of a %d-byte bomb: %v, want it refused at the declared size", len(bomb), err)
	}
	if w.written > declared {
		t.Errorf("the decode wrote %d bytes, more than the %d declared", w.written, declared)
	}
	if n.Exists(staged) || n.Exists(item.Encoded) {
		t.Error("the bomb or what it decoded to was left on the node")
	}
}

// BenchmarkDecodePatch256 is the node's work for a 256 MB rebuild sent
// as a patch (28 bytes changed in the middle): the swap op decodes it into
// the staged file, writing and hashing it in one pass, on NTFS, and on ReFS
// cloning the copies and reading them back to hash them. Run with TMPDIR
// on a tmpfs to measure without a disk, on XFS or Btrfs for simnode's
// ReFS to share blocks on the host.
func BenchmarkDecodePatch256(b *testing.B) {
	const dest = `C:\k\tool.exe`
	const staged = dest + ".swdt-new-run1"
	old := make([]byte, 256<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{37}), old)
	nw := bytes.Clone(old)
	copy(nw[len(nw)/2:], "a small change in the middle")
	var patch bytes.Buffer
	if _, err := delta.Diff(context.Background(), &patch, bytes.NewReader(old), int64(len(old)), "", bytes.NewReader(nw)); err != nil {
		b.Fatal(err)
	}
	for _, fs := range []string{simnode.NTFS, simnode.ReFS} {
		b.Run(fs, func(b *testing.B) {
			ts := simnode.StartTest(b, simnode.WithOptions(func(o *simnode.Options) { o.FileSystem = fs }))
			n := ts.Node()
			if err := n.WriteFile(dest, old); err != nil {
				b.Fatal(err)
			}
			item := ops.StageDecodeItem{Encoded: staged + ".swdt-zst", Encoding: ops.EncodingPatch, Reference: dest, Staged: staged, SHA256: provSum(nw), Size: int64(len(nw))}
			b.SetBytes(int64(len(nw)))
			for b.Loop() {
				b.StopTimer()
				if err := n.WriteFile(item.Encoded, patch.Bytes()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, _, err := agent.DecodeStaged(n.OS(), item); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cloneSpy is the node's file system, counting what the files it creates
// clone and the opens of readBack; it can make their clones refused, or
// take the wrong clusters.
type cloneSpy struct {
	winos.OS
	refuse, wrong bool
	calls         int
	cloned        int64
	readBack      string
	opens         int
}

func (s *cloneSpy) Open(path string) (winos.File, error) {
	if path == s.readBack {
		s.opens++
	}
	return s.OS.Open(path)
}

func (s *cloneSpy) Create(path string) (io.WriteCloser, error) {
	f, err := s.OS.Create(path)
	if cl, ok := f.(winos.Cloner); ok && err == nil {
		return &spyCloner{Cloner: cl, s: s}, nil
	}
	return f, err
}

type spyCloner struct {
	winos.Cloner
	s *cloneSpy
}

func (c *spyCloner) CloneAppend(src winos.File, off, n int64) error {
	c.s.calls++
	switch {
	case c.s.refuse:
		return &winos.Error{Op: "clone into", Code: winos.ErrInvalidParameter, Message: "refused"}
	case c.s.wrong && off >= c.ClusterSize():
		off -= c.ClusterSize()
	case c.s.wrong:
		off += c.ClusterSize()
	}
	err := c.Cloner.CloneAppend(src, off, n)
	if err == nil {
		c.s.cloned += n
	}
	return err
}

// TestDecodePatchClones: on a ReFS volume a patch's long copies from the
// reference are cloned where they fall on the staged file's clusters,
// and copied elsewhere; a refused clone is copied, and no more are tried.
// What is cloned is hashed as the reference holds it when only
// administrators can change the reference; else the staged file is read
// back, so that a clone that took the wrong clusters fails the decode.
// NTFS copies everything.
func TestDecodePatchClones(t *testing.T) {
	t.Parallel()
	const dest = `C:\k\tool.exe`
	const staged = dest + ".swdt-new-run1"
	const c = simnode.ReFSCluster
	old := make([]byte, 8<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{3}), old)
	changed := bytes.Clone(old)
	copy(changed[4<<20+100:], "a small change in the middle")
	inserted := append(bytes.Clone(old[:4<<20+100]), append([]byte("5 more"), old[4<<20+100:]...)...)
	tests := []struct {
		name       string
		fs         string
		nw         []byte
		spy        cloneSpy
		usersWrite bool  // Users may change the reference
		wantCloned int64 // at least
		wantMax    int64 // at most
		wantCalls  int   // -1: any
		wantOpens  int   // of the staged file, to read it back
		wantErr    string
	}{
		{name: "a change in place: both copies cloned, hashed from the reference", fs: simnode.ReFS, nw: changed,
			wantCloned: int64(len(old)) - 2*c, wantMax: int64(len(old)), wantCalls: 2},
		{name: "a reference users may change: the clones are read back", fs: simnode.ReFS, nw: changed, usersWrite: true,
			wantCloned: int64(len(old)) - 2*c, wantMax: int64(len(old)), wantCalls: 2, wantOpens: 1},
		{name: "an insert: the copy after it is misaligned and copied", fs: simnode.ReFS, nw: inserted,
			wantCloned: 4 << 20, wantMax: 4<<20 + c, wantCalls: 1},
		{name: "the volume refuses: copied, no second try", fs: simnode.ReFS, nw: changed, spy: cloneSpy{refuse: true}, wantCalls: 1},
		{name: "a clone of the wrong clusters, read back, is caught by the digest", fs: simnode.ReFS, nw: changed, spy: cloneSpy{wrong: true},
			usersWrite: true, wantCloned: c, wantMax: int64(len(old)), wantCalls: -1, wantOpens: 1, wantErr: "SHA-256"},
		{name: "NTFS copies", fs: simnode.NTFS, nw: changed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.FileSystem = tc.fs }))
			n := ts.Node()
			var patch bytes.Buffer
			if _, err := delta.Diff(context.Background(), &patch, bytes.NewReader(old), int64(len(old)), "", bytes.NewReader(tc.nw)); err != nil {
				t.Fatal(err)
			}
			if err := n.WriteFile(dest, old); err != nil {
				t.Fatal(err)
			}
			if tc.usersWrite {
				if err := n.SetACL(dest, &simnode.ACL{Entries: []simnode.ACE{{Identity: simnode.AccountUsers, Rights: "M"}}}); err != nil {
					t.Fatal(err)
				}
			}
			item := ops.StageDecodeItem{Encoded: staged + ".swdt-zst", Encoding: ops.EncodingPatch, Reference: dest, Staged: staged,
				SHA256: provSum(tc.nw), Size: int64(len(tc.nw))}
			if err := n.WriteFile(item.Encoded, patch.Bytes()); err != nil {
				t.Fatal(err)
			}
			spy := tc.spy
			spy.OS, spy.readBack = n.OS(), staged
			_, _, err := agent.DecodeStaged(&spy, item)
			if spy.cloned < tc.wantCloned || spy.cloned > tc.wantMax || (tc.wantCalls >= 0 && spy.calls != tc.wantCalls) {
				t.Errorf("cloned %d bytes in %d calls, want %d to %d bytes in %d", spy.cloned, spy.calls, tc.wantCloned, tc.wantMax, tc.wantCalls)
			}
			if spy.opens != tc.wantOpens {
				t.Errorf("the staged file was opened %d times to be read back, want %d", spy.opens, tc.wantOpens)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("decode: %v, want an error with %q", err, tc.wantErr)
				}
				if n.Exists(staged) {
					t.Error("a staged file that failed its check was kept")
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got, err := n.ReadFile(staged); err != nil || !bytes.Equal(got, tc.nw) {
				t.Errorf("the staged file is not the new build (%v)", err)
			}
		})
	}
}
