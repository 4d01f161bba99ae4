package simnode

import (
	"slices"
	"testing"

	"sigs.k8s.io/swdt/pkg/vm/hvops"
)

// TestHyperVOpsImplemented keeps the simulated Hyper-V host and the
// embedded Hyper-V ops in step: every op has a handler and vice versa.
func TestHyperVOpsImplemented(t *testing.T) {
	if got, want := HyperVOpNames(), hvops.Names(); !slices.Equal(got, want) {
		t.Errorf("simnode implements %v, the catalogue has %v", got, want)
	}
	for _, name := range HyperVOpNames() {
		if opHandlers[name] != nil {
			t.Errorf("%s is both a node op and a Hyper-V op", name)
		}
	}
}
