//go:build linux

package main

import (
	"testing"
	"time"
)

// TestRolloutRowGoal: a row's time goal is ceil(N / maxUnavailable)
// times one Node's median time, and its RSS is compared with one Node's
// median peak RSS.
func TestRolloutRowGoal(t *testing.T) {
	one := &rolloutRow{nodes: 1, maxUnavailable: 1, wall: series{4 * time.Second, 2 * time.Second, 3 * time.Second}, rss: rssSeries{40 << 10, 60 << 10}}
	tests := []struct {
		name        string
		row         *rolloutRow
		one         *rolloutRow
		wantBatches int
		want        string
	}{
		{"one Node against itself", one, one, 1,
			"time <= 1 x 3.00 s = 3.00 s: 1.00x; RSS flat: 1.00x of 1 Node's"},
		{"10 Nodes one at a time", &rolloutRow{nodes: 10, maxUnavailable: 1, wall: series{27 * time.Second}, rss: rssSeries{50 << 10}}, one, 10,
			"time <= 10 x 3.00 s = 30.00 s: 0.90x; RSS flat: 1.00x of 1 Node's"},
		{"30 Nodes by 4: the last batch partial", &rolloutRow{nodes: 30, maxUnavailable: 4, wall: series{30 * time.Second}, rss: rssSeries{75 << 10}}, one, 8,
			"time <= 8 x 3.00 s = 24.00 s: 1.25x; RSS flat: 1.50x of 1 Node's"},
		{"10 Nodes by 5", &rolloutRow{nodes: 10, maxUnavailable: 5, wall: series{6 * time.Second}, rss: rssSeries{50 << 10}}, one, 2,
			"time <= 2 x 3.00 s = 6.00 s: 1.00x; RSS flat: 1.00x of 1 Node's"},
		{"no 1-Node row", &rolloutRow{nodes: 10, maxUnavailable: 2, wall: series{time.Second}, rss: rssSeries{1}}, nil, 5,
			"no 1-Node row to compare with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.row.batches(); got != tt.wantBatches {
				t.Errorf("batches() = %d, want %d", got, tt.wantBatches)
			}
			if got := tt.row.goal(tt.one); got != tt.want {
				t.Errorf("goal() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFixtureStopsAndCleansUp: a fixture's Fatalf stops the caller with
// its message as the error, and close runs the cleanups last first.
func TestFixtureStopsAndCleansUp(t *testing.T) {
	fx := newFixture(t.TempDir())
	var order []int
	fx.Cleanup(func() { order = append(order, 1) })
	fx.Cleanup(func() { order = append(order, 2) })
	err := func() (err error) {
		defer catch(&err)
		fx.Fatalf("node %s did not join", "win-b01")
		return nil
	}()
	if err == nil || err.Error() != "node win-b01 did not join" {
		t.Errorf("error after Fatalf = %v, want the message", err)
	}
	fx.close()
	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Errorf("cleanups ran in order %v, want [2 1]", order)
	}
	if fx.Context().Err() == nil {
		t.Error("the fixture's context is not done after close")
	}
}
