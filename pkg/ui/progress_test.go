package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"
)

// Off a terminal, a transfer says every heartbeat how far it is and how
// fast it moves now, so a stall shows as 0 B/s instead of silence.
func TestTransferHeartbeat(t *testing.T) {
	var errOut syncbuf.Buffer
	u := New(&bytes.Buffer{}, &errOut, Options{Color: ColorNever})
	p := u.NewProgress()
	p.heartbeat = 20 * time.Millisecond
	tr := p.Transfer("node a: sending kubelet.exe", 100)
	tr.Update(50)
	for _, want := range []string{"50 B of 100 B (50%) after", "0 B/s now"} {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(errOut.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no heartbeat with %q:\n%s", want, errOut.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	tr.Update(100)
	time.Sleep(50 * time.Millisecond) // a beat now would be after End
	out := errOut.String()
	if !strings.Contains(out, "✔ node a: sending kubelet.exe: 100 B in") {
		t.Errorf("no completion line:\n%s", out)
	}
	if strings.Contains(out[strings.Index(out, "✔"):], "after") {
		t.Errorf("a heartbeat after the end:\n%s", out)
	}
}
