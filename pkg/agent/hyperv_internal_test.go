package agent

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// scriptOS is a Windows layer whose every script leaves res (or fails to
// start with err), recording the script and its input.
type scriptOS struct {
	winos.OS
	res    winos.Result
	err    error
	script winos.Script
	input  []byte
}

// Stat finds no file: the agent's look at its own executable.
func (o *scriptOS) Stat(p string) (winos.FileInfo, error) {
	return winos.FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func (o *scriptOS) RunScript(_ context.Context, s winos.Script, input []byte) (winos.Result, error) {
	o.script, o.input = s, input
	return o.res, o.err
}

// TestHyperVScriptOutput covers how a Hyper-V handler reads what its
// script printed, whatever the script or PowerShell did.
func TestHyperVScriptOutput(t *testing.T) {
	tests := []struct {
		name    string
		res     winos.Result
		err     error
		want    ops.HyperVVMInfo
		kind    ops.Kind
		message string
	}{
		{name: "result", res: winos.Result{Stdout: []byte(`{"data":{"name":"w","state":"Off","checkpoints":1,"currentCheckpoint":"c"}}` + "\r\n")},
			want: ops.HyperVVMInfo{Name: "w", State: "Off", Checkpoints: 1, CurrentCheckpoint: "c"}},
		{name: "stray output before the result", res: winos.Result{Stdout: []byte("WARNING: x\r\n{not json\r\n" + `{"data":{"name":"w","state":"Running"}}` + "\r\n\r\n")},
			want: ops.HyperVVMInfo{Name: "w", State: "Running"}},
		{name: "typed failure", res: winos.Result{ExitCode: 1, Stdout: []byte(`{"error":{"kind":"vm-not-found","message":"no VM named \"w\" on HV"}}`)},
			kind: ops.KindVMNotFound, message: `no VM named "w" on HV`},
		{name: "failure without a kind", res: winos.Result{ExitCode: 1, Stdout: []byte(`{"error":{"message":"Get-VM : boom (at line 80)"}}`)},
			kind: "exception", message: "Get-VM : boom (at line 80)"},
		{name: "no result", res: winos.Result{ExitCode: 1, Stderr: []byte("powershell.exe : The term 'x' is not recognized\r\n")},
			kind: "exception", message: "the hyperv-vm-status script printed no result (exit code 1): powershell.exe : The term 'x' is not recognized"},
		{name: "a JSON line that is no result", res: winos.Result{Stdout: []byte(`{"name":"w"}`)},
			kind: "exception", message: "printed no result (exit code 0)"},
		{name: "a stub PowerShell that prints nothing", res: winos.Result{},
			kind: ops.KindNoHyperV, message: "ran the hyperv-vm-status script and printed nothing (exit code 0): it is not Windows PowerShell with Hyper-V's module: install Hyper-V"},
		{name: "result of the wrong shape", res: winos.Result{Stdout: []byte(`{"data":{"checkpoints":"two"}}`)},
			kind: "exception", message: `the hyperv-vm-status script's result {"checkpoints":"two"} does not decode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &scriptOS{res: tt.res, err: tt.err}
			got, err := Call(context.Background(), w, ops.HyperVVMStatus, ops.HyperVVMRequest{Name: `w"; Remove-VM *`})
			if w.script != winos.ScriptHyperVVMStatus || string(w.input) != `{"name":"w\"; Remove-VM *"}` {
				t.Errorf("ran %s with input %s", w.script.Name(), w.input)
			}
			if tt.kind == "" {
				if err != nil || got != tt.want {
					t.Errorf("result = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var f *Failure
			if !errors.As(err, &f) || f.Kind != tt.kind || !strings.Contains(f.Message, tt.message) {
				t.Errorf("err = %v, want a %s failure with %q", err, tt.kind, tt.message)
			}
		})
	}
}

// A host without powershell.exe has no Hyper-V module either: the
// failure says so, and how to install it; any other error starting the
// script is the handler's, kind as the Windows error says.
func TestHyperVScriptNotStarted(t *testing.T) {
	tests := []struct {
		code    winos.Errno
		kind    ops.Kind
		message string
	}{
		{winos.ErrFileNotFound, ops.KindNoHyperV, "this host has no Windows PowerShell (start process powershell.exe: The system cannot find the file specified. (error 2)), which Hyper-V's management module needs: install Hyper-V"},
		{winos.ErrPathNotFound, ops.KindNoHyperV, "Install-WindowsFeature Hyper-V -IncludeManagementTools"},
		{winos.ErrAccessDenied, ops.KindAccessDenied, "run script hyperv-vm-start"},
	}
	for _, tt := range tests {
		w := &scriptOS{err: &winos.Error{Op: "start process", Target: "powershell.exe", Code: tt.code, Message: "The system cannot find the file specified."}}
		_, err := Call(context.Background(), w, ops.HyperVVMStart, ops.HyperVVMRequest{Name: "w"})
		var f *Failure
		if !errors.As(err, &f) || f.Kind != tt.kind || !strings.Contains(f.Message, tt.message) {
			t.Errorf("error %d: err = %v, want a %s failure with %q", tt.code, err, tt.kind, tt.message)
		}
	}
}

// The stop script's limit is the shutdown timeout plus the usual limit.
func TestHyperVStopLimit(t *testing.T) {
	tests := []struct {
		seconds int
		want    string
	}{{0, "1m30s"}, {-5, "1m30s"}, {30, "2m0s"}}
	for _, tt := range tests {
		if got := hypervStopLimit(ops.HyperVStopRequest{TimeoutSeconds: tt.seconds}).String(); got != tt.want {
			t.Errorf("limit for %ds = %s, want %s", tt.seconds, got, tt.want)
		}
	}
}
