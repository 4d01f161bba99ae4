package agent_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
)

func TestWinsConfigWrite(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	steps := []struct {
		content     string
		changed     bool
		backup      string
		backupBytes string
	}{
		{content: "listen: rancher_wins\n", changed: true},
		{content: "listen: rancher_wins\n", changed: false},
		{content: "listen: other\n", changed: true, backup: testWinsConfig + ".swdt-bak", backupBytes: "listen: rancher_wins\n"},
		// An older backup is replaced by the newer previous file.
		{content: "listen: third # non-ASCII: é\n", changed: true, backup: testWinsConfig + ".swdt-bak", backupBytes: "listen: other\n"},
	}
	for i, s := range steps {
		resp, err := agent.Call(context.Background(), w, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: s.content})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if resp.Changed != s.changed || resp.Backup != s.backup {
			t.Errorf("step %d: %+v", i, resp)
		}
		// UTF-8 exactly as given: no BOM, no line-ending changes.
		if got, _ := n.ReadFile(testWinsConfig); string(got) != s.content {
			t.Errorf("step %d: config %q", i, got)
		}
		if s.backup != "" {
			if got, _ := n.ReadFile(s.backup); string(got) != s.backupBytes {
				t.Errorf("step %d: backup %q", i, got)
			}
		}
		if n.Exists(testWinsConfig + ".swdt-new") {
			t.Errorf("step %d: staged config left behind", i)
		}
	}
	inspect, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || !inspect.ConfigExists || inspect.ConfigContent != steps[len(steps)-1].content || inspect.Service.Exists {
		t.Errorf("inspect %+v %v", inspect, err)
	}
}

// The config's directory is created when missing; a path that is not a
// full path is refused before anything is written.
func TestWinsConfigWritePaths(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		wantKind ops.Kind
	}{
		{name: "new directory", path: `C:\etc\rancher\wins-new\sub\config`},
		{name: "no directory", path: "config", wantKind: "bad-request"},
		{name: "empty", path: "", wantKind: "bad-request"},
		{name: "directory only", path: `C:\etc\rancher\wins\`, wantKind: "bad-request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, w := startWinsTest(t)
			resp, err := agent.Call(context.Background(), w, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: tc.path, Content: "debug: true\n"})
			if tc.wantKind != "" {
				if kind, _ := failure(t, err); kind != tc.wantKind {
					t.Errorf("kind %s, want %s", kind, tc.wantKind)
				}
				return
			}
			if err != nil || !resp.Changed || resp.Backup != "" {
				t.Fatalf("write: %+v %v", resp, err)
			}
			if got, _ := ts.Node().ReadFile(tc.path); string(got) != "debug: true\n" {
				t.Errorf("config %q", got)
			}
		})
	}
}

// A config file that differs only by a UTF-8 BOM is not the config swdt
// renders: inspect reports the BOM and config-write rewrites the file (the
// handlers compare bytes, not BOM-stripped text).
func TestWinsConfigBOMIsAChange(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	const content = "white_list:\n  processPaths: []\n"
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(testWinsConfig, []byte("\uFEFF"+content)); err != nil {
		t.Fatal(err)
	}
	inspect, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || !inspect.ConfigExists || inspect.ConfigContent != "\uFEFF"+content {
		t.Fatalf("inspect %+v, %v", inspect, err)
	}
	resp, err := agent.Call(context.Background(), w, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: content})
	if err != nil || !resp.Changed {
		t.Fatalf("write %+v, %v", resp, err)
	}
	if b, _ := n.ReadFile(testWinsConfig); string(b) != content {
		t.Errorf("config holds %q", b)
	}
	if b, _ := n.ReadFile(resp.Backup); string(b) != "\uFEFF"+content {
		t.Errorf("backup holds %q", b)
	}
}

func TestWinsInspect(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	empty, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || empty.Service.Exists || empty.Service.Name != ops.WinsService || empty.ConfigExists || empty.Orphans == nil || len(empty.Orphans) != 0 {
		t.Errorf("inspect without wins: %+v %v", empty, err)
	}
	installWins(t, ts, "MZ wins v0.15.1", true)
	// An orphan started through wins: its renamed binary is locked.
	const orphan = `C:\etc\rancher\wins\rancher-wins-agent.exe`
	if err := n.WriteFile(orphan, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	pid, err := n.StartProcess(orphan, "")
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil {
		t.Fatal(err)
	}
	if len(inspect.Orphans) != 1 || inspect.Orphans[0].PID != pid || inspect.Orphans[0].Name != "rancher-wins-agent.exe" || inspect.Orphans[0].Path != orphan {
		t.Errorf("inspect orphans %+v", inspect.Orphans)
	}
	s := inspect.Service
	if !s.Exists || s.Status != "Running" || s.StartType != "Automatic" || s.PID == 0 || !strings.Contains(s.BinaryPath, testWins) || !strings.Contains(s.BinaryPath, "--config "+testWinsConfig) {
		t.Errorf("inspect service %+v", s)
	}
	if !inspect.ConfigExists || !strings.Contains(inspect.ConfigContent, "processPaths") {
		t.Errorf("inspect config %v %q", inspect.ConfigExists, inspect.ConfigContent)
	}
	if _, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{}); err == nil {
		t.Error("inspect without a config path worked")
	}
}

func TestWinsOrphansStop(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	installWins(t, ts, "MZ wins v0.15.1", true)
	const orphan = `C:\etc\rancher\wins\rancher-wins-agent.exe`
	if err := n.WriteFile(orphan, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	pid, err := n.StartProcess(orphan, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(orphan, []byte("MZ agent v2")); err == nil {
		t.Fatal("the orphan's binary is not locked: the test proves nothing")
	}
	stopped, err := agent.Call(context.Background(), w, ops.WinsOrphansStop, ops.WinsOrphansStopRequest{})
	if err != nil || len(stopped.Stopped) != 1 || stopped.Stopped[0].PID != pid || len(winsProcesses(t, ts)) != 0 {
		t.Fatalf("orphans-stop %+v %v", stopped, err)
	}
	if err := n.WriteFile(orphan, []byte("MZ agent v2")); err != nil {
		t.Errorf("binary still locked after orphans-stop: %v", err)
	}
	// The service itself is no orphan.
	if svc, _ := n.Service(ops.WinsService); svc.Status != "Running" {
		t.Errorf("service %s", svc.Status)
	}
	again, err := agent.Call(context.Background(), w, ops.WinsOrphansStop, ops.WinsOrphansStopRequest{})
	if err != nil || again.Stopped == nil || len(again.Stopped) != 0 {
		t.Errorf("second orphans-stop %+v %v", again, err)
	}
}
