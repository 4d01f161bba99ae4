package v1alpha1

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/source"
)

// The services a join registers: the kubelet (required), containerd and
// kube-proxy (each when a provisioner feeds it).
const (
	KubeletService    = "kubelet"
	ContainerdService = "containerd"
	KubeProxyService  = "kube-proxy"
)

// A provisioner's sourceURL release:KIND takes its binary from an
// official release (extension): KIND is one of these, the version field
// says which release, and the destination's file name which binary.
// pkg/source resolves them (source.ReleaseKinds lists the same, and
// ReleaseWins, which only spec.wins takes).
const (
	// ReleaseKubernetes: kubelet.exe, kube-proxy.exe, ... from dl.k8s.io.
	ReleaseKubernetes = "kubernetes"
	// ReleaseContainerd: containerd.exe, containerd-shim-runhcs-v1.exe and
	// ctr.exe from containerd's Windows release archive.
	ReleaseContainerd = "containerd"
	// ReleaseCNI: the CNI plugins (win-bridge.exe, win-overlay.exe,
	// host-local.exe, ...) from their Windows release archive.
	ReleaseCNI = "cni"
	// ReleaseWins: wins.exe from rancher/wins' release (spec.wins only).
	ReleaseWins = "wins"
)

// WinsBridgeRemoved is the first rancher/wins release without the
// named-pipe bridge that swdt wins deploys and verifies.
const WinsBridgeRemoved = "0.16.0"

// ReleaseKinds lists the releases a sourceURL may name.
func ReleaseKinds() []string { return []string{ReleaseKubernetes, ReleaseContainerd, ReleaseCNI} }

// releaseKind returns KIND when s is release:KIND (of any case).
func releaseKind(s string) (string, bool) {
	scheme, kind, ok := strings.Cut(s, ":")
	if !ok || !strings.EqualFold(scheme, "release") {
		return "", false
	}
	return strings.ToLower(kind), true
}

// validateRelease checks a provisioner whose sourceURL is release:KIND.
func validateRelease(pr *ProvisionerSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(ReleaseKinds(), kind) {
		errs = append(errs, field.NotSupported(p.Child("sourceURL"), pr.SourceURL, []string{"release:kubernetes", "release:containerd", "release:cni"}))
		return errs
	}
	v := strings.TrimPrefix(pr.Version, "v")
	switch {
	case v == "" && kind != ReleaseKubernetes:
		errs = append(errs, field.Required(p.Child("version"), fmt.Sprintf("sourceURL release:%s takes the binary of this release, for example %s", kind,
			map[string]string{ReleaseContainerd: "2.1.4", ReleaseCNI: "1.6.2"}[kind])))
	case v != "" && !releaseVersionRE.MatchString(v):
		errs = append(errs, field.Invalid(p.Child("version"), pr.Version, "must be a release version such as 1.2.3 or v1.2.3-rc.1 (letters, digits, '.', '-' and '+')"))
	}
	return errs
}

// releaseVersionRE is a release's version without its leading v.
var releaseVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`)

// JoinKubelet returns the provisioner a join installs the kubelet from:
// the one whose service is kubelet, or nil.
func JoinKubelet(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, KubeletService) }

// JoinContainerd returns the provisioner a join installs containerd
// from, or nil.
func JoinContainerd(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, ContainerdService) }

// JoinKubeProxy returns the provisioner a join installs kube-proxy from,
// or nil.
func JoinKubeProxy(k *KubernetesSpec) *ProvisionerSpec { return provisionerOf(k, KubeProxyService) }

// LogRunnerFile is kube-log-runner's file name: a join runs the kubelet
// and kube-proxy under the provisioner whose destination has it.
const LogRunnerFile = "kube-log-runner.exe"

// JoinLogRunner returns the provisioner of kube-log-runner.exe (from the
// Kubernetes node binaries), under which a join runs the kubelet and
// kube-proxy with their output in a log file, or nil.
func JoinLogRunner(k *KubernetesSpec) *ProvisionerSpec {
	for i := range k.Provisioners {
		pr := &k.Provisioners[i]
		if strings.EqualFold(winpath.Base(pr.Destination), LogRunnerFile) {
			return pr
		}
	}
	return nil
}

// provisionerOf returns the provisioner that feeds service, or nil: the
// one the service runs (not a helper such as containerd's shim) when
// there is one, else the first.
func provisionerOf(k *KubernetesSpec, service string) *ProvisionerSpec {
	var first *ProvisionerSpec
	for i := range k.Provisioners {
		pr := &k.Provisioners[i]
		svc := pr.Service
		if svc == "" {
			svc = pr.Name
		}
		if !strings.EqualFold(svc, service) {
			continue
		}
		if !pr.Helper() {
			return pr
		}
		if first == nil {
			first = pr
		}
	}
	return first
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
	for i := range k.Provisioners {
		if lr := &k.Provisioners[i]; lr == JoinLogRunner(k) && !strings.EqualFold(lr.ServiceName(), KubeletService) {
			errs = append(errs, field.Invalid(p.Root().Child("kubernetes", "provisioners").Index(i).Child("service"), lr.Service,
				"kube-log-runner runs the kubelet (and kube-proxy): set service: kubelet, so that it is swapped while the kubelet is stopped"))
		}
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
	if j.APIServerEndpoint != "" {
		if _, err := APIServerURL(j.APIServerEndpoint); err != nil {
			errs = append(errs, field.Invalid(p.Child("apiServerEndpoint"), j.APIServerEndpoint, err.Error()))
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
	for i, ip := range j.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(p.Child("clusterDNS").Index(i), ip, "must be an IP address, such as 10.96.0.10 (the clusterIP of the cluster's DNS Service)"))
		}
	}
	if j.ClusterDomain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(j.ClusterDomain) {
			errs = append(errs, field.Invalid(p.Child("clusterDomain"), j.ClusterDomain, msg+", such as cluster.local"))
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

// validateWinsRelease checks spec.wins with a sourceURL of release:KIND:
// only release:wins, of a release that still has the named-pipe bridge,
// with a digest in the node file for a release without a checksum file.
func validateWinsRelease(w *WinsSpec, kind string, p *field.Path) field.ErrorList {
	if kind != ReleaseWins {
		return field.ErrorList{field.NotSupported(p.Child("sourceURL"), w.SourceURL, []string{"release:wins"})}
	}
	v := strings.TrimPrefix(w.Version, "v")
	if !releaseVersionRE.MatchString(v) {
		return field.ErrorList{field.Invalid(p.Child("version"), w.Version, "must be a rancher/wins release version such as v0.15.0")}
	}
	sv, err := version.ParseSemantic(v)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p.Child("version"), w.Version, "must be a rancher/wins release version such as v0.15.0")}
	case sv.AtLeast(version.MustParseSemantic(WinsBridgeRemoved)):
		return field.ErrorList{field.Invalid(p.Child("version"), w.Version, fmt.Sprintf(
			"rancher/wins v%s removed the named-pipe bridge that swdt wins deploys and verifies; use %s (the default) or an earlier release", WinsBridgeRemoved, DefaultWinsRelease))}
	case !source.WinsChecksums(v) && w.SHA256 == "":
		return field.ErrorList{field.Required(p.Child("sha256"), fmt.Sprintf("rancher/wins %s publishes no checksum file: give wins.exe's digest", w.Version))}
	}
	return nil
}
