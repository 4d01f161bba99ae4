package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"
)

// Off a terminal, a transfer says every heartbeat how far it is and how
// fast it moves now, so a stall shows as 0 B/s instead of silence; End
// stops the heartbeat before the completion line. The heartbeats come
// from the test's clock.
func TestTransferHeartbeat(t *testing.T) {
	var errOut syncbuf.Buffer
	u := New(&bytes.Buffer{}, &errOut, Options{Color: ColorNever})
	p := u.NewProgress()
	ticks := make(chan time.Time)
	p.ticks = ticks
	tr := p.Transfer("node a: sending kubelet.exe", 100)
	tr.Update(50)
	// A beat is printed before the next tick is taken: the third tick
	// makes sure the second beat saw the stalled 50 B.
	for _, s := range []time.Duration{2, 4, 6} {
		ticks <- tr.started.Add(s * time.Second)
	}
	tr.Update(100)
	out := errOut.String()
	for _, want := range []string{
		"node a: sending kubelet.exe: 50 B of 100 B (50%) after 2s, 25 B/s now",
		"node a: sending kubelet.exe: 50 B of 100 B (50%) after 4s, 0 B/s now",
		"✔ node a: sending kubelet.exe: 100 B in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q:\n%s", want, out)
		}
	}
	if i := strings.Index(out, "✔"); i >= 0 && strings.Contains(out[i:], "after") {
		t.Errorf("a heartbeat after the end:\n%s", out)
	}
}
