package agent_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

func TestWinsUninstall(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	installWins(t, ts, "MZ wins v0.15.1", true)
	const orphan = `C:\etc\rancher\wins\rancher-wins-agent.exe`
	if err := n.WriteFile(orphan, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.StartProcess(orphan, ""); err != nil {
		t.Fatal(err)
	}
	// An aborted deploy leaves its staged file (and encoded upload) under
	// its run's own name; a file that only starts like wins.exe is not
	// swdt's and stays.
	staged := ops.StagedPath(testWins, "0123abcd")
	unrelated := testWins + ".swdt-new-x.y"
	for _, f := range []string{ops.BackupPath(testWins), staged, ops.EncodedPath(staged), unrelated} {
		if err := n.WriteFile(f, []byte("MZ left over")); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := agent.Call(context.Background(), w, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{testWinsConfig, testWins, ops.BackupPath(testWins), staged, ops.EncodedPath(staged)}
	if !resp.ServiceRemoved || len(resp.Stopped) != 1 || resp.Stopped[0].Path != orphan || resp.ConfigBackup != testWinsConfig+".swdt-bak" || !reflect.DeepEqual(resp.Removed, want) {
		t.Errorf("uninstall %+v", resp)
	}
	if _, err := n.Service(ops.WinsService); err == nil {
		t.Error("service still registered")
	}
	for _, f := range []string{testWins, ops.BackupPath(testWins), staged, ops.EncodedPath(staged), testWinsConfig} {
		if n.Exists(f) {
			t.Errorf("%s left behind", f)
		}
	}
	if !n.Exists(unrelated) {
		t.Errorf("%s, not a name of swdt's, was removed", unrelated)
	}
	if b, err := n.ReadFile(testWinsConfig + ".swdt-bak"); err != nil || !strings.Contains(string(b), "processPaths") {
		t.Errorf("config backup %q, %v", b, err)
	}
	if o := winsProcesses(t, ts); len(o) != 0 {
		t.Errorf("processes left: %+v", o)
	}
	// Uninstalling again finds nothing to do.
	resp, err = agent.Call(context.Background(), w, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil || resp.ServiceRemoved || len(resp.Removed) != 0 || len(resp.Stopped) != 0 || resp.ConfigBackup != "" {
		t.Errorf("second uninstall %+v %v", resp, err)
	}
}

// Killing a service's process is a failure the service control manager
// answers with the service's recovery actions. A wins that ignores its
// stop is killed with its failure actions off, so it stays stopped and
// its binary can be deleted; with them on, the restart (50 ms here, 5 s
// for wins' own) would lock the binary again.
func TestWinsUninstallWithRecoveryActions(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1 "+simnode.MarkerHangOnStop, true)
	quick := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 50 * time.Millisecond}}}
	if err := w.SetRecovery(ops.WinsService, quick); err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(context.Background(), w, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.ServiceRemoved || len(resp.Removed) != 2 {
		t.Errorf("uninstall %+v", resp)
	}
	if _, err := ts.Node().Service(ops.WinsService); err == nil {
		t.Error("service still registered")
	}
	if ts.Node().Exists(testWins) {
		t.Error("binary left behind")
	}
}

// Without wins.exe to unregister itself, the service is deleted with
// sc.exe.
func TestWinsUninstallWithoutBinary(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	resp, err := agent.Call(context.Background(), w, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: `C:\elsewhere\wins.exe`, ConfigPath: testWinsConfig})
	if err != nil || !resp.ServiceRemoved {
		t.Fatalf("uninstall %+v %v", resp, err)
	}
	if _, err := ts.Node().Service(ops.WinsService); err == nil {
		t.Error("service still registered")
	}
}

// When the service cannot be unregistered (a hung wins.exe, then sc.exe
// refused), uninstall fails, and the service it stopped keeps its
// failure actions: it stays, and must still restart after a crash.
func TestWinsUninstallRestoresRecoveryWhenServiceStays(t *testing.T) {
	ts, sim := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	const hung = `C:\etc\rancher\wins\wins-hung.exe`
	if err := ts.Node().WriteFile(hung, []byte("MZ wins "+simnode.MarkerWinsHang)); err != nil {
		t.Fatal(err)
	}
	var recoveries []winos.Recovery
	w := wrappedOS{OS: sim, recoveries: &recoveries, run: func(cmd winos.Command) (winos.Result, bool) {
		if !strings.EqualFold(cmd.Path, "sc.exe") {
			return winos.Result{}, false
		}
		return winos.Result{ExitCode: 5, Stdout: []byte("[SC] OpenService FAILED 5:\r\n\r\nAccess is denied.\r\n")}, true
	}}
	_, err := agent.Call(context.Background(), w, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: hung, ConfigPath: testWinsConfig})
	kind, msg := failure(t, err)
	if kind != "unregister-failed" || !strings.Contains(msg, "Access is denied") || !strings.Contains(msg, "did not finish within") {
		t.Errorf("uninstall: %v", err)
	}
	svc, err := ts.Node().Service(ops.WinsService)
	if err != nil || svc.Status != simnode.StatusStopped {
		t.Fatalf("service %+v, %v; want it registered and stopped", svc, err)
	}
	off := winos.Recovery{ResetPeriod: winsRecovery.ResetPeriod, Actions: []winos.RecoveryAction{{Type: winos.RecoveryNone}}}
	if !reflect.DeepEqual(recoveries, []winos.Recovery{off, winsRecovery}) {
		t.Errorf("failure actions set %+v; want off, then wins' own back", recoveries)
	}
	if rec, err := sim.Recovery(ops.WinsService); err != nil || !reflect.DeepEqual(rec, winsRecovery) {
		t.Errorf("failure actions %+v, %v; want wins' own back", rec, err)
	}
	for _, f := range []string{testWins, testWinsConfig} {
		if !ts.Node().Exists(f) {
			t.Errorf("%s removed although the service stays", f)
		}
	}
}
