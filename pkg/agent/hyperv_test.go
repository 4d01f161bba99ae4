package agent_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// hypervHost is a simulated Hyper-V host with a running VM "Win 2022
// [dev]" (two checkpoints, one adapter), an off VM "off" and two VMs
// named "twin".
func hypervHost() simnode.HyperVHost {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	return simnode.HyperVHost{VMs: []*simnode.HyperVVM{
		{Name: "Win 2022 [dev]", State: "Running", Current: "after-setup",
			Checkpoints: []simnode.HyperVCheckpoint{
				{Name: "fresh", Created: t0, State: "Off"},
				{Name: "after-setup", Parent: "fresh", Created: t0.Add(time.Hour), State: "Running"},
			},
			Adapters: []simnode.HyperVAdapter{{Name: "Network Adapter", MAC: "00155D010203", Addresses: []string{"10.0.0.5", "fe80::1"}}}},
		{Name: "off", State: "Off", Adapters: []simnode.HyperVAdapter{{Name: "Network Adapter", MAC: "00155D010204", Addresses: []string{"10.0.0.6"}}},
			Checkpoints: []simnode.HyperVCheckpoint{{Name: "dup", State: "Off"}, {Name: "DUP", State: "Running"}}},
		{Name: "stubborn", State: "Running", IgnoresShutdown: true},
		{Name: "twin", State: "Off"},
		{Name: "TWIN", State: "Off"},
	}}
}

// hypervVM finds a VM of the model by its exact name.
func hypervVM(t *testing.T, ts *simnode.TestServer, name string) *simnode.HyperVVM {
	t.Helper()
	for _, vm := range ts.State().HyperV.VMs {
		if vm.Name == name {
			return vm
		}
	}
	t.Fatalf("no VM %q in the model", name)
	return nil
}

func TestHyperVOps(t *testing.T) {
	tests := []struct {
		name string
		// call runs one op through the agent's handler.
		call func(ctx context.Context, w winos.OS) (any, error)
		want any
		// kind and message, when kind is set, are the failure expected.
		kind    ops.Kind
		message []string
		// check inspects the model afterwards.
		check func(t *testing.T, ts *simnode.TestServer)
	}{
		{name: "status", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStatus, ops.HyperVVMRequest{Name: "win 2022 [DEV]"})
		}, want: ops.HyperVVMInfo{Name: "Win 2022 [dev]", State: "Running", Checkpoints: 2, CurrentCheckpoint: "after-setup"}},
		{name: "wildcard characters are literal", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStatus, ops.HyperVVMRequest{Name: "Win*"})
		}, kind: ops.KindVMNotFound, message: []string{`no VM named "Win*" on WIN-SIMNODE01`}},
		{name: "empty name", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStatus, ops.HyperVVMRequest{})
		}, kind: ops.KindVMNotFound, message: []string{`no VM named ""`}},
		{name: "two VMs of one name", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStart, ops.HyperVVMRequest{Name: "twin"})
		}, kind: ops.KindAmbiguous, message: []string{`2 VMs are named "twin"`, "Rename-VM"}, check: func(t *testing.T, ts *simnode.TestServer) {
			if vm := hypervVM(t, ts, "twin"); vm.State != "Off" {
				t.Errorf("an ambiguous start started %+v", vm)
			}
		}},
		{name: "start a running VM", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStart, ops.HyperVVMRequest{Name: "Win 2022 [dev]"})
		}, want: ops.HyperVStartResponse{AlreadyRunning: true}},
		{name: "start an off VM", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStart, ops.HyperVVMRequest{Name: "off"})
		}, want: ops.HyperVStartResponse{}, check: func(t *testing.T, ts *simnode.TestServer) {
			if vm := hypervVM(t, ts, "off"); vm.State != "Running" {
				t.Errorf("model = %+v", vm)
			}
		}},
		{name: "stop", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStop, ops.HyperVStopRequest{Name: "Win 2022 [dev]", TimeoutSeconds: 30})
		}, want: ops.HyperVStopResponse{}, check: func(t *testing.T, ts *simnode.TestServer) {
			if vm := hypervVM(t, ts, "Win 2022 [dev]"); vm.State != "Off" || vm.Stops != 1 || vm.TurnOffs != 0 {
				t.Errorf("model = %+v", vm)
			}
		}},
		{name: "stop an off VM", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStop, ops.HyperVStopRequest{Name: "off", TimeoutSeconds: 30})
		}, want: ops.HyperVStopResponse{AlreadyOff: true}},
		{name: "stop a guest that ignores it", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMStop, ops.HyperVStopRequest{Name: "stubborn", TimeoutSeconds: 1})
		}, want: ops.HyperVStopResponse{Forced: true}, check: func(t *testing.T, ts *simnode.TestServer) {
			if vm := hypervVM(t, ts, "stubborn"); vm.State != "Off" || vm.TurnOffs != 1 {
				t.Errorf("model = %+v", vm)
			}
		}},
		{name: "checkpoint", call: func(ctx context.Context, w winos.OS) (any, error) {
			cp, err := agent.Call(ctx, w, ops.HyperVCheckpointCreate, ops.HyperVCheckpointRequest{Name: "Win 2022 [dev]", Checkpoint: "s1"})
			if _, perr := time.Parse(time.RFC3339Nano, cp.Created); err == nil && perr != nil {
				return cp, perr
			}
			cp.Created = ""
			return cp, err
		}, want: ops.HyperVCheckpoint{Name: "s1", Parent: "after-setup"}, check: func(t *testing.T, ts *simnode.TestServer) {
			if vm := hypervVM(t, ts, "Win 2022 [dev]"); len(vm.Checkpoints) != 3 || vm.Current != "s1" {
				t.Errorf("model = %+v", vm)
			}
		}},
		{name: "checkpoint under a name taken", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointCreate, ops.HyperVCheckpointRequest{Name: "Win 2022 [dev]", Checkpoint: "FRESH"})
		}, kind: ops.KindCheckpointExists, message: []string{`VM "Win 2022 [dev]" already has a checkpoint named "FRESH"`}},
		{name: "restore", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointRestore, ops.HyperVCheckpointRequest{Name: "Win 2022 [dev]", Checkpoint: "fresh"})
		}, want: ops.HyperVVMInfo{Name: "Win 2022 [dev]", State: "Off", Checkpoints: 2, CurrentCheckpoint: "fresh"}},
		{name: "restore a missing checkpoint", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointRestore, ops.HyperVCheckpointRequest{Name: "Win 2022 [dev]", Checkpoint: "missing"})
		}, kind: ops.KindCheckpointNotFound, message: []string{`has no checkpoint named "missing"`}},
		{name: "restore an ambiguous checkpoint", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointRestore, ops.HyperVCheckpointRequest{Name: "off", Checkpoint: "dup"})
		}, kind: ops.KindAmbiguous, message: []string{`2 checkpoints of VM "off" are named "dup"`, "Rename-VMCheckpoint"}},
		{name: "list", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointList, ops.HyperVVMRequest{Name: "Win 2022 [dev]"})
		}, want: ops.HyperVCheckpointsResponse{Current: "after-setup", Checkpoints: []ops.HyperVCheckpoint{
			{Name: "fresh", Created: "2024-05-01T10:00:00Z"},
			{Name: "after-setup", Created: "2024-05-01T11:00:00Z", Parent: "fresh"},
		}}},
		{name: "list without checkpoints", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVCheckpointList, ops.HyperVVMRequest{Name: "stubborn"})
		}, want: ops.HyperVCheckpointsResponse{Checkpoints: []ops.HyperVCheckpoint{}}},
		{name: "addresses", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMAddresses, ops.HyperVVMRequest{Name: "Win 2022 [dev]"})
		}, want: ops.HyperVAddressesResponse{Adapters: []ops.HyperVAdapter{{Name: "Network Adapter", MAC: "00155D010203", Addresses: []string{"10.0.0.5", "fe80::1"}}}}},
		{name: "addresses of an off VM", call: func(ctx context.Context, w winos.OS) (any, error) {
			return agent.Call(ctx, w, ops.HyperVVMAddresses, ops.HyperVVMRequest{Name: "off"})
		}, want: ops.HyperVAddressesResponse{Adapters: []ops.HyperVAdapter{{Name: "Network Adapter", MAC: "00155D010204", Addresses: []string{}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithHyperV(hypervHost()))
			got, err := tc.call(setupCtx(t), ts.Node().OS())
			if tc.kind != "" {
				setupWantFailure(t, err, tc.kind, tc.message...)
			} else if err != nil {
				t.Fatal(err)
			} else if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result = %+v, want %+v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, ts)
			}
		})
	}
}

// A machine that is no Hyper-V host says so for every op, and how to fix
// it.
func TestHyperVOpsWithoutHyperV(t *testing.T) {
	ts := simnode.StartTest(t)
	w := ts.Node().OS()
	for _, call := range []func(ctx context.Context) error{
		func(ctx context.Context) error {
			_, err := agent.Call(ctx, w, ops.HyperVVMStatus, ops.HyperVVMRequest{Name: "x"})
			return err
		},
		func(ctx context.Context) error {
			_, err := agent.Call(ctx, w, ops.HyperVVMStop, ops.HyperVStopRequest{Name: "x", TimeoutSeconds: 1})
			return err
		},
		func(ctx context.Context) error {
			_, err := agent.Call(ctx, w, ops.HyperVCheckpointCreate, ops.HyperVCheckpointRequest{Name: "x", Checkpoint: "y"})
			return err
		},
	} {
		setupWantFailure(t, call(setupCtx(t)), ops.KindNoHyperV, "Hyper-V PowerShell module is not installed on WIN-SIMNODE01",
			"Install-WindowsFeature Hyper-V -IncludeManagementTools", "spec.vm.hyperv.host")
	}
}

// A script that does not finish within its limit is stopped and reported
// as a timeout naming the script.
func TestHyperVTimeLimit(t *testing.T) {
	agent.ShortenHyperVLimit(t, time.Nanosecond)
	ts := simnode.StartTest(t, simnode.WithHyperV(hypervHost()))
	_, err := agent.Call(setupCtx(t), ts.Node().OS(), ops.HyperVVMStatus, ops.HyperVVMRequest{Name: "off"})
	setupWantFailure(t, err, "timeout", "hyperv-vm-status script did not finish within 1ns", "Get-VM")
}
