package wins

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

func TestChecks(t *testing.T) {
	p := PathsFor(nil)
	registry := map[string]any{"CurrentMajorVersionNumber": float64(10), "CurrentMinorVersionNumber": float64(0),
		"CurrentBuildNumber": "20348", "UBR": float64(2227), "ReleaseId": "2009", "BuildLabEx": "20348.1.amd64fre", "CurrentBuild": "20348"}
	good := func() ops.WinsVerifyResponse {
		gv := map[string]any{}
		for k, v := range registry {
			gv[k] = v
		}
		return ops.WinsVerifyResponse{
			Service:    ops.ServiceInfo{Name: ops.WinsService, Exists: true, Status: "Running", StartType: "Automatic", PID: 42, BinaryPath: `"` + p.Binary + `" srv app run`},
			Pipes:      map[string]bool{ops.WinsPipe: true, ops.WinsProxyPipe: true},
			GetVersion: gv, Registry: registry,
			Deep: &ops.WinsDeepResult{OK: true, Output: "WIN-1", Expected: "WIN-1", Leftovers: []string{}},
		}
	}
	tests := []struct {
		name   string
		mutate func(r *ops.WinsVerifyResponse)
		failed []string // the checks that fail
		detail string
	}{
		{name: "all good", mutate: func(*ops.WinsVerifyResponse) {}, detail: "matches the host registry"},
		{name: "protobuf JSON spells integers as strings", mutate: func(r *ops.WinsVerifyResponse) {
			r.GetVersion["UBR"], r.GetVersion["CurrentMajorVersionNumber"] = "2227", "10"
		}},
		{name: "missing service", mutate: func(r *ops.WinsVerifyResponse) { r.Service = ops.ServiceInfo{Name: ops.WinsService} },
			failed: []string{CheckService}, detail: "not registered"},
		{name: "manual start", mutate: func(r *ops.WinsVerifyResponse) { r.Service.StartType = "Manual" },
			failed: []string{CheckService}, detail: "not Automatic"},
		{name: "another binary", mutate: func(r *ops.WinsVerifyResponse) { r.Service.BinaryPath = `C:\other\wins.exe srv app run` },
			failed: []string{CheckService}, detail: `runs C:\other\wins.exe`},
		{name: "no pipes while running", mutate: func(r *ops.WinsVerifyResponse) {
			r.Pipes = map[string]bool{}
			r.GetVersion, r.GetVersionError = map[string]any{}, "exited 1: pipe not found"
		}, failed: []string{CheckPipes, CheckGetVersion}, detail: "v0.15.x or earlier"},
		{name: "build differs", mutate: func(r *ops.WinsVerifyResponse) { r.GetVersion["UBR"] = float64(1) },
			failed: []string{CheckGetVersion}, detail: `UBR: wins says "1", the registry "2227"`},
		{name: "deep left a process", mutate: func(r *ops.WinsVerifyResponse) { r.Deep.Leftovers = []string{"process 8 rancher-wins-swdt-smoke.exe"} },
			failed: []string{CheckDeep}, detail: "left behind: process 8"},
		{name: "deep not whitelisted", mutate: func(r *ops.WinsVerifyResponse) {
			r.Deep = &ops.WinsDeepResult{Error: "wins.exe cli prc run exited 1", Output: "not in the white list", Leftovers: []string{}}
		}, failed: []string{CheckDeep}, detail: "not in the white list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.mutate(&r)
			checks := Checks(r, p, true)
			if len(checks) != 4 {
				t.Fatalf("checks %+v", checks)
			}
			found := tt.detail == ""
			for _, c := range checks {
				if c.OK == slices.Contains(tt.failed, c.Name) {
					t.Errorf("%+v", c)
				}
				if tt.detail != "" && strings.Contains(c.Detail, tt.detail) {
					found = true
				}
			}
			if !found {
				t.Errorf("no check says %q: %+v", tt.detail, checks)
			}
		})
	}
}

func TestRenderConfig(t *testing.T) {
	spec := &v1alpha1.WinsSpec{Destination: `D:\wins\wins.exe`, WhiteList: v1alpha1.WinsWhiteList{
		ProcessPaths: []string{`D:\wins\agent.exe`, `C:\PROGRAM FILES\SWDT\SWDT-SMOKE.EXE`}, ProxyPorts: []int32{9796}}}
	p := PathsFor(spec)
	// The smoke program is in swdt's own folder, which only
	// administrators can write, never beside wins.exe.
	if p.Config != `D:\wins\config` || p.Smoke != `C:\Program Files\swdt\swdt-smoke.exe` {
		t.Errorf("paths %+v", p)
	}
	got, err := RenderConfig(spec, p)
	if err != nil {
		t.Fatal(err)
	}
	want := `# Written by swdt wins; changes here are replaced on the next run.
debug: false
listen: rancher_wins
proxy: rancher_wins_proxy
white_list:
  processPaths:
  - D:\wins\agent.exe
  - C:\PROGRAM FILES\SWDT\SWDT-SMOKE.EXE
  proxyPorts:
  - 9796
`
	if got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
	empty, err := RenderConfig(&v1alpha1.WinsSpec{}, PathsFor(nil))
	if err != nil || !strings.Contains(empty, "proxyPorts: []") || !strings.Contains(empty, `- C:\Program Files\swdt\swdt-smoke.exe`) {
		t.Errorf("empty whitelist config %q %v", empty, err)
	}
}
