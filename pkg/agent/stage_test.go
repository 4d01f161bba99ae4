package agent_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{DamageEncoded: tc.damage}))
			n := ts.Node()
			item := ops.StageDecodeItem{Encoded: staged + ".swdt-zst", Encoding: tc.encoding, Staged: staged, SHA256: provSum(nw)}
			if tc.encoding == ops.EncodingPatch {
				item.Reference = dest
			}
			if err := n.WriteFile(dest, tc.onNode); err != nil {
				t.Fatal(err)
			}
			if err := n.WriteFile(item.Encoded, tc.encoded(t)); err != nil {
				t.Fatal(err)
			}
			lockTake(t, ts, "run1", time.Minute)
			resp, err := provCall(t, ts, ops.StageDecode, ops.StageDecodeRequest{RunID: "run1", Items: []ops.StageDecodeItem{item}})
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

// TestStageDecodeRefuses: names that are not a run's staged file and its
// encoded upload, and a caller that does not hold the node's lock, leave
// every file as it was.
func TestStageDecodeRefuses(t *testing.T) {
	const dest = `C:\k\tool.exe`
	content := []byte("MZ the binary the service runs")
	var enc bytes.Buffer
	if _, err := delta.Compress(context.Background(), &enc, bytes.NewReader(content), func() delta.Level { return delta.LevelFastest }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		held    string // the run holding the lock ("" for none)
		runID   string
		item    ops.StageDecodeItem
		wantErr string // in the op's error, or else in the item's
	}{
		{name: "the destination as the encoded upload", runID: "",
			item:    ops.StageDecodeItem{Encoded: dest, Staged: dest + ".swdt-new-r", Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "the destination as the staged file", runID: "",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-zst", Staged: dest, Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "a staged name without a run ID", runID: "",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-new-.swdt-zst", Staged: dest + ".swdt-new-", Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "a staged name with a path after the mark", runID: "",
			item:    ops.StageDecodeItem{Encoded: dest + `.swdt-new-x\..\tool.exe.swdt-zst`, Staged: dest + `.swdt-new-x\..\tool.exe`, Encoding: ops.EncodingZstd},
			wantErr: "is not named"},
		{name: "another run holds the lock", held: "other", runID: "mine",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-new-mine.swdt-zst", Staged: dest + ".swdt-new-mine", Encoding: ops.EncodingZstd},
			wantErr: "no longer holds"},
		{name: "outside a run while one holds the lock", held: "other", runID: "",
			item:    ops.StageDecodeItem{Encoded: dest + ".swdt-new-mine.swdt-zst", Staged: dest + ".swdt-new-mine", Encoding: ops.EncodingZstd},
			wantErr: "locked by"},
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
			if tc.held != "" {
				lockTake(t, ts, tc.held, time.Minute)
			}
			resp, err := provCall(t, ts, ops.StageDecode, ops.StageDecodeRequest{RunID: tc.runID, Items: []ops.StageDecodeItem{tc.item}})
			msg := ""
			switch {
			case err != nil:
				_, msg = provFailure(t, err)
			case len(resp.Results) == 1 && !resp.Results[0].OK:
				msg = resp.Results[0].Error
			default:
				t.Fatalf("decoded: %+v", resp.Results)
			}
			if !strings.Contains(msg, tc.wantErr) {
				t.Errorf("error %q, want %q", msg, tc.wantErr)
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
