package agent_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// Every op of the catalogue has a handler: swdt can never send an op the
// agent does not know.
func TestContractEveryOpHasAHandler(t *testing.T) {
	for _, name := range ops.Names() {
		if !agent.Has(name) {
			t.Errorf("op %s is in pkg/ops but pkg/agent has no handler for it", name)
		}
	}
}

func TestRunRejectsBadInvocations(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantKind ops.Kind
	}{
		{"no arguments", nil, "", "usage"},
		{"not an op", []string{"serve", "x"}, "", "usage"},
		{"unknown op", []string{"op", "format-c"}, "{}", "unknown-op"},
		{"request not JSON", []string{"op", ops.NodeFacts.Name}, "{not json", "bad-request"},
		{"request of the wrong shape", []string{"op", ops.FilesRemove.Name}, `{"paths": "C:\\k"}`, "bad-request"},
		// An op started ahead whose request never came: nothing runs.
		{"no request", []string{"op", ops.ServiceSwap.Name}, "", "bad-request"},
		{"only blanks", []string{"op", ops.FilesRemove.Name}, " \r\n", "bad-request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := agent.Run(context.Background(), ts.Node().OS(), agent.Self{}, tc.args, strings.NewReader(tc.stdin), &out, io.Discard)
			env, err := ops.ParseEnvelope(out.Bytes())
			if err != nil {
				t.Fatalf("no envelope: %v (%q)", err, out.String())
			}
			if code != 1 || env.OK || env.Error.Kind != tc.wantKind {
				t.Errorf("exit %d, envelope %+v; want 1 and kind %s", code, env, tc.wantKind)
			}
		})
	}
}
