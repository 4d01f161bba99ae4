package winos

import (
	"errors"
	"strings"
	"testing"
)

// The feature and firewall scripts' output decodes into a state, or an
// error that names the script; a powershell.exe that prints nothing
// (Wine's stub) is ErrScriptSilent, which callers tell apart.
func TestSetupScriptOutputs(t *testing.T) {
	tests := []struct {
		name       string
		decode     func(Result) (string, error)
		res        Result
		want       string
		wantErr    string
		wantSilent bool
	}{
		{name: "feature installed", decode: featureDecode, res: out(`{"name":"Containers","state":"Installed","restartNeeded":false}`), want: "Installed"},
		{name: "feature available", decode: featureDecode, res: out(`{"name":"Containers","state":"Available","restartNeeded":false}`), want: "Available"},
		{name: "feature installed, restart needed", decode: featureDecode, res: out(`{"name":"Containers","state":"Installed","restartNeeded":true}`), want: "InstallPending"},
		{name: "feature pending", decode: featureDecode, res: out(`{"name":"Containers","state":"InstallPending","restartNeeded":false}`), want: "InstallPending"},
		{name: "feature removed", decode: featureDecode, res: out(`{"name":"Containers","state":"Removed"}`), wantErr: `in state "Removed"`},
		{name: "feature error", decode: featureDecode, res: failed(`{"error":{"kind":"exception","message":"Windows has no feature named 'Nope' (at line 8)"}}`), wantErr: "windows-feature failed (exception): Windows has no feature named 'Nope'"},
		{name: "feature, stub powershell", decode: featureDecode, res: Result{}, wantSilent: true},
		{name: "rule created", decode: createDecode, res: out(`{"created":true}`), want: "ok"},
		{name: "rule refused", decode: createDecode, res: failed(`{"error":{"kind":"exception","message":"Access is denied."}}`), wantErr: "firewall-rule-create failed (exception): Access is denied."},
		{name: "rule, stub powershell", decode: createDecode, res: Result{ExitCode: 0}, wantSilent: true},
		{name: "rules removed", decode: removeDecode, res: out(`{"removed":["a","b"]}`), want: "a,b"},
		{name: "no rule removed", decode: removeDecode, res: out(`{"removed":[]}`), want: ""},
		{name: "remove failed", decode: removeDecode, res: Result{ExitCode: 1, Stderr: []byte("boom\r\n")}, wantErr: "exited with code 1: boom"},
		{name: "remove, stub powershell", decode: removeDecode, res: Result{ExitCode: 1}, wantSilent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.decode(tt.res)
			switch {
			case tt.wantSilent:
				if !errors.Is(err, ErrScriptSilent) {
					t.Fatalf("error = %v, want ErrScriptSilent", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil || got != tt.want:
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func out(s string) Result { return Result{Stdout: []byte(s + "\r\n")} }

// failed is a script that ended with the prelude's failure line.
func failed(s string) Result { return Result{ExitCode: 1, Stdout: []byte(s + "\r\n")} }

func featureDecode(res Result) (string, error) {
	st, err := featureState(res)
	return string(st), err
}

func createDecode(res Result) (string, error) {
	if err := firewallCreated(res, "swdt-kubelet-In-TCP"); err != nil {
		return "", err
	}
	return "ok", nil
}

func removeDecode(res Result) (string, error) {
	names, err := firewallRemoved(res)
	return strings.Join(names, ","), err
}

// Error controls map to SERVICE_ERROR_* and back.
func TestErrorControls(t *testing.T) {
	for i, name := range []string{ErrorControlIgnore, ErrorControlNormal, ErrorControlSevere, ErrorControlCritical} {
		if v, ok := errorControlValue(strings.ToLower(name)); !ok || v != uint32(i) || errorControlName(v) != name {
			t.Errorf("%s: value %d, %v; name %q", name, v, ok, errorControlName(v))
		}
	}
	if _, ok := errorControlValue(""); ok {
		t.Error(`"" maps to an error control`)
	}
}
