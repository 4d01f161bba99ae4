package wine

import (
	"strings"
	"testing"
)

func TestExec(t *testing.T) {
	n := newNode(t)
	n.writeConfig("")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"exit status of cmd.exe", []string{"cmd", "/c", "exit 7"}, 7, "", ""},
		{"output", []string{"cmd.exe", "/c", "echo hello"}, 0, "hello", ""},
		{"missing program", []string{"nosuchprog"}, 1, "", "nosuchprog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := n.swdt(append([]string{"exec", "wine", "--"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) ||
				tt.code == 1 && !strings.Contains(errOut, "not found") {
				t.Errorf("exit %d, want %d with %q on stdout and %q on stderr", code, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
