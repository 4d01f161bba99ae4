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

// winsRecovery is what wins registers: restart after 5, 10 and 15 s.
var winsRecovery = winos.Recovery{ResetPeriod: 5 * time.Minute, Actions: []winos.RecoveryAction{
	{Type: winos.RecoveryRestart, Delay: 5 * time.Second}, {Type: winos.RecoveryRestart, Delay: 10 * time.Second},
	{Type: winos.RecoveryRestart, Delay: 15 * time.Second}, {Type: winos.RecoveryNone}}}

func TestWinsRegisterAndUnregister(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	ctx := context.Background()
	_, err := agent.Call(ctx, w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins})
	if kind, msg := failure(t, err); kind != "not-found" || !strings.Contains(msg, "does not exist") {
		t.Fatalf("register without a binary: %v", err)
	}
	installWins(t, ts, "MZ wins v0.15.1", true)
	svc, err := n.Service(ops.WinsService)
	if err != nil {
		t.Fatal(err)
	}
	if svc.StartType != simnode.StartAutomatic || svc.DisplayName != "Rancher Wins" || strings.Join(svc.Args, " ") != `srv app run --config `+testWinsConfig {
		t.Errorf("service = %+v", svc)
	}
	if rec, err := w.Recovery(ops.WinsService); err != nil || !reflect.DeepEqual(rec, winsRecovery) {
		t.Errorf("failure actions %+v, %v; want wins' own %+v", rec, err, winsRecovery)
	}
	// Registering again stops and re-creates the service, as wins does.
	resp, err := agent.Call(ctx, w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins})
	if err != nil || !resp.Registered {
		t.Fatalf("re-register: %+v %v", resp, err)
	}
	if svc, _ := n.Service(ops.WinsService); svc.Status != simnode.StatusStopped || len(svc.Args) != 3 {
		t.Errorf("after re-register: %+v", svc)
	}
	resp, err = agent.Call(ctx, w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, Unregister: true})
	if err != nil || resp.Registered {
		t.Fatalf("unregister: %+v %v", resp, err)
	}
	if _, err := n.Service(ops.WinsService); err == nil {
		t.Error("service still listed after unregister")
	}
	_, err = agent.Call(ctx, w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, Unregister: true})
	if kind, msg := failure(t, err); kind != "register-failed" || !strings.Contains(msg, "hasn't been registered") {
		t.Errorf("second unregister: %v", err)
	}
}

// Unregistering a running wins stops it first, so the service goes away
// at once instead of lingering marked for deletion while it runs.
func TestWinsUnregisterRunning(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	resp, err := agent.Call(context.Background(), w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, Unregister: true})
	if err != nil || resp.Registered {
		t.Fatalf("unregister: %+v %v", resp, err)
	}
	if svc, err := ts.Node().Service(ops.WinsService); err == nil {
		t.Errorf("service still listed: %+v", svc)
	}
}

// A wins that ignores its stop control is killed with its failure
// actions off: otherwise the kill restarts it, and registration fails
// (wins would wait for it forever). The short restart delay makes the
// restart fall within the handler's watch.
func TestWinsRegisterKillsAServiceThatIgnoresStop(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1 "+simnode.MarkerHangOnStop, true)
	quick := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 50 * time.Millisecond}}}
	if err := w.SetRecovery(ops.WinsService, quick); err != nil {
		t.Fatal(err)
	}
	old, _ := ts.Node().Service(ops.WinsService)
	resp, err := agent.Call(context.Background(), w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil || !resp.Registered {
		t.Fatalf("register: %+v %v", resp, err)
	}
	svc, err := ts.Node().Service(ops.WinsService)
	if err != nil || svc.Status != simnode.StatusStopped || svc.StartCount != 0 {
		t.Errorf("service after register %+v, %v; want a new, stopped one", svc, err)
	}
	for _, p := range ts.Node().Processes() {
		if p.PID == old.PID {
			t.Errorf("the old service process %d still runs", p.PID)
		}
	}
	if rec, _ := w.Recovery(ops.WinsService); !reflect.DeepEqual(rec, winsRecovery) {
		t.Errorf("failure actions of the new service %+v", rec)
	}
}

// A service marked for deletion (deleted while it ran) blocks creating a
// new one until it stops: register stops it, waits until it is gone, and
// registers wins afresh.
func TestWinsRegisterReplacesServiceMarkedForDeletion(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	if err := ts.Node().DeleteService(ops.WinsService); err != nil {
		t.Fatal(err)
	}
	inspect, err := agent.Call(context.Background(), w, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || !inspect.Service.Exists || inspect.Service.Status != "Running" {
		t.Fatalf("inspect a service marked for deletion: %+v %v", inspect.Service, err)
	}
	resp, err := agent.Call(context.Background(), w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil || !resp.Registered {
		t.Fatalf("register: %+v %v", resp, err)
	}
	svc, err := ts.Node().Service(ops.WinsService)
	if err != nil || svc.DeletePending || svc.Status != simnode.StatusStopped {
		t.Errorf("service %+v, %v; want a new one", svc, err)
	}
	startWins(t, ts)
}

// A hung wins.exe is stopped at the handler's limit and reported as a
// timeout; the service it was to replace keeps its failure actions and
// runs again.
func TestWinsRegisterHungWins(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	const hung = `C:\etc\rancher\wins\wins-hung.exe`
	if err := ts.Node().WriteFile(hung, []byte("MZ wins "+simnode.MarkerWinsHang)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := agent.Call(context.Background(), w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: hung, ConfigPath: testWinsConfig})
	if kind, msg := failure(t, err); kind != "timeout" || !strings.Contains(msg, "wins-hung.exe srv app run --register") || !strings.Contains(msg, "hangs") {
		t.Errorf("register with a hung wins: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("register took %s", d)
	}
	if rec, err := w.Recovery(ops.WinsService); err != nil || !reflect.DeepEqual(rec, winsRecovery) {
		t.Errorf("failure actions not restored: %+v, %v", rec, err)
	}
	if _, err := ts.Node().WaitService(context.Background(), ops.WinsService, simnode.StatusRunning, 5*time.Second); err != nil {
		t.Errorf("service not started again: %v", err)
	}
}
