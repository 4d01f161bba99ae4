package join

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

// ContainerdEndpoint is the CRI endpoint of containerd's default pipe.
const ContainerdEndpoint = "npipe:////./pipe/containerd-containerd"

// KubeletConfig is the KubeletConfiguration a join writes: what kubeadm
// writes for a Windows node (client CA, webhook authentication and
// authorization, no cgroups or node-allocatable enforcement, no
// resolv.conf) plus the node file's taints.
func KubeletConfig(js *v1alpha1.JoinSpec) ([]byte, error) {
	no, yes, empty := false, true, ""
	kc := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kubeletv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: ops.JoinCAFile},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &yes},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &no},
		},
		Authorization:          kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		CgroupsPerQOS:          &no,
		EnforceNodeAllocatable: []string{},
		ResolverConfig:         &empty,
		RotateCertificates:     true,
		ClusterDomain:          "cluster.local",
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

// Registration is the kubelet service a join registers: the binary with
// the flags kubeadm's kubeadm-flags.env and the Windows service need, then
// the node file's own register args (they come last, so they win).
func Registration(js *v1alpha1.JoinSpec, kubelet *v1alpha1.ProvisionerSpec, nodeName string) ops.ServiceRegisterRequest {
	svc := kubelet.Service
	if svc == "" {
		svc = kubelet.Name
	}
	args := []string{
		"--windows-service",
		"--bootstrap-kubeconfig=" + ops.JoinBootstrapKubeconfig,
		"--kubeconfig=" + ops.JoinKubeconfig,
		"--config=" + ops.JoinKubeletConfig,
		"--cert-dir=" + ops.JoinCertDir,
		"--hostname-override=" + nodeName,
		"--container-runtime-endpoint=" + ContainerdEndpoint,
	}
	if len(js.Labels) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(js.Labels)) {
			kv = append(kv, k+"="+js.Labels[k])
		}
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	req := ops.ServiceRegisterRequest{Name: svc, Program: kubelet.Destination, Args: args,
		DisplayName: "kubelet", Description: "Kubernetes node agent (registered by swdt join)", StartType: "Automatic"}
	if r := kubelet.Register; r != nil {
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
		req.DependsOn = r.DependsOn
	}
	return req
}
