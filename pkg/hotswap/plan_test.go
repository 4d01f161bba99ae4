package hotswap

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// The seed of a fresh test node: kube-proxy depends on kubelet, which
// depends on containerd.
func seedServices(status map[string]string) []ops.ServiceInfo {
	st := func(name string) string {
		if s, ok := status[name]; ok {
			return s
		}
		return "Running"
	}
	return []ops.ServiceInfo{
		{Name: "containerd", Exists: true, Status: st("containerd"), StartType: "Automatic", Dependents: []string{"kubelet"}},
		{Name: "kubelet", Exists: true, Status: st("kubelet"), StartType: "Automatic", DependsOn: []string{"containerd"}, Dependents: []string{"kube-proxy"}},
		{Name: "kube-proxy", Exists: true, Status: st("kube-proxy"), StartType: "Automatic", DependsOn: []string{"kubelet"}},
	}
}

func item(name, sha string, force bool) Item {
	return Item{Name: name, Service: name, Destination: `C:\k\` + name + ".exe", Source: &source.File{SHA256: sha}, Force: force}
}

func TestMakePlan(t *testing.T) {
	same, other := strings.Repeat("a", 64), strings.Repeat("b", 64)
	onNode := func(sha string) ops.FileInfo { return ops.FileInfo{Exists: true, SHA256: sha} }
	tests := []struct {
		name        string
		items       []Item
		files       []ops.FileInfo
		status      map[string]string
		extra       []ops.ServiceInfo
		unfinished  *ops.UnfinishedSwap
		wantActions []Action
		wantStop    []string
		wantStart   []string
	}{
		{
			name:        "all three changed: dependents stop first, start last",
			items:       []Item{item("containerd", same, false), item("kubelet", same, false), item("kube-proxy", same, false)},
			files:       []ops.FileInfo{onNode(other), onNode(other), {}},
			wantActions: []Action{ActionUpdate, ActionUpdate, ActionUpdate},
			wantStop:    []string{"kube-proxy", "kubelet", "containerd"},
			wantStart:   []string{"containerd", "kubelet", "kube-proxy"},
		},
		{
			name:        "only containerd changed: its running dependents cycle too",
			items:       []Item{item("containerd", same, false), item("kubelet", same, false)},
			files:       []ops.FileInfo{onNode(other), onNode(same)},
			wantActions: []Action{ActionUpdate, ActionUnchanged},
			wantStop:    []string{"kube-proxy", "kubelet", "containerd"},
			wantStart:   []string{"containerd", "kubelet", "kube-proxy"},
		},
		{
			name:        "only kube-proxy changed: nothing else stops",
			items:       []Item{item("kube-proxy", same, false)},
			files:       []ops.FileInfo{onNode(other)},
			wantActions: []Action{ActionUpdate},
			wantStop:    []string{"kube-proxy"},
			wantStart:   []string{"kube-proxy"},
		},
		{
			name:        "nothing changed",
			items:       []Item{item("kubelet", same, false)},
			files:       []ops.FileInfo{onNode(same)},
			wantActions: []Action{ActionUnchanged},
		},
		{
			name:        "force replaces the same bytes",
			items:       []Item{item("kube-proxy", same, true)},
			files:       []ops.FileInfo{onNode(same)},
			wantActions: []Action{ActionUpdate},
			wantStop:    []string{"kube-proxy"},
			wantStart:   []string{"kube-proxy"},
		},
		{
			// The containerd shim is no service: it feeds containerd.
			name: "two binaries of one service: one stop and one start",
			items: []Item{item("containerd", same, false),
				{Name: "shim", Service: "containerd", Destination: `C:\k\containerd-shim-runhcs-v1.exe`, Source: &source.File{SHA256: same}}},
			files:       []ops.FileInfo{onNode(other), onNode(other)},
			wantActions: []Action{ActionUpdate, ActionUpdate},
			wantStop:    []string{"kube-proxy", "kubelet", "containerd"},
			wantStart:   []string{"containerd", "kubelet", "kube-proxy"},
		},
		{
			name:        "a stopped dependent stays stopped; a stopped target is started",
			items:       []Item{item("kubelet", same, false)},
			files:       []ops.FileInfo{onNode(other)},
			status:      map[string]string{"kubelet": "Stopped", "kube-proxy": "Stopped"},
			wantActions: []Action{ActionUpdate},
			wantStop:    nil,
			wantStart:   []string{"kubelet"},
		},
		{
			name:        "unregistered service fails before anything runs",
			items:       []Item{item("wins", same, false), item("kube-proxy", same, false)},
			files:       []ops.FileInfo{{}, onNode(other)},
			wantActions: []Action{ActionFailed, ActionUpdate},
			wantStop:    []string{"kube-proxy"},
			wantStart:   []string{"kube-proxy"},
		},
		{
			// An interrupted swap left kubelet and kube-proxy stopped with
			// the new binary in place: not "unchanged".
			name:        "same content but the service is stopped",
			items:       []Item{item("kubelet", same, false), item("kube-proxy", same, false)},
			files:       []ops.FileInfo{onNode(same), onNode(same)},
			status:      map[string]string{"kubelet": "Stopped", "kube-proxy": "Stopped"},
			wantActions: []Action{ActionUpdate, ActionUpdate},
			wantStart:   []string{"kubelet", "kube-proxy"},
		},
		{
			name:        "same content in a binary an unfinished swap covers",
			items:       []Item{item("kubelet", same, false), item("kube-proxy", same, false)},
			files:       []ops.FileInfo{onNode(same), onNode(same)},
			unfinished:  &ops.UnfinishedSwap{Journal: ops.SwapJournal{Request: ops.ServiceSwapRequest{Items: []ops.SwapItem{{Destination: `C:\k\kubelet.exe`}}}}},
			wantActions: []Action{ActionUpdate, ActionUnchanged},
			wantStop:    []string{"kube-proxy", "kubelet"},
			wantStart:   []string{"kubelet", "kube-proxy"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			services := append(seedServices(tt.status), tt.extra...)
			for _, it := range tt.items {
				found := false
				for _, s := range services {
					found = found || s.Name == it.Service
				}
				if !found {
					services = append(services, ops.ServiceInfo{Name: it.Service})
				}
			}
			plan, err := MakePlan(tt.items, ops.ProvisionInspectResponse{Files: tt.files, Services: services, Unfinished: tt.unfinished})
			if err != nil {
				t.Fatal(err)
			}
			var actions []Action
			for _, s := range plan.Steps {
				actions = append(actions, s.Action)
			}
			if !reflect.DeepEqual(actions, tt.wantActions) {
				t.Errorf("actions = %v, want %v", actions, tt.wantActions)
			}
			if !reflect.DeepEqual(plan.StopOrder, tt.wantStop) {
				t.Errorf("stop order = %v, want %v", plan.StopOrder, tt.wantStop)
			}
			if !reflect.DeepEqual(plan.StartOrder, tt.wantStart) {
				t.Errorf("start order = %v, want %v", plan.StartOrder, tt.wantStart)
			}
		})
	}
}

func TestMakePlanErrors(t *testing.T) {
	sha := strings.Repeat("a", 64)
	cycle := []ops.ServiceInfo{
		{Name: "a", Exists: true, Status: "Running", DependsOn: []string{"b"}, Dependents: []string{"b"}},
		{Name: "b", Exists: true, Status: "Running", DependsOn: []string{"a"}, Dependents: []string{"a"}},
	}
	tests := []struct {
		name    string
		items   []Item
		inspect ops.ProvisionInspectResponse
		wantErr string
	}{
		{name: "short inspect", items: []Item{item("a", sha, false)}, inspect: ops.ProvisionInspectResponse{}, wantErr: "returned 0 files for 1"},
		{name: "dependency cycle", items: []Item{item("a", sha, false)}, inspect: ops.ProvisionInspectResponse{Files: []ops.FileInfo{{}}, Services: cycle}, wantErr: "cycle among a, b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MakePlan(tt.items, tt.inspect)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestMakePlanUnregistered(t *testing.T) {
	sha := strings.Repeat("a", 64)
	wins := Item{Name: "wins", Service: "rancher-wins", Destination: `C:\etc\rancher\wins\wins.exe`, Source: &source.File{SHA256: sha}, Register: func(context.Context) error { return nil }}
	tests := []struct {
		name       string
		file       ops.FileInfo
		wantAction Action
	}{
		{name: "fresh node", file: ops.FileInfo{}, wantAction: ActionUpdate},
		{name: "binary differs", file: ops.FileInfo{Exists: true, SHA256: strings.Repeat("b", 64)}, wantAction: ActionUpdate},
		{name: "binary in place", file: ops.FileInfo{Exists: true, SHA256: sha}, wantAction: ActionUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := MakePlan([]Item{wins}, ops.ProvisionInspectResponse{Files: []ops.FileInfo{tt.file}, Services: []ops.ServiceInfo{{Name: "rancher-wins"}}})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Steps[0].Action != tt.wantAction || len(plan.StopOrder) != 0 || len(plan.StartOrder) != 0 {
				t.Fatalf("action %s stop %v start %v", plan.Steps[0].Action, plan.StopOrder, plan.StartOrder)
			}
		})
	}
}

// A provisioner whose destination is not what its service runs fails
// with both paths named; the comparison ignores case and slashes.
func TestMakePlanServiceRunsOther(t *testing.T) {
	sha := strings.Repeat("a", 64)
	tests := []struct {
		name       string
		executable string
		wrapper    string
		wantAction Action
		wantReason []string
	}{
		{"runs the destination", `C:\k\kubelet.exe`, "", ActionUpdate, nil},
		{"same path spelled differently", `c:/K/Kubelet.EXE`, "", ActionUpdate, nil},
		{"unknown program (wrapper without Application)", "", `C:\k\nssm.exe`, ActionUpdate, nil},
		{"runs another file", `C:\k\kubelet-old.exe`, "", ActionFailed, []string{`runs C:\k\kubelet-old.exe, not the destination C:\k\kubelet.exe`, `set destination to C:\k\kubelet-old.exe`}},
		{"nssm runs another file", `C:\bin\kubelet.exe`, `C:\k\nssm.exe`, ActionFailed, []string{`runs C:\bin\kubelet.exe (through C:\k\nssm.exe)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			services := seedServices(nil)
			services[1].Executable, services[1].Wrapper = tt.executable, tt.wrapper
			plan, err := MakePlan([]Item{item("kubelet", sha, false)}, ops.ProvisionInspectResponse{Files: []ops.FileInfo{{}}, Services: services})
			if err != nil {
				t.Fatal(err)
			}
			step := plan.Steps[0]
			if step.Action != tt.wantAction {
				t.Fatalf("action = %s (%s), want %s", step.Action, step.Reason, tt.wantAction)
			}
			for _, want := range tt.wantReason {
				if !strings.Contains(step.Reason, want) {
					t.Errorf("reason %q lacks %q", step.Reason, want)
				}
			}
		})
	}
}

func TestDroppedConfig(t *testing.T) {
	req := func(args, deps []string) ops.ServiceRegisterRequest {
		return ops.ServiceRegisterRequest{Args: args, DependsOn: deps}
	}
	for _, tt := range []struct {
		name       string
		prev, want ops.ServiceRegisterRequest
		dropped    string
	}{
		{"the issue's edit", req([]string{"--windows-service", "--config=C:\\k\\c.yaml"}, []string{"containerd"}), req([]string{"--log-file=x", "--v=2"}, nil),
			`flag --windows-service, flag --config=C:\k\c.yaml, dependency containerd`},
		{"a value changes", req([]string{"--v=2", "-config", "a"}, nil), req([]string{"--v=4", "-config", "b"}, nil), ""},
		{"a flag and a dependency added", req([]string{"--v=2"}, []string{"a"}), req([]string{"--v=2", "--x"}, []string{"A", "b"}), ""},
		{"positional arguments are not flags", req([]string{"run", "-"}, nil), req(nil, nil), ""},
		{"a flag named twice is dropped once", req([]string{"--f=1", "--f=2"}, nil), req(nil, nil), "flag --f=1"},
	} {
		if got := droppedConfig(tt.prev, tt.want); got != tt.dropped {
			t.Errorf("%s: dropped %q, want %q", tt.name, got, tt.dropped)
		}
	}
}
