package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// The inspect of a run takes the node's lock first, recording the files
// the run may stage, and reads nothing while another run holds it.
func TestProvisionInspectTakesTheLock(t *testing.T) {
	t.Parallel()
	const newDest = `C:\opt\new\tool.exe`
	staged := []string{swapKubelet + ".swdt-new-b", newDest + ".swdt-new-b"}
	tests := []struct {
		name         string
		held         string // the run holding the lock first ("" for none)
		wantAcquired bool
	}{
		{name: "a free lock is taken and the node inspected under it", wantAcquired: true},
		{name: "its own run takes it again", held: "b", wantAcquired: true},
		{name: "a live holder is reported and nothing inspected", held: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			if tt.held != "" {
				lockTake(t, ts, tt.held, time.Minute)
			}
			req := ops.ProvisionInspectRequest{
				Targets: []ops.ProvisionTarget{{Service: "kubelet", Destination: swapKubelet}, {Service: "kubelet", Destination: newDest}},
				Lock:    &ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000, Staged: staged},
			}
			resp, err := provCall(t, ts, ops.ProvisionInspect, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Locked == nil || resp.Locked.Acquired != tt.wantAcquired {
				t.Fatalf("locked %+v, want acquired %v", resp.Locked, tt.wantAcquired)
			}
			if !tt.wantAcquired {
				if resp.Locked.Holder == nil || resp.Locked.Holder.Owner.RunID != tt.held || len(resp.Files)+len(resp.Services) != 0 {
					t.Errorf("response %+v, want only the holder %s", resp, tt.held)
				}
				return
			}
			if len(resp.Files) != 2 || !resp.Files[0].Exists || resp.Files[1].Exists || len(resp.Services) == 0 {
				t.Errorf("files %+v, services %+v", resp.Files, resp.Services)
			}
			if !slices.Equal(resp.MissingDirs, []string{`C:\opt\new`}) {
				t.Errorf("missing directories %q, want C:\\opt\\new", resp.MissingDirs)
			}
			if resp.Lock == nil || resp.Lock.Owner.RunID != "b" || !slices.Equal(resp.Lock.Staged, staged) {
				t.Errorf("lock %+v, want run b's with staged %q", resp.Lock, staged)
			}
		})
	}
}

// The swap decodes encoded uploads and checks their digest before it
// stops anything; a patch that fails there, when swdt can send the file
// again, ends the op with nothing stopped and the lock kept. A swap that
// is done releases the lock when asked.
func TestServiceSwapDecodes(t *testing.T) {
	t.Parallel()
	const runID = "run1"
	staged := swapKubelet + ".swdt-new-" + runID
	patchOf := func(t *testing.T, ref, nw []byte) []byte {
		var b bytes.Buffer
		if _, err := delta.Diff(context.Background(), &b, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(nw)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	compressed := func(t *testing.T, _, nw []byte) []byte {
		var b bytes.Buffer
		if _, err := delta.Compress(context.Background(), &b, bytes.NewReader(nw), func() delta.Level { return delta.LevelFastest }); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	tests := []struct {
		name     string
		encoding string
		encode   func(t *testing.T, ref, nw []byte) []byte
		fallback bool
		damage   string
		// changeDest replaces the destination after the patch was made.
		changeDest bool
		// inline sends the encoding in the request (SwapItem.Data).
		inline bool
		// attached sends it after the request (SwapItem.Attached):
		// "whole", "failed" (its sender could not finish it), "cut" (the
		// input ends inside it) or "none" (nothing follows).
		attached string
		// want is the item's result; "" means it is in Undecoded.
		want    string
		wantErr string
	}{
		{name: "a patch is decoded, verified and swapped", encoding: ops.EncodingPatch, encode: patchOf, fallback: true, want: ops.SwapResultSwapped},
		{name: "a compressed upload is decoded and swapped", encoding: ops.EncodingZstd, encode: compressed, want: ops.SwapResultSwapped},
		{name: "a truncated patch stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true, damage: "truncate", wantErr: "decode"},
		{name: "a corrupted patch stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true, damage: "corrupt", wantErr: "decode"},
		{name: "a patch against a destination changed since stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true,
			changeDest: true, wantErr: "SHA-256"},
		{name: "a corrupted upload without a fallback fails alone", encoding: ops.EncodingZstd, encode: compressed, damage: "corrupt",
			want: ops.SwapResultFailed, wantErr: "decode"},
		{name: "a patch in the request is decoded, verified and swapped", encoding: ops.EncodingPatch, encode: patchOf, fallback: true,
			inline: true, want: ops.SwapResultSwapped},
		{name: "a truncated patch in the request stops nothing", encoding: ops.EncodingPatch, fallback: true, inline: true, wantErr: "decode",
			encode: func(t *testing.T, ref, nw []byte) []byte { p := patchOf(t, ref, nw); return p[:len(p)/2] }},
		{name: "a patch in the request against a destination changed since stops nothing", encoding: ops.EncodingPatch, encode: patchOf,
			fallback: true, inline: true, changeDest: true, wantErr: "SHA-256"},
		{name: "a patch that follows the request is decoded as it arrives, verified and swapped", encoding: ops.EncodingPatch, encode: patchOf,
			fallback: true, attached: "whole", want: ops.SwapResultSwapped},
		{name: "a patch its sender could not finish stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true,
			attached: "failed", wantErr: "could not finish"},
		{name: "a patch cut short in the input stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true,
			attached: "cut", wantErr: "unexpected EOF"},
		{name: "a patch said to follow that does not stops nothing", encoding: ops.EncodingPatch, encode: patchOf, fallback: true,
			attached: "none", wantErr: "decode"},
		{name: "a patch that follows against a destination changed since stops nothing", encoding: ops.EncodingPatch, encode: patchOf,
			fallback: true, attached: "whole", changeDest: true, wantErr: "SHA-256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{DamageEncoded: tc.damage}))
			n := ts.Node()
			old, err := n.ReadFile(swapKubelet)
			if err != nil {
				t.Fatal(err)
			}
			nw := append(bytes.Clone(old), []byte(" and a rebuilt function")...)
			it := ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: staged, Backup: swapKubelet + ".swdt-bak",
				SHA256: provSum(nw), Size: int64(len(nw)), Encoded: staged + ".swdt-zst", Encoding: tc.encoding, Fallback: tc.fallback}
			if tc.encoding == ops.EncodingPatch {
				it.Reference = swapKubelet
			}
			var tail []byte
			switch {
			case tc.inline:
				it.Data = tc.encode(t, old, nw)
			case tc.attached != "":
				it.Attached = true
				tail = attachment(t, tc.attached, tc.encode(t, old, nw))
			default:
				if err := n.WriteFile(it.Encoded, tc.encode(t, old, nw)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.changeDest {
				// Same size, other bytes, as a rebuild by another tool.
				if err := n.Rename(swapKubelet, swapKubelet+".moved", false); err != nil {
					t.Fatal(err)
				}
				if err := n.WriteFile(swapKubelet, bytes.ToUpper(old)); err != nil {
					t.Fatal(err)
				}
			}
			lockTake(t, ts, runID, time.Minute)
			before, _ := n.Service("kubelet")
			req := swapKubeletRequest(it)
			req.Owner, req.Unlock = lockOwner(runID), true
			var resp ops.ServiceSwapResponse
			if tc.attached != "" {
				resp = swapAttached(t, n, req, tail)
			} else if resp, err = agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req); err != nil {
				t.Fatal(err)
			}
			if n.Exists(it.Encoded) {
				t.Error("the encoded upload was left on the node")
			}
			after, _ := n.Service("kubelet")
			got, _ := n.ReadFile(swapKubelet)
			switch tc.want {
			case ops.SwapResultSwapped:
				if len(resp.Items) != 1 || resp.Items[0].Result != tc.want || !bytes.Equal(got, nw) {
					t.Fatalf("items %+v, destination holds the new binary: %v", resp.Items, bytes.Equal(got, nw))
				}
				if f := resp.Items[0].File; f == nil || f.SHA256 != provSum(nw) || f.Size != int64(len(nw)) || f.ModTicks == 0 {
					t.Errorf("file %+v, want the new binary's size, time and digest", f)
				}
			case ops.SwapResultFailed:
				if len(resp.Items) != 1 || resp.Items[0].Result != tc.want || !strings.Contains(resp.Items[0].Error, tc.wantErr) {
					t.Fatalf("items %+v, want failed with %q", resp.Items, tc.wantErr)
				}
			default:
				if len(resp.Undecoded) != 1 || resp.Undecoded[0].Destination != swapKubelet || !strings.Contains(resp.Undecoded[0].Error, tc.wantErr) {
					t.Fatalf("undecoded %+v, want %s with %q", resp.Undecoded, swapKubelet, tc.wantErr)
				}
			}
			if tc.want != ops.SwapResultSwapped {
				if after.PID != before.PID {
					t.Error("kubelet was restarted for an item that was not swapped")
				}
				if bytes.Equal(got, nw) || n.Exists(staged) {
					t.Error("a file that failed its check was kept or swapped in")
				}
			}
			// The lock is released once the swap is done, and kept for
			// the next try when swdt sends a file again.
			if wantReleased := tc.want != ""; resp.Unlocked != wantReleased || n.Exists(ops.LockPath) == wantReleased {
				raw, _ := json.Marshal(resp)
				t.Errorf("unlocked %v, lock file there %v, want released %v (%s)", resp.Unlocked, n.Exists(ops.LockPath), wantReleased, raw)
			}
			if n.Exists(ops.JournalPath) {
				t.Error("the journal was left behind")
			}
		})
	}
}

// attachment is enc as it follows a request: whole, failed by its sender
// half-way, cut short by 3 bytes, or nothing at all.
func attachment(t *testing.T, how string, enc []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch how {
	case "whole", "cut":
		if err := ops.WriteAttachment(&b, bytes.NewReader(enc)); err != nil {
			t.Fatal(err)
		}
		if how == "cut" {
			b.Truncate(b.Len() - 3)
		}
	case "failed":
		half := io.MultiReader(bytes.NewReader(enc[:len(enc)/2]), iotest.ErrReader(errors.New("the source changed")))
		_ = ops.WriteAttachment(&b, half)
	}
	return b.Bytes()
}

// swapAttached runs the swap op of req as swdt-agent.exe does, with tail
// after the request line on its input.
func swapAttached(t *testing.T, n *simnode.Node, req ops.ServiceSwapRequest, tail []byte) ops.ServiceSwapResponse {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	agent.Run(context.Background(), n.OS(), agent.Self{}, []string{"op", ops.ServiceSwap.Name}, bytes.NewReader(append(append(raw, '\n'), tail...)), &out, &stderr)
	env, err := ops.ParseEnvelope(out.Bytes())
	if err != nil || !env.OK {
		t.Fatalf("swap: %+v, %v (%s)", env, err, stderr.String())
	}
	var resp ops.ServiceSwapResponse
	if err := json.Unmarshal(env.Data, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSwapAttachmentsInOrder: the patches of several items follow the
// request in the items' order, each decoded as it comes; an attachment
// that cannot be read to its end leaves the ones after it unread and
// undecoded, with nothing stopped (a file decoded whole before that end
// stays staged).
func TestSwapAttachmentsInOrder(t *testing.T) {
	t.Parallel()
	const runID = "run1"
	tests := []struct {
		name string
		// firstEnd replaces the status byte that ends the first
		// attachment (0: left as written).
		firstEnd  byte
		wantSwaps bool
	}{
		{name: "both whole: both swapped", wantSwaps: true},
		{name: "the first ends with a status no sender writes: the second is not read", firstEnd: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			var items []ops.SwapItem
			var tail bytes.Buffer
			want := map[string][]byte{}
			for i, dest := range []string{swapKubelet, `C:\k\kube-proxy.exe`} {
				old, err := n.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				nw := append(bytes.Clone(old), []byte(" and a rebuilt function")...)
				var patch bytes.Buffer
				if _, err := delta.Diff(context.Background(), &patch, bytes.NewReader(old), int64(len(old)), "", bytes.NewReader(nw)); err != nil {
					t.Fatal(err)
				}
				if err := ops.WriteAttachment(&tail, &patch); err != nil {
					t.Fatal(err)
				}
				if i == 0 && tc.firstEnd != 0 {
					tail.Bytes()[tail.Len()-1] = tc.firstEnd
				}
				staged := dest + ".swdt-new-" + runID
				service := strings.TrimSuffix(strings.TrimPrefix(dest, `C:\k\`), ".exe")
				items = append(items, ops.SwapItem{Service: service, Destination: dest, Staged: staged, Backup: dest + ".swdt-bak",
					SHA256: provSum(nw), Size: int64(len(nw)), Encoded: staged + ".swdt-zst", Encoding: ops.EncodingPatch,
					Reference: dest, Fallback: true, Attached: true})
				want[dest] = nw
			}
			lockTake(t, ts, runID, time.Minute)
			req := swapRequest(items...)
			req.StopOrder, req.StartOrder = []string{"kube-proxy", "kubelet"}, []string{"kubelet", "kube-proxy"}
			req.Owner, req.Unlock = lockOwner(runID), true
			resp := swapAttached(t, n, req, tail.Bytes())
			for _, it := range items {
				got, _ := n.ReadFile(it.Destination)
				if swapped := bytes.Equal(got, want[it.Destination]); swapped != tc.wantSwaps {
					t.Errorf("%s swapped: %v, want %v", it.Destination, swapped, tc.wantSwaps)
				}
			}
			if tc.wantSwaps {
				return
			}
			// The first patch was whole before its damaged end: its file is
			// decoded and verified, and staged for the op swdt runs again.
			if len(resp.Undecoded) != 1 || resp.Undecoded[0].Destination != items[1].Destination ||
				!strings.Contains(resp.Undecoded[0].Error, "an attachment before it could not be read") {
				t.Fatalf("undecoded %+v, want the second, for the one before it", resp.Undecoded)
			}
			if got, err := n.ReadFile(items[0].Staged); err != nil || !bytes.Equal(got, want[items[0].Destination]) {
				t.Errorf("the first item's staged file: %d bytes (%v), want its rebuild", len(got), err)
			}
		})
	}
}
