package wine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/cmd/swdt/app"
)

func TestExec(t *testing.T) {
	n := newNode(t)
	n.writeConfig("")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"exit status of cmd.exe", []string{"cmd", "/c", "exit 7"}, 7, "", nil},
		{"output", []string{"cmd.exe", "/c", "echo hello"}, 0, "hello", nil},
		{"missing program", []string{"nosuchprog"}, 1, "", []string{"nosuchprog", "no such program"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := n.swdt(append([]string{"exec", "wine", "--"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.stdout) {
				t.Errorf("exit %d, want %d with %q on stdout", code, tt.code, tt.stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr does not say %q", s)
				}
			}
		})
	}
}

// signalWriter records what is written and closes seen once it holds
// want.
type signalWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) && w.seen != nil {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

// The program's output arrives while it runs, and --timeout ends it.
func TestExecStreamsAndTimesOut(t *testing.T) {
	n := newNode(t)
	n.writeConfig("")
	if err := n.ts.Node().MkdirAll(`C:\k`); err != nil {
		t.Fatal(err)
	}
	if err := n.ts.Node().WriteFile(`C:\k\hang.exe`, shared.winsvc); err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	out := &signalWriter{want: "started", seen: seen}
	errOut := &signalWriter{}
	done := make(chan int, 1)
	go func() {
		done <- app.Run(context.Background(), app.Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
			[]string{"exec", "-c", n.config, "--no-color", "--timeout", "10s", "wine", "--", `C:\k\hang.exe`, "hang"})
	}()
	select {
	case <-seen:
	case code := <-done:
		t.Fatalf("swdt exec exited %d before its output arrived:\n%s\n%s", code, out.buf.String(), errOut.buf.String())
	}
	code := <-done
	if code != 1 || !strings.Contains(errOut.buf.String(), "10s") {
		t.Errorf("exit %d, want 1 and the time limit on stderr:\n%s", code, errOut.buf.String())
	}
}
