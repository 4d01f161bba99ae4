package hotswap_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

const kubelet = `C:\k\kubelet.exe`

// exe is a compressible stand-in for a binary: words from a small
// vocabulary, so that it compresses about as well as Go's code.
func exe(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := make([][]byte, 256)
	for i := range words {
		words[i] = make([]byte, 3+r.IntN(20))
		for j := range words[i] {
			words[i][j] = byte(r.IntN(256))
		}
	}
	b := bytes.NewBufferString("MZ")
	for b.Len() < n {
		b.Write(words[r.IntN(len(words))])
	}
	return b.Bytes()[:n]
}

// flip is b with every byte changed and the same size.
func flip(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = c ^ 0x20
	}
	return out
}

func sourceFile(t *testing.T, name string, content []byte) *source.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	return &source.File{Ref: p, Path: p, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])}
}

func connect(t testing.TB, ts *simnode.TestServer) *node.Node {
	t.Helper()
	cfg, err := node.RemoteConfig(ts.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	cfg.SSHConfigFile = "none"
	c, err := remote.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := node.New("sim", c, nil)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// link is a node whose link has the round-trip time rtt: the loopback
// the tests run on would otherwise count as a local network.
type link struct {
	*node.Node
	rtt time.Duration
}

func (l link) LinkRTT() (time.Duration, bool) { return l.rtt, true }

// hookObserver runs onUpload when staging starts, after the inspect.
type hookObserver struct {
	// onUpload runs once, when staging starts: the first upload, or the
	// step that says a patch goes in the swap request.
	onUpload func()
	steps    []string
}

func (o *hookObserver) Planned(*hotswap.Plan) {}
func (o *hookObserver) Step(msg string) {
	o.steps = append(o.steps, msg)
	if strings.Contains(msg, "goes in the swap request") {
		o.staging()
	}
}
func (o *hookObserver) Upload(hotswap.Item) func(int64) {
	o.staging()
	return func(int64) {}
}

func (o *hookObserver) staging() {
	if o.onUpload != nil {
		o.onUpload()
		o.onUpload = nil
	}
}

func TestEncodedTransfers(t *testing.T) {
	v1 := exe(1, 3<<20)
	v2 := bytes.Clone(v1)
	copy(v2[1<<20:], "a rebuilt function")
	v2 = append(v2[:2<<20:2<<20], append([]byte("new code shifts the rest"), v2[2<<20:]...)...)

	tests := []struct {
		name string
		// before runs after v1 is on the node and in the store.
		before      func(t *testing.T, ts *simnode.TestServer, store *delta.Store)
		duringStage func(t *testing.T, ts *simnode.TestServer)
		compress    delta.Mode
		// rtt is the link's round-trip time (0: 20 ms, a VPN).
		rtt          time.Duration
		wantTransfer string
		wantStep     string // a message the run must show
		maxSent      int64
	}{
		{name: "a patch against the binary on the node", compress: delta.Mode{Auto: true},
			wantTransfer: hotswap.TransferPatch, maxSent: 64 << 10},
		{name: "compressed at a fixed level when no copy is kept", compress: delta.Mode{Level: delta.LevelDefault},
			before: func(t *testing.T, _ *simnode.TestServer, store *delta.Store) {
				if err := os.RemoveAll(store.Dir); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, maxSent: int64(len(v2)) * 3 / 4},
		{name: "off sends the file as it is", compress: delta.Mode{},
			wantTransfer: hotswap.TransferPlain, maxSent: int64(len(v2))},
		{name: "auto sends a whole file as it is on a local network", compress: delta.Mode{Auto: true}, rtt: time.Millisecond,
			before: func(t *testing.T, _ *simnode.TestServer, store *delta.Store) {
				if err := os.RemoveAll(store.Dir); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferPlain, maxSent: int64(len(v2))},
		{name: "auto sends no patch on a local network", compress: delta.Mode{Auto: true}, rtt: time.Millisecond,
			wantTransfer: hotswap.TransferPlain, maxSent: int64(len(v2))},
		{name: "a fixed level compresses on a local network too", compress: delta.Mode{Level: delta.LevelFastest}, rtt: time.Millisecond,
			before: func(t *testing.T, _ *simnode.TestServer, store *delta.Store) {
				if err := os.RemoveAll(store.Dir); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, maxSent: int64(len(v2)) * 3 / 4},
		{name: "a truncated patch falls back to the whole file", compress: delta.Mode{Auto: true},
			before: func(t *testing.T, ts *simnode.TestServer, _ *delta.Store) {
				if err := ts.SetFaults(simnode.Faults{DamageEncoded: "truncate"}); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, wantStep: "the patch did not work", maxSent: int64(len(v2))},
		{name: "a corrupted patch falls back to the whole file", compress: delta.Mode{Auto: true},
			before: func(t *testing.T, ts *simnode.TestServer, _ *delta.Store) {
				if err := ts.SetFaults(simnode.Faults{DamageEncoded: "corrupt"}); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, wantStep: "the patch did not work", maxSent: int64(len(v2))},
		{name: "the binary on the node changed after the inspect", compress: delta.Mode{Auto: true},
			duringStage: func(t *testing.T, ts *simnode.TestServer) {
				// Same size, other bytes: only the digest can tell. The
				// running binary can only be renamed away, as on NTFS.
				if err := ts.Node().Rename(kubelet, kubelet+".moved", false); err != nil {
					t.Error(err)
				}
				if err := ts.Node().WriteFile(kubelet, flip(v1)); err != nil {
					t.Error(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, wantStep: "SHA-256", maxSent: int64(len(v2))},
		{name: "staging holds the node's lock, which names the run's encoded upload", compress: delta.Mode{Auto: true},
			duringStage: func(t *testing.T, ts *simnode.TestServer) {
				raw, err := ts.Node().ReadFile(ops.LockPath)
				if err != nil {
					t.Errorf("no lock while staging: %v", err)
					return
				}
				var rec struct {
					Owner  ops.LockOwner `json:"owner"`
					Staged []string      `json:"staged"`
				}
				if err := json.Unmarshal(raw, &rec); err != nil {
					t.Error(err)
				}
				want := []string{kubelet + ".swdt-new-" + rec.Owner.RunID, kubelet + ".swdt-new-" + rec.Owner.RunID + ".swdt-zst"}
				if rec.Owner.RunID == "" || !slices.Equal(rec.Staged, want) {
					t.Errorf("lock %s, want staged %q", raw, want)
				}
			},
			wantTransfer: hotswap.TransferPatch, maxSent: 64 << 10},
		{name: "the kept copy is not what the node has", compress: delta.Mode{Auto: true},
			before: func(t *testing.T, _ *simnode.TestServer, store *delta.Store) {
				sum := sha256.Sum256(v1)
				p := filepath.Join(store.Dir, hex.EncodeToString(sum[:]))
				if err := os.WriteFile(p, flip(v1), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(p + ".idx"); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, wantStep: "not the file expected", maxSent: int64(len(v2))},
		// Its saved index spares reading the copy to index it; every match
		// is still checked byte for byte against the copy, and the node
		// checks the result.
		{name: "the kept copy is not what the node has, its index saved", compress: delta.Mode{Auto: true},
			before: func(t *testing.T, _ *simnode.TestServer, store *delta.Store) {
				sum := sha256.Sum256(v1)
				if err := os.WriteFile(filepath.Join(store.Dir, hex.EncodeToString(sum[:])), flip(v1), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantTransfer: hotswap.TransferPatch, maxSent: int64(len(v2))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			rtt := tc.rtt
			if rtt == 0 {
				rtt = 20 * time.Millisecond
			}
			n := link{Node: connect(t, ts), rtt: rtt}
			store := &delta.Store{Dir: t.TempDir()}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			push := func(content []byte, compress delta.Mode, obs hotswap.Observer) hotswap.Result {
				t.Helper()
				item := hotswap.Item{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "kubelet.exe", content)}
				rep, err := hotswap.Run(ctx, n, []hotswap.Item{item}, hotswap.Options{
					Settle: 0, Transfer: hotswap.Transfer{Compress: compress, Store: store}, Observer: obs,
				})
				if err != nil {
					t.Fatal(err)
				}
				return rep.Results[0]
			}
			if r := push(v1, delta.Mode{Auto: true}, nil); r.Action != hotswap.ActionUpdated {
				t.Fatalf("first push: %+v", r)
			}
			if tc.before != nil {
				tc.before(t, ts, store)
			}
			obs := &hookObserver{}
			if tc.duringStage != nil {
				obs.onUpload = func() { tc.duringStage(t, ts) }
			}
			r := push(v2, tc.compress, obs)
			if r.Action != hotswap.ActionUpdated || r.Error != "" {
				t.Fatalf("second push: %+v", r)
			}
			if r.Transfer != tc.wantTransfer || r.FileSize != int64(len(v2)) || r.BytesSent <= 0 || r.BytesSent > tc.maxSent {
				t.Errorf("transfer %s, %d bytes sent for %d; want %s, at most %d", r.Transfer, r.BytesSent, r.FileSize, tc.wantTransfer, tc.maxSent)
			}
			if r.Transfer != hotswap.TransferPlain {
				sum := sha256.Sum256(v2)
				f, _, err := store.Open(hex.EncodeToString(sum[:]))
				if err != nil {
					t.Errorf("no copy of what was sent kept for the next patch: %v", err)
				} else {
					f.Close()
				}
			}
			if tc.wantStep != "" && !strings.Contains(strings.Join(obs.steps, "\n"), tc.wantStep) {
				t.Errorf("steps %q lack %q", obs.steps, tc.wantStep)
			}
			got, err := ts.Node().ReadFile(kubelet)
			if err != nil || !bytes.Equal(got, v2) {
				t.Fatalf("the destination does not hold the new binary (%v)", err)
			}
			entries, err := ts.Node().List(`C:\k`)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.Contains(e.Name, ".swdt-zst") || strings.Contains(e.Name, ".swdt-new") || strings.Contains(e.Name, ".swdt-part") {
					t.Errorf("left on the node: %s", e.Name)
				}
			}
		})
	}
}
