package join

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The kubelet and kube-proxy run under kube-log-runner when the node file
// has it, as upstream registers them: kube-log-runner's -log-file, then
// the program and its arguments.
func TestWithLogRunner(t *testing.T) {
	kubelet := &v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`, Register: &v1alpha1.ServiceRegistration{Args: []string{"--v=4"}}}
	kubeProxy := &v1alpha1.ProvisionerSpec{Name: "kube-proxy", Destination: `C:\k\kube-proxy.exe`}
	runner := &v1alpha1.ProvisionerSpec{Name: "kube-log-runner", Service: "kubelet", Destination: `C:\k\kube-log-runner.exe`}
	tests := []struct {
		name        string
		req         ops.ServiceRegisterRequest
		runner      *v1alpha1.ProvisionerSpec
		log         string
		wantProgram string
		wantHead    []string
	}{
		{name: "kubelet without kube-log-runner", req: Registration(&v1alpha1.JoinSpec{}, kubelet, nil, "n"), log: ops.JoinKubeletLog,
			wantProgram: `C:\k\kubelet.exe`, wantHead: []string{"--windows-service"}},
		{name: "kubelet", req: Registration(&v1alpha1.JoinSpec{}, kubelet, nil, "n"), runner: runner, log: ops.JoinKubeletLog,
			wantProgram: `C:\k\kube-log-runner.exe`, wantHead: []string{`-log-file=C:\var\log\kubelet\kubelet.log`, `C:\k\kubelet.exe`, "--windows-service"}},
		{name: "kube-proxy", req: KubeProxyRegistration(kubeProxy, kubelet, "n"), runner: runner, log: ops.JoinKubeProxyLog,
			wantProgram: `C:\k\kube-log-runner.exe`, wantHead: []string{`-log-file=C:\var\log\kube-proxy\kube-proxy.log`, `C:\k\kube-proxy.exe`, "--windows-service"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.req
			got := withLogRunner(tt.req, tt.runner, tt.log)
			if got.Program != tt.wantProgram || !slices.Equal(got.Args[:len(tt.wantHead)], tt.wantHead) {
				t.Errorf("program %s, args %q; want %s, %q...", got.Program, got.Args, tt.wantProgram, tt.wantHead)
			}
			// The program's own arguments follow unchanged, the node
			// file's register args last.
			if tail := got.Args[len(got.Args)-len(want.Args):]; !slices.Equal(tail, want.Args) {
				t.Errorf("args %q do not end with the program's %q", got.Args, want.Args)
			}
			if got.Name != want.Name || !slices.Equal(got.DependsOn, want.DependsOn) || got.StartType != want.StartType {
				t.Errorf("registration %+v, want the service of %+v", got, want)
			}
		})
	}
}

func TestLogsAndLogRunnerItem(t *testing.T) {
	runner := v1alpha1.ProvisionerSpec{Name: "kube-log-runner", Service: "kubelet", Destination: `C:\k\kube-log-runner.exe`}
	tests := []struct {
		name        string
		runner      bool
		drop        []string // provisioners the node file lacks
		registered  []string // the services the node has
		wantLogs    []string
		wantService string // of kube-log-runner's item
	}{
		{name: "no kube-log-runner: containerd's log only", wantLogs: []string{ops.JoinContainerdLog}},
		{name: "kube-log-runner on a fresh node: a plain file first", runner: true,
			wantLogs: []string{ops.JoinContainerdLog, ops.JoinKubeletLog, ops.JoinKubeProxyLog}},
		{name: "kube-log-runner of a registered kubelet: swapped with it", runner: true, registered: []string{"Kubelet"},
			wantLogs: []string{ops.JoinContainerdLog, ops.JoinKubeletLog, ops.JoinKubeProxyLog}, wantService: "kubelet"},
		{name: "without containerd and kube-proxy", runner: true, drop: []string{"containerd", "shim", "kube-proxy"}, registered: []string{"kubelet"},
			wantLogs: []string{ops.JoinKubeletLog}, wantService: "kubelet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := joinNode()
			if tt.runner {
				k.Provisioners = append(k.Provisioners, runner)
			}
			k.Provisioners = slices.DeleteFunc(k.Provisioners, func(p v1alpha1.ProvisionerSpec) bool { return slices.Contains(tt.drop, p.Name) })
			p := newPrepared(k)
			p.registered, p.name = tt.registered, "win-01"
			if got := p.logs(); !slices.Equal(got, tt.wantLogs) {
				t.Errorf("logs %v, want %v", got, tt.wantLogs)
			}
			var names []string
			for _, it := range p.items(k.Join, nil) {
				names = append(names, it.Name)
				if it.Name == "kube-log-runner" && (it.Service != tt.wantService || it.Helper != (tt.wantService != "")) {
					t.Errorf("kube-log-runner: service %q, helper %v; want service %q", it.Service, it.Helper, tt.wantService)
				}
			}
			if i, j := slices.Index(names, "kube-log-runner"), slices.Index(names, "kubelet"); tt.runner && (i < 0 || i > j) {
				t.Errorf("items %v: want kube-log-runner before the kubelet (its service runs it)", names)
			}
			if files := p.resetRequest().Files; tt.runner != slices.Contains(files, runner.Destination) {
				t.Errorf("--reset removes %v", files)
			}
		})
	}
}

func TestKubeletLogHint(t *testing.T) {
	tests := []struct {
		runner bool
		want   string
	}{
		{false, "swdt logs win kubelet shows its service's events; its own log goes nowhere without a kube-log-runner provisioner"},
		{true, `see swdt logs win kubelet (C:\var\log\kubelet\kubelet.log and its service's events)`},
	}
	for _, tt := range tests {
		k := joinNode()
		if tt.runner {
			k.Provisioners = append(k.Provisioners, v1alpha1.ProvisionerSpec{Name: "kube-log-runner", Service: "kubelet", Destination: `C:\k\kube-log-runner.exe`})
		}
		if got := newPrepared(k).kubeletLogHint("win"); !strings.HasPrefix(got, tt.want) {
			t.Errorf("runner %v: %q, want %q...", tt.runner, got, tt.want)
		}
	}
}
