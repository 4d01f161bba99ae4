package ops_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

func TestErrorIsItsKind(t *testing.T) {
	tests := []struct {
		name string
		err  error
		kind ops.Kind
		want bool
	}{
		{"bare", &ops.Error{Op: "inspect", Kind: ops.KindNotFound}, ops.KindNotFound, true},
		{"wrapped", fmt.Errorf("node win1: %w", &ops.Error{Op: "service-swap", Kind: ops.KindLocked}), ops.KindLocked, true},
		{"other kind", &ops.Error{Op: "inspect", Kind: ops.KindNotFound}, ops.KindLocked, false},
		{"not an op error", errors.New("not-found"), ops.KindNotFound, false},
		{"nil", nil, ops.KindNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.kind); got != tt.want {
				t.Errorf("errors.Is(%v, %s) = %v, want %v", tt.err, tt.kind, got, tt.want)
			}
			want := ops.Kind("")
			if tt.want {
				want = tt.kind
			}
			if got := ops.KindOf(tt.err); tt.want && got != want {
				t.Errorf("KindOf = %q, want %q", got, want)
			}
		})
	}
}

// A kind travels in the envelope as its plain spelling, so an older agent
// and a newer swdt (or the reverse) still understand each other.
func TestKindOnTheWire(t *testing.T) {
	line, err := ops.FormatEnvelope(ops.Envelope{Error: &ops.EnvelopeError{Kind: ops.KindUnsafeFolder, Message: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := ops.ParseEnvelope(line)
	if err != nil {
		t.Fatal(err)
	}
	if env.Error.Kind != ops.KindUnsafeFolder {
		t.Errorf("kind %q after a round trip", env.Error.Kind)
	}
	var raw struct {
		Error struct{ Kind string } `json:"error"`
	}
	if err := json.Unmarshal(line[len(ops.ResultMarker):], &raw); err != nil || raw.Error.Kind != "unsafe-folder" {
		t.Errorf("wire kind %q, %v; want unsafe-folder", raw.Error.Kind, err)
	}
}
