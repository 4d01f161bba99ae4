package join

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/ops"
)

// ContainerdEndpoint is the CRI endpoint of containerd's default pipe.
const ContainerdEndpoint = "npipe:////./pipe/containerd-containerd"

// KubeletConfig is the KubeletConfiguration a join writes: what kubeadm
// writes for a Windows node (client CA, webhook authentication and
// authorization, no cgroups or node-allocatable enforcement, no
// resolv.conf, the cluster's DNS servers and domain) plus the node file's
// taints.
func KubeletConfig(js *v1alpha1.JoinSpec, dns cluster.DNS) ([]byte, error) {
	no, yes, empty := false, true, ""
	kc := kubeletConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Authentication: kubeletAuthentication{
			X509:      kubeletX509{ClientCAFile: ops.JoinCAFile},
			Webhook:   kubeletEnabled{Enabled: &yes},
			Anonymous: kubeletEnabled{Enabled: &no},
		},
		Authorization:      kubeletAuthorization{Mode: "Webhook"},
		CgroupsPerQOS:      &no,
		ResolverConfig:     &empty,
		RotateCertificates: true,
		ClusterDNS:         dns.Servers,
		ClusterDomain:      dns.Domain,
	}
	for _, t := range js.Taints {
		taint, err := v1alpha1.ParseTaint(t)
		if err != nil {
			return nil, err
		}
		kc.RegisterWithTaints = append(kc.RegisterWithTaints, corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: taint.Effect})
	}
	return yaml.Marshal(kc)
}

// kubeletConfig is the part of the kubelet's KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) that a join sets, with the upstream
// field names; the kubelet defaults the rest. The upstream type
// (k8s.io/kubelet/config/v1beta1) would bring the component-base metrics
// registry into swdt, whose init costs every swdt command about 5 ms;
// TestKubeletConfig decodes this file strictly with that type.
type kubeletConfig struct {
	metav1.TypeMeta    `json:",inline"`
	Authentication     kubeletAuthentication `json:"authentication"`
	Authorization      kubeletAuthorization  `json:"authorization"`
	CgroupsPerQOS      *bool                 `json:"cgroupsPerQOS"`
	ClusterDNS         []string              `json:"clusterDNS,omitempty"`
	ClusterDomain      string                `json:"clusterDomain"`
	RegisterWithTaints []corev1.Taint        `json:"registerWithTaints,omitempty"`
	ResolverConfig     *string               `json:"resolvConf"`
	RotateCertificates bool                  `json:"rotateCertificates"`
}

type kubeletAuthentication struct {
	X509      kubeletX509    `json:"x509"`
	Webhook   kubeletEnabled `json:"webhook"`
	Anonymous kubeletEnabled `json:"anonymous"`
}

type kubeletX509 struct {
	ClientCAFile string `json:"clientCAFile"`
}

type kubeletEnabled struct {
	Enabled *bool `json:"enabled"`
}

type kubeletAuthorization struct {
	Mode string `json:"mode"`
}

// ContainerdConfig is containerd's config.toml for a Windows node, as
// Install-Containerd.ps1 makes it: the default pipe, the CRI plugin with
// the windows snapshotter and the runhcs process-isolation runtime, the
// CNI directories and the pause image.
func ContainerdConfig() []byte {
	return []byte(`version = 2
root = "C:\\ProgramData\\containerd\\root"
state = "C:\\ProgramData\\containerd\\state"

[grpc]
  address = "\\\\.\\pipe\\containerd-containerd"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "windows"
    default_runtime_name = "runhcs-wcow-process"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runhcs-wcow-process]
      runtime_type = "io.containerd.runhcs.v1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "C:\\opt\\cni\\bin"
    conf_dir = "C:\\etc\\cni\\net.d"
`)
}

// ContainerdRegistration is the containerd service a join registers: what
// `containerd.exe --register-service --log-file ...` creates (the binary
// with --run-service, its config and its log file), then the node file's
// register args.
func ContainerdRegistration(containerd *v1alpha1.ProvisionerSpec) ops.ServiceRegisterRequest {
	req := ops.ServiceRegisterRequest{Name: serviceOf(containerd), Program: containerd.Destination,
		Args:        []string{"--run-service", "--config", ops.JoinContainerdConfig, "--log-file", ops.JoinContainerdLog},
		DisplayName: "containerd", Description: "Container runtime (registered by swdt join)", StartType: "Automatic"}
	return withRegister(req, containerd.Register)
}

// KubeProxyRegistration is the kube-proxy service a join registers when
// a provisioner feeds it: the binary with --windows-service, its
// kubeconfig (a ServiceAccount token), the Node's name and the Windows
// kernel proxier, then the node file's register args (a CNI's
// --network-name or --source-vip, for example). It depends on the
// kubelet.
func KubeProxyRegistration(kubeProxy, kubelet *v1alpha1.ProvisionerSpec, nodeName string) ops.ServiceRegisterRequest {
	req := ops.ServiceRegisterRequest{Name: serviceOf(kubeProxy), Program: kubeProxy.Destination,
		Args: []string{"--windows-service", "--kubeconfig=" + ops.JoinKubeProxyKubeconfig,
			"--hostname-override=" + nodeName, "--proxy-mode=kernelspace"},
		DisplayName: "kube-proxy", Description: "Kubernetes network proxy (registered by swdt join)", StartType: "Automatic",
		DependsOn: []string{serviceOf(kubelet)}}
	return withRegister(req, kubeProxy.Register)
}

// serviceOf is the service a provisioner feeds.
func serviceOf(p *v1alpha1.ProvisionerSpec) string {
	if p.Service != "" {
		return p.Service
	}
	return p.Name
}

// withRegister applies the node file's register section to req: its args
// come last (so they win), its other fields replace req's.
func withRegister(req ops.ServiceRegisterRequest, r *v1alpha1.ServiceRegistration) ops.ServiceRegisterRequest {
	if r == nil {
		return req
	}
	req.Args = append(req.Args, r.Args...)
	if r.DisplayName != "" {
		req.DisplayName = r.DisplayName
	}
	if r.Description != "" {
		req.Description = r.Description
	}
	if r.StartType != "" {
		req.StartType = r.StartType
	}
	if len(r.DependsOn) > 0 {
		req.DependsOn = r.DependsOn
	}
	return req
}

// Registration is the kubelet service a join registers: the binary with
// the flags kubeadm's kubeadm-flags.env and the Windows service need
// (the node-allocatable ones as sig-windows-tools' PrepareNode.ps1), then
// the node file's own register args (they come last, so they win).
// Its runtime is spec.kubernetes.join.criSocket, else containerd's pipe.
// With containerd (a provisioner feeds it) the kubelet depends on it.
func Registration(js *v1alpha1.JoinSpec, kubelet, containerd *v1alpha1.ProvisionerSpec, nodeName string) ops.ServiceRegisterRequest {
	endpoint := ContainerdEndpoint
	if js.CRISocket != "" {
		endpoint = js.CRISocket
	}
	args := []string{
		"--windows-service",
		"--bootstrap-kubeconfig=" + ops.JoinBootstrapKubeconfig,
		"--kubeconfig=" + ops.JoinKubeconfig,
		"--config=" + ops.JoinKubeletConfig,
		"--cert-dir=" + ops.JoinCertDir,
		"--hostname-override=" + nodeName,
		"--container-runtime-endpoint=" + endpoint,
		// What kubeadm's flags for Windows add: a configuration file
		// cannot turn node-allocatable enforcement off (an empty list
		// is omitted, then defaulted to pods, which needs cgroups).
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=",
	}
	if len(js.Labels) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(js.Labels)) {
			kv = append(kv, k+"="+js.Labels[k])
		}
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	req := ops.ServiceRegisterRequest{Name: serviceOf(kubelet), Program: kubelet.Destination, Args: args,
		DisplayName: "kubelet", Description: "Kubernetes node agent (registered by swdt join)", StartType: "Automatic"}
	if containerd != nil {
		req.DependsOn = []string{serviceOf(containerd)}
	}
	return withRegister(req, kubelet.Register)
}
