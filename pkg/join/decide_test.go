package join

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The decisions of a join apart from the cluster: which nodes, which
// kubelet version, which Node name, whether the node is joined already,
// which files and binaries go to it, what its outcome is, and what
// --reset removes.

func TestWithJoin(t *testing.T) {
	nodes := []v1alpha1.Node{{}, {}, {}}
	nodes[0].Name, nodes[1].Name, nodes[2].Name = "a", "b", "c"
	nodes[1].Spec.Kubernetes.Join = &v1alpha1.JoinSpec{}
	with, skipped := withJoin(nodes)
	if len(with) != 1 || with[0].Name != "b" || !slices.Equal(skipped, []string{"a", "c"}) {
		t.Errorf("with %v, skipped %v; want b, and a and c skipped", with, skipped)
	}
}

func TestKubeletVersion(t *testing.T) {
	server := version.MustParseGeneric("v1.31.2+k3s1")
	tests := []struct {
		name    string
		kubelet v1alpha1.ProvisionerSpec
		want    string
		wantErr bool
	}{
		{name: "a build of unknown version", kubelet: v1alpha1.ProvisionerSpec{SourceURL: "./kubelet.exe"}, want: ""},
		{name: "the control plane's release", kubelet: v1alpha1.ProvisionerSpec{SourceURL: "release:kubernetes"}, want: "v1.31.2"},
		{name: "the provisioner's version", kubelet: v1alpha1.ProvisionerSpec{SourceURL: "release:Kubernetes", Version: "1.30.0"}, want: "v1.30.0"},
		{name: "three minors older", kubelet: v1alpha1.ProvisionerSpec{Version: "v1.28.9"}, want: "v1.28.9"},
		{name: "four minors older", kubelet: v1alpha1.ProvisionerSpec{Version: "v1.27.0"}, wantErr: true},
		{name: "newer than the control plane", kubelet: v1alpha1.ProvisionerSpec{Version: "v1.32.0"}, wantErr: true},
		{name: "not a version", kubelet: v1alpha1.ProvisionerSpec{Version: "latest"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.kubelet.Name = "kubelet"
			got, err := kubeletVersion(&tt.kubelet, server)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("kubeletVersion = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	if got := nodeName(&v1alpha1.JoinSpec{}, "WIN-SIMNODE01"); got != "win-simnode01" {
		t.Errorf("from the host name: %q", got)
	}
	if got := nodeName(&v1alpha1.JoinSpec{NodeName: "Win-A"}, "WIN-SIMNODE01"); got != "Win-A" {
		t.Errorf("spec.kubernetes.join.nodeName: %q", got)
	}
}

func TestJoinedTo(t *testing.T) {
	kubeconfig := func(server string) string {
		return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {}
`
	}
	const server = "https://10.0.0.1:6443"
	tests := []struct {
		name       string
		kubeconfig string
		want       bool
		wantErr    bool
	}{
		{name: "never joined", want: false},
		{name: "joined to this cluster", kubeconfig: kubeconfig(server), want: true},
		{name: "joined through the kubeconfig's server", kubeconfig: kubeconfig("https://127.0.0.1:40123"), want: true},
		{name: "joined to another cluster", kubeconfig: kubeconfig("https://10.9.9.9:6443"), wantErr: true},
		{name: "no current context", kubeconfig: "apiVersion: v1\nkind: Config\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := joinedTo(tt.kubeconfig, []string{server, "https://127.0.0.1:40123"})
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("joinedTo = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestBaseFiles(t *testing.T) {
	custom := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(custom, []byte("version = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		js         v1alpha1.JoinSpec
		containerd bool
		// wantContainerd is containerd's config ("": none written).
		wantContainerd string
		wantErr        error
	}{
		{name: "the node has its runtime"},
		{name: "containerd's default config", containerd: true, wantContainerd: string(ContainerdConfig())},
		{name: "containerdConfig", js: v1alpha1.JoinSpec{ContainerdConfig: custom}, containerd: true, wantContainerd: "version = 2\n"},
		{name: "containerdConfig without containerd", js: v1alpha1.JoinSpec{ContainerdConfig: custom}},
		{name: "a containerdConfig that is not there", js: v1alpha1.JoinSpec{ContainerdConfig: custom + ".missing"}, containerd: true, wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := baseFiles(&tt.js, cluster.DNS{Domain: cluster.DefaultClusterDomain}, []byte("CA"), tt.containerd)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			cc, ok := files[ops.JoinFileContainerdConfig]
			if files[ops.JoinFileCA] != "CA" || files[ops.JoinFileKubeletConfig] == "" || cc != tt.wantContainerd || ok != (tt.wantContainerd != "") {
				t.Errorf("files = %v", files)
			}
			want := 2 // the CA and the kubelet's config
			if tt.wantContainerd != "" {
				want++
			}
			if len(files) != want {
				t.Errorf("%d files, want only the CA, the kubelet's config and containerd's", len(files))
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	// A renewal the node stamped, on its own clock (an hour behind).
	renewed := time.Now().Add(-time.Hour)
	unchanged := []hotswap.Result{{Name: "kubelet", Action: hotswap.ActionUnchanged}}
	tests := []struct {
		name       string
		files      []ops.JoinFile
		registered bool
		results    []hotswap.Result
		want       string
	}{
		{name: "nothing changed", registered: true, results: unchanged, want: ResultUnchanged},
		{name: "a file changed", files: []ops.JoinFile{ops.JoinFileKubeletConfig}, registered: true, results: unchanged, want: ResultChanged},
		{name: "no Node yet", results: unchanged, want: ResultChanged},
		{name: "a binary updated", registered: true, results: []hotswap.Result{{Name: "kubelet", Action: hotswap.ActionUpdated}}, want: ResultChanged},
		{name: "a service restarted", registered: true, results: []hotswap.Result{{Name: "kubelet", Action: hotswap.ActionUnchanged, Restarted: true}}, want: ResultChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := outcome(tt.files, tt.registered, tt.results, "v1.31.2", renewed)
			if got != tt.want || want.KubeletVersion != "v1.31.2" {
				t.Errorf("outcome = %s, %+v; want %s", got, want, tt.want)
			}
			// Only a changed node must show a kubelet that talked to the
			// cluster since the renewal seen before.
			if after := want.RenewedAfter.Equal(renewed); after != (tt.want == ResultChanged) {
				t.Errorf("RenewedAfter = %v for a %s node", want.RenewedAfter, got)
			}
		})
	}
	// No Lease yet: any renewal is the new kubelet's.
	if _, want := outcome(nil, false, unchanged, "", time.Time{}); !want.RenewedAfter.Equal(time.Unix(0, 0)) {
		t.Errorf("RenewedAfter = %v without a Lease before, want the epoch", want.RenewedAfter)
	}
}

// joinNode is a node file's kubernetes section with every kind of
// provisioner a join installs.
func joinNode() *v1alpha1.KubernetesSpec {
	return &v1alpha1.KubernetesSpec{Join: &v1alpha1.JoinSpec{}, Provisioners: []v1alpha1.ProvisionerSpec{
		{Name: "containerd", Destination: `C:\Program Files\containerd\containerd.exe`},
		{Name: "shim", Service: "containerd", Destination: `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`},
		{Name: "flannel", Service: v1alpha1.NoService, Destination: `C:\opt\cni\bin\flannel.exe`},
		{Name: "kubelet", Destination: `C:\k\kubelet.exe`},
		{Name: "kube-proxy", Destination: `C:\k\kube-proxy.exe`},
	}}
}

func TestItems(t *testing.T) {
	tests := []struct {
		name       string
		registered []string // the services the node has
		changed    []ops.JoinFile
		// wantRestart lists the items restarted; wantShimService is the
		// shim's service.
		wantRestart     []string
		wantShimService string
	}{
		{name: "a fresh node", wantShimService: ""},
		{name: "containerd registered", registered: []string{"Containerd"}, wantShimService: "containerd"},
		{name: "the kubelet's config changed", registered: []string{"containerd"}, changed: []ops.JoinFile{ops.JoinFileKubeletConfig},
			wantRestart: []string{"kubelet"}, wantShimService: "containerd"},
		{name: "every config changed", registered: []string{"containerd"},
			changed:     []ops.JoinFile{ops.JoinFileContainerdConfig, ops.JoinFileKubeletConfig, ops.JoinFileKubeProxyKubeconfig, ops.JoinFileCA},
			wantRestart: []string{"containerd", "kubelet", "kube-proxy"}, wantShimService: "containerd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := joinNode()
			p := newPrepared(k)
			p.registered, p.name = tt.registered, "win-01"
			items := p.items(k.Join, tt.changed)
			var names, restarted, registers []string
			byName := map[string]hotswap.Item{}
			for _, it := range items {
				names = append(names, it.Name)
				byName[it.Name] = it
				if it.Restart {
					restarted = append(restarted, it.Name)
				}
				if it.Register != nil {
					registers = append(registers, it.Name)
				}
			}
			if want := []string{"containerd", "shim", "flannel", "kubelet", "kube-proxy"}; !slices.Equal(names, want) {
				t.Errorf("items %v, want %v (containerd first, kube-proxy last)", names, want)
			}
			if !slices.Equal(restarted, tt.wantRestart) {
				t.Errorf("restarted %v, want %v", restarted, tt.wantRestart)
			}
			if want := []string{"containerd", "kubelet", "kube-proxy"}; !slices.Equal(registers, want) {
				t.Errorf("registered when missing: %v, want %v", registers, want)
			}
			if shim := byName["shim"]; shim.Service != tt.wantShimService || shim.Helper != (tt.wantShimService != "") {
				t.Errorf("shim: service %q, helper %v; want service %q", shim.Service, shim.Helper, tt.wantShimService)
			}
			if hc := byName["containerd"].HealthChecks; len(hc) != 1 || hc[0].NamedPipe != "containerd-containerd" {
				t.Errorf("containerd's health checks %+v, want its pipe", hc)
			}
			if byName["flannel"].Service != "" {
				t.Errorf("flannel feeds service %q, want none", byName["flannel"].Service)
			}
		})
	}
}

func TestInstallsCNI(t *testing.T) {
	k := joinNode()
	if !newPrepared(k).installsCNI() {
		t.Error("flannel.exe goes into C:\\opt\\cni\\bin: want the folder made safe")
	}
	k.Provisioners = slices.DeleteFunc(k.Provisioners, func(p v1alpha1.ProvisionerSpec) bool { return p.Name == "flannel" })
	if newPrepared(k).installsCNI() {
		t.Error("no binary goes into C:\\opt\\cni\\bin")
	}
}

func TestResetRequest(t *testing.T) {
	req := newPrepared(joinNode()).resetRequest()
	var services []string
	for _, s := range req.Services {
		services = append(services, s.Name+"="+s.Binary)
	}
	want := []string{`kube-proxy=C:\k\kube-proxy.exe`, `kubelet=C:\k\kubelet.exe`, `containerd=C:\Program Files\containerd\containerd.exe`}
	if !slices.Equal(services, want) {
		t.Errorf("services %v, want %v (dependents first)", services, want)
	}
	if wantFiles := []string{`C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`, `C:\opt\cni\bin\flannel.exe`}; !slices.Equal(req.Files, wantFiles) {
		t.Errorf("files %v, want %v", req.Files, wantFiles)
	}
}
