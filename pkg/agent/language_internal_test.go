package agent

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/winos"
)

// probeOS answers every script with res.
type probeOS struct {
	winos.OS
	res winos.Result
}

func (s probeOS) RunScript(context.Context, winos.Script, []byte) (winos.Result, error) {
	return s.res, nil
}

// The language-mode probe's output is a mode only when there is one
// (issue 22, item 11).
func TestLanguageMode(t *testing.T) {
	tests := []struct {
		name    string
		res     winos.Result
		want    string
		wantErr string
	}{
		{"full", winos.Result{Stdout: []byte("FullLanguage\r\n")}, "FullLanguage", ""},
		{"constrained after a blank line", winos.Result{Stdout: []byte("\r\nConstrainedLanguage\r\n")}, "ConstrainedLanguage", ""},
		{"nothing printed", winos.Result{Stderr: []byte("profile error")}, "", "printed no language mode"},
		{"failed", winos.Result{ExitCode: 1, Stderr: []byte("boom")}, "", "exit code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := languageMode(context.Background(), probeOS{res: tt.res})
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("languageMode = %q, %v; want %q, error containing %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
