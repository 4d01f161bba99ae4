package remote

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/delta"
)

// TestLeastRTT: the link's round trip is the least of several samples,
// so that one sample a busy machine delayed does not make --compress auto
// take loopback for a distant link.
func TestLeastRTT(t *testing.T) {
	errGone := errors.New("connection lost")
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name    string
		samples []time.Duration // the time of each round trip; < 0: it fails
		want    time.Duration
		wantOK  bool
		encodes bool // what --compress auto then decides
	}{
		{name: "a first sample delayed by load", samples: []time.Duration{ms(12), ms(0.3), ms(8), ms(6), ms(7)}, want: ms(0.3), wantOK: true},
		{name: "a distant link", samples: []time.Duration{ms(21), ms(20), ms(22), ms(20.5), ms(25)}, want: ms(20), wantOK: true, encodes: true},
		{name: "a later failure keeps the samples taken", samples: []time.Duration{ms(9), ms(2), -1, ms(0.1)}, want: ms(2), wantOK: true},
		{name: "the first fails", samples: []time.Duration{-1}, encodes: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Unix(0, 0)
			i := 0
			got, ok := leastRTT(rttSamples, func() time.Time { return clock }, func() error {
				d := tt.samples[i]
				i++
				if d < 0 {
					return errGone
				}
				clock = clock.Add(d)
				return nil
			})
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("leastRTT = %s, %v, want %s, %v", got, ok, tt.want, tt.wantOK)
			}
			if enc := (delta.Mode{Auto: true}).Encodes(got, ok); enc != tt.encodes {
				t.Errorf("--compress auto on %s, %v: encodes %v, want %v", got, ok, enc, tt.encodes)
			}
		})
	}
}

// TestRTTUnderLoad: on loopback with every core kept busy by a CPU hog,
// the measured link is still one --compress auto sends files as they are
// over.
func TestRTTUnderLoad(t *testing.T) {
	s := sshdtest.Start(t)
	// The hog is processes, as the load of other programs is: every one
	// spins until killed.
	for range runtime.NumCPU() {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatalf("start a CPU hog: %v", err)
		}
		defer func() { _ = hog.Process.Kill(); _ = hog.Wait() }()
	}
	c := dial(t, sshdConfig(t, s))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rtt, ok := c.WaitRTT(ctx)
	if !ok {
		t.Fatal("no round trip measured")
	}
	if (delta.Mode{Auto: true}).Encodes(rtt, ok) {
		t.Errorf("measured loopback under load at %s: --compress auto encodes, want files sent as they are", rtt)
	}
}
