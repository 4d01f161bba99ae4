package join

import (
	"slices"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/ops"
)

func TestKubeletConfig(t *testing.T) {
	raw, err := KubeletConfig(&v1alpha1.JoinSpec{Taints: []string{"os=windows:NoSchedule", "gpu:NoExecute"}},
		cluster.DNS{Servers: []string{"10.96.0.10", "fd00::a"}, Domain: "corp.local"})
	if err != nil {
		t.Fatal(err)
	}
	var kc kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(raw, &kc); err != nil {
		t.Fatalf("not a strict KubeletConfiguration: %v\n%s", err, raw)
	}
	if kc.Kind != "KubeletConfiguration" || kc.APIVersion != "kubelet.config.k8s.io/v1beta1" ||
		kc.Authentication.X509.ClientCAFile != ops.JoinCAFile || kc.CgroupsPerQOS == nil || *kc.CgroupsPerQOS ||
		kc.ResolverConfig == nil || *kc.ResolverConfig != "" || len(kc.RegisterWithTaints) != 2 ||
		kc.RegisterWithTaints[1].Key != "gpu" || kc.RegisterWithTaints[1].Value != "" ||
		kc.RegisterWithTaints[0].Effect != "NoSchedule" || kc.Authentication.Webhook.Enabled == nil || !*kc.Authentication.Webhook.Enabled ||
		kc.Authentication.Anonymous.Enabled == nil || *kc.Authentication.Anonymous.Enabled ||
		kc.Authorization.Mode != kubeletv1beta1.KubeletAuthorizationModeWebhook || !kc.RotateCertificates || kc.ClusterDomain != "corp.local" ||
		!slices.Equal(kc.ClusterDNS, []string{"10.96.0.10", "fd00::a"}) {
		t.Errorf("config:\n%s", raw)
	}
}

func TestRegistration(t *testing.T) {
	js := &v1alpha1.JoinSpec{Labels: map[string]string{"b": "2", "a": "1"}}
	for _, tc := range []struct {
		name     string
		kubelet  v1alpha1.ProvisionerSpec
		wantTail []string
		wantDeps []string
	}{
		{name: "join flags only", kubelet: v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`},
			wantTail: []string{"--node-labels=a=1,b=2"}},
		{name: "the node file's register args come last", kubelet: v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`,
			Register: &v1alpha1.ServiceRegistration{Args: []string{"--v=4"}, DependsOn: []string{"containerd"}}},
			wantTail: []string{"--node-labels=a=1,b=2", "--v=4"}, wantDeps: []string{"containerd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := Registration(js, &tc.kubelet, nil, "win-01")
			if req.Name != "kubelet" || req.Program != `C:\k\kubelet.exe` || req.StartType != "Automatic" || !slices.Equal(req.DependsOn, tc.wantDeps) {
				t.Errorf("request = %+v", req)
			}
			if req.Args[0] != "--windows-service" || !slices.Contains(req.Args, "--hostname-override=win-01") ||
				!slices.Contains(req.Args, "--cgroups-per-qos=false") || !slices.Contains(req.Args, "--enforce-node-allocatable=") ||
				!slices.Equal(req.Args[len(req.Args)-len(tc.wantTail):], tc.wantTail) {
				t.Errorf("args = %s", strings.Join(req.Args, " "))
			}
		})
	}
}

func TestRegistrationRuntimeEndpoint(t *testing.T) {
	kubelet := &v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`}
	for _, tc := range []struct{ criSocket, want string }{
		{"", "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd"},
		{"tcp://127.0.0.1:3735", "--container-runtime-endpoint=tcp://127.0.0.1:3735"},
	} {
		if args := Registration(&v1alpha1.JoinSpec{CRISocket: tc.criSocket}, kubelet, nil, "n").Args; !slices.Contains(args, tc.want) {
			t.Errorf("criSocket %q: args %s, want %s", tc.criSocket, strings.Join(args, " "), tc.want)
		}
	}
}

func TestContainerdRegistrationAndKubeletDependency(t *testing.T) {
	containerd := &v1alpha1.ProvisionerSpec{Name: "containerd", Destination: `C:\Program Files\containerd\containerd.exe`}
	req := ContainerdRegistration(containerd)
	if req.Name != "containerd" || !slices.Equal(req.Args, []string{"--run-service", "--config", ops.JoinContainerdConfig, "--log-file", ops.JoinContainerdLog}) {
		t.Errorf("containerd = %+v", req)
	}
	kubelet := &v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`}
	if got := Registration(&v1alpha1.JoinSpec{}, kubelet, containerd, "n").DependsOn; !slices.Equal(got, []string{"containerd"}) {
		t.Errorf("kubelet depends on %v, want containerd", got)
	}
	if !strings.Contains(string(ContainerdConfig()), `address = "\\\\.\\pipe\\containerd-containerd"`) {
		t.Errorf("config:\n%s", ContainerdConfig())
	}
}
