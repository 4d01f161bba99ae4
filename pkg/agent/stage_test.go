package agent_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestStageDecode(t *testing.T) {
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{DamageEncoded: tc.damage}))
			n := ts.Node()
			item := ops.StageDecodeItem{Encoded: dest + ".swdt-zst", Encoding: tc.encoding, Staged: dest + ".swdt-new", SHA256: provSum(nw)}
			if tc.encoding == ops.EncodingPatch {
				item.Reference = dest
			}
			if err := n.WriteFile(dest, tc.onNode); err != nil {
				t.Fatal(err)
			}
			if err := n.WriteFile(item.Encoded, tc.encoded(t)); err != nil {
				t.Fatal(err)
			}
			resp, err := provCall(t, ts, ops.StageDecode, ops.StageDecodeRequest{Items: []ops.StageDecodeItem{item}})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Results) != 1 {
				t.Fatalf("results: %+v", resp.Results)
			}
			res := resp.Results[0]
			if _, err := n.Stat(item.Encoded); err == nil {
				t.Error("the encoded upload was left on the node")
			}
			staged, serr := n.ReadFile(item.Staged)
			if tc.wantErr == "" {
				if !res.OK || res.Error != "" || serr != nil || !bytes.Equal(staged, nw) {
					t.Fatalf("result %+v, staged err %v", res, serr)
				}
				if res.File.SHA256 != provSum(nw) || res.File.Size != int64(len(nw)) || res.File.ModTicks == 0 {
					t.Errorf("file %+v", res.File)
				}
				return
			}
			if res.OK || !strings.Contains(res.Error, tc.wantErr) {
				t.Fatalf("result %+v, want an error with %q", res, tc.wantErr)
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
