package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// A join that made a bootstrap token deletes it on every way out it
// survives: the Node never registering (an error), and Ctrl-C while it
// waits. The token is a credential of the cluster; the next join makes
// its own.
func TestJoinDeletesItsTokenOnEveryWayOut(t *testing.T) {
	tests := []struct {
		name string
		// interrupt cancels the run once its token exists.
		interrupt bool
		wantCode  int
	}{
		{name: "the Node never registers", wantCode: exitcode.Partial},
		{name: "Ctrl-C while waiting for the Node", interrupt: true, wantCode: exitcode.Interrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newJoinFixture(t)
			// A kubelet that runs but never registers a Node.
			if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), []byte("MZ not a kubelet\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(fx.config)
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.Replace(raw, []byte("timeout: 90s"), []byte("timeout: 3s"), 1)
			raw = bytes.Replace(raw, []byte("      version: v1.37.2\n"), nil, 1)
			if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interrupt {
				raw = bytes.Replace(raw, []byte("timeout: 3s"), []byte("timeout: 10m"), 1)
				if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
					t.Fatal(err)
				}
				go func() {
					// Polls the cluster until the join's token exists.
					for fx.tokens() == 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
					cancel()
				}()
			}
			var out, errb bytes.Buffer
			code := Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, []string{"join", "--no-color", "-c", fx.config})
			if code != tt.wantCode {
				t.Fatalf("join: exit %d, want %d\n%s", code, tt.wantCode, errb.String())
			}
			if n := fx.tokens(); n != 0 {
				t.Errorf("%d bootstrap token(s) left in the cluster\n%s", n, errb.String())
			}
		})
	}
}
