package agent

import (
	"context"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// healthOS is a node whose pipe "a" appears only once port 10256 has been
// asked about: service a passes its health check only if service b's is
// run while a's timeout still runs.
type healthOS struct {
	winos.OS
	portAsked bool
}

func (h *healthOS) Pipes() ([]string, error) {
	if h.portAsked {
		return []string{"a"}, nil
	}
	return nil, nil
}

func (h *healthOS) PortListening(int) (bool, error) {
	h.portAsked = true
	return true, nil
}

// The health checks of a swap's services share one health timeout
// (issue 22, item 10): they are checked in rounds, not each for a whole
// timeout one after another.
func TestHealthChecksShareTheTimeout(t *testing.T) {
	req := ops.ServiceSwapRequest{HealthTimeoutMs: 300, ServiceChecks: map[string][]ops.HealthCheckSpec{
		"a": {{NamedPipe: "a"}},
		"b": {{TCPPort: 10256}},
	}}
	s := newSwapRun(&healthOS{}, req)
	if err := s.healthAll(context.Background(), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if f := s.failure(name); f != nil {
			t.Errorf("service %s failed: %s; want no failure: service a's check ran out its own timeout before b's ran", name, f)
		}
	}
}
