package simnode

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/kubeconn/filescript"
)

// An exec into a HostProcess pod runs as SYSTEM in the node's own
// environment: the transport's file script (played by simnode), the
// agent at a path only when its bytes are the agent's, nothing else.
func TestRunHostProcess(t *testing.T) {
	ts := StartTest(t, WithOptions(func(o *Options) { o.Bare = true }))
	if err := ts.Node().MkdirAll(`C:\Program Files\swdt`); err != nil {
		t.Fatal(err)
	}
	if err := ts.Node().WriteFile(`C:\Program Files\swdt\swdt-agent-0123456789abcdef.exe`, []byte("MZ not the agent")); err != nil {
		t.Fatal(err)
	}
	file := func(req filescript.Request, data string) []string {
		line, _ := json.Marshal(req)
		return []string{string(line) + "\n" + data}
	}
	tests := []struct {
		name       string
		argv       []string
		stdin      []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{name: "write then rename", argv: filescript.Argv(), stdin: file(filescript.Request{Op: filescript.OpWrite, Path: `C:\k\a.exe.swdt-part`, To: `C:\k\a.exe`}, "MZ\x00bytes"),
			wantOut: `{"ok":true}`},
		{name: "read", argv: filescript.Argv(), stdin: file(filescript.Request{Op: filescript.OpRead, Path: `C:\k\a.exe`}, ""),
			wantOut: "\"size\":8,"},
		{name: "stat of a missing file", argv: filescript.Argv(), stdin: file(filescript.Request{Op: filescript.OpStat, Path: `C:\k\missing.exe`}, ""),
			wantStatus: 1, wantOut: `"kind":"not-found"`},
		{name: "a write over a directory", argv: filescript.Argv(), stdin: file(filescript.Request{Op: filescript.OpWrite, Path: `C:\k\sub`}, "x"),
			wantStatus: 1, wantOut: `"ok":false`},
		{name: "unknown call", argv: filescript.Argv(), stdin: file(filescript.Request{Op: "chmod", Path: `C:\k`}, ""),
			wantStatus: 1, wantOut: `"kind":"bad-request"`},
		{name: "bytes that are not the agent", argv: []string{`C:\Program Files\swdt\swdt-agent-0123456789abcdef.exe`, "op", "node-facts"},
			wantStatus: 1, wantErr: "untrusted program"},
		{name: "any other program", argv: []string{"whoami.exe"}, wantStatus: 1, wantErr: "'whoami.exe' is not recognized"},
	}
	if err := ts.Node().MkdirAll(`C:\k\sub`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := ts.RunHostProcess(context.Background(), tc.argv, strings.NewReader(strings.Join(tc.stdin, "")), &out, &errOut, func() {})
			if status != tc.wantStatus || !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("status %d, stdout %q, stderr %q; want %d, %q, %q", status, out.String(), errOut.String(), tc.wantStatus, tc.wantOut, tc.wantErr)
			}
		})
	}
	if got, err := ts.Node().ReadFile(`C:\k\a.exe`); err != nil || string(got) != "MZ\x00bytes" {
		t.Errorf(`C:\k\a.exe = %q, %v`, got, err)
	}
	if ts.Node().Exists(`C:\k\a.exe.swdt-part`) {
		t.Error("the staged name is left after the rename")
	}
}
