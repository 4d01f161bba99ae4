package v1alpha1

import (
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The services a join registers: the kubelet (required), containerd and
// kube-proxy (each when a provisioner feeds it).
const (
	KubeletService    = "kubelet"
	ContainerdService = "containerd"
	KubeProxyService  = "kube-proxy"
)

// JoinKubelet returns the provisioner a join installs the kubelet from:
// the one whose service is kubelet, or nil.
func JoinKubelet(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, KubeletService) }

// JoinContainerd returns the provisioner a join installs containerd
// from, or nil.
func JoinContainerd(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, ContainerdService) }

// JoinKubeProxy returns the provisioner a join installs kube-proxy from,
// or nil.
func JoinKubeProxy(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, KubeProxyService) }

// provisionerOf returns the provisioner that feeds service, or nil.
func provisionerOf(k *KubernetesSpec, service string) *ProvisionerSpec {
	for i := range k.Provisioners {
		pr := &k.Provisioners[i]
		svc := pr.Service
		if svc == "" {
			svc = pr.Name
		}
		if strings.EqualFold(svc, service) {
			return pr
		}
	}
	return nil
}

// criSocketProblem says what is wrong with a CRI endpoint for a Windows
// kubelet, or "".
func criSocketProblem(endpoint string) string {
	u, err := url.Parse(endpoint)
	switch {
	case hasControl(endpoint) || err != nil:
		return "must be a URL such as npipe:////./pipe/containerd-containerd or tcp://10.0.0.5:3735"
	case u.Scheme == "npipe" && strings.HasPrefix(u.Path, "//./pipe/") && len(u.Path) > len("//./pipe/"):
		return ""
	case u.Scheme == "tcp" && u.Port() != "" && u.Hostname() != "" && (u.Path == "" || u.Path == "/"):
		return ""
	}
	return "the kubelet for Windows reaches its runtime by a named pipe (npipe:////./pipe/NAME) or TCP (tcp://HOST:PORT)"
}

func validateJoin(k *KubernetesSpec, p *field.Path) field.ErrorList {
	j := k.Join
	var errs field.ErrorList
	if JoinKubelet(k) == nil {
		errs = append(errs, field.Required(p.Root().Child("kubernetes", "provisioners"),
			"a join installs the kubelet: add a provisioner named kubelet with its sourceURL and destination (for example C:\\k\\kubelet.exe)"))
	}
	if hasControl(j.Kubeconfig) {
		errs = append(errs, field.Invalid(p.Child("kubeconfig"), j.Kubeconfig, "must not contain control characters"))
	}
	if j.ContainerdConfig != "" && JoinContainerd(k) == nil {
		errs = append(errs, field.Invalid(p.Child("containerdConfig"), j.ContainerdConfig, "applies to containerd, and no provisioner feeds the containerd service"))
	}
	if j.CRISocket != "" {
		if msg := criSocketProblem(j.CRISocket); msg != "" {
			errs = append(errs, field.Invalid(p.Child("criSocket"), j.CRISocket, msg))
		}
	}
	if hasControl(j.Context) {
		errs = append(errs, field.Invalid(p.Child("context"), j.Context, "must not contain control characters"))
	}
	if j.NodeName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(j.NodeName) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), j.NodeName, msg))
		}
	}
	for key, value := range j.Labels {
		lp := p.Child("labels").Key(key)
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(lp, key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(value) {
			errs = append(errs, field.Invalid(lp, value, msg))
		}
	}
	for i, t := range j.Taints {
		if _, err := ParseTaint(t); err != nil {
			errs = append(errs, field.Invalid(p.Child("taints").Index(i), t, err.Error()))
		}
	}
	if j.Timeout != nil && j.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), j.Timeout.Duration.String(), "must be positive, for example 3m"))
	}
	return errs
}

// ParseTaint reads key[=value]:Effect, as kubectl taint writes it.
func ParseTaint(s string) (corev1.Taint, error) {
	var t corev1.Taint
	spec, effect, ok := strings.Cut(s, ":")
	if !ok {
		return t, errString("must be key[=value]:Effect, for example os=windows:NoSchedule")
	}
	t.Key, t.Value, _ = strings.Cut(spec, "=")
	t.Effect = corev1.TaintEffect(effect)
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return t, errString("the effect must be NoSchedule, PreferNoSchedule or NoExecute")
	}
	if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
		return t, errString("key: " + strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
		return t, errString("value: " + strings.Join(msgs, "; "))
	}
	return t, nil
}

type errString string

func (e errString) Error() string { return string(e) }
