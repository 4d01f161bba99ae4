package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Node describes one Windows node that swdt drives over SSH: how to reach
// it, how to bootstrap it, which binaries to hot-swap into its services and
// how to deploy rancher/wins on it.
//
// A file written for the SIG Windows dev-tools experiment loads unchanged;
// fields marked "extension" are swdt additions.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Node struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata of the node: only metadata.name, which names the node in
	// output (see ObjectMetaFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the node.
	Spec NodeSpec `json:"spec"`
}

// ObjectMetaFields are the fields of a Node's metadata that a node file may
// set: swdt reads metadata.name only. Any other (namespace, labels,
// annotations, ...) is refused by the loader rather than silently ignored.
func ObjectMetaFields() []string { return []string{"name"} }

// NodeList holds several nodes, so that one file can drive a fleet.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NodeList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata of the list: swdt reads none, so a node file may set no
	// field of it (an empty metadata is accepted).
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the nodes.
	Items []Node `json:"items"`
}

// NodeSpec is the desired state of a node.
type NodeSpec struct {
	// Credentials say how to reach the node over SSH.
	Credentials CredentialsSpec `json:"credentials"`

	// Setup is what `swdt setup` ensures: RDP, Chocolatey packages and SSH keys.
	// +optional
	Setup SetupSpec `json:"setup,omitempty"`

	// Kubernetes lists the binaries `swdt kubernetes` hot-swaps into services.
	// +optional
	Kubernetes KubernetesSpec `json:"kubernetes,omitempty"`

	// Wins is what `swdt wins` deploys (extension).
	// +optional
	Wins *WinsSpec `json:"wins,omitempty"`

	// VM is the virtual machine that runs the node and the hypervisor
	// that runs it, for `swdt vm` and for finding the node's address when
	// credentials.hostname is empty (extension).
	// +optional
	VM *VMSpec `json:"vm,omitempty"`
}

// NoService as a provisioner's service says that its binary feeds no
// service: a plain file push.
const NoService = "None"

// HostKeyPolicy says how an SSH host key is checked against known_hosts.
type HostKeyPolicy string

const (
	// HostKeyPolicyStrict refuses hosts that are unknown or whose key changed.
	HostKeyPolicyStrict HostKeyPolicy = "strict"
	// HostKeyPolicyAcceptNew records unknown hosts and refuses changed keys.
	HostKeyPolicyAcceptNew HostKeyPolicy = "accept-new"
	// HostKeyPolicyInsecure accepts any key. It must be asked for explicitly
	// and prints a warning on every connection.
	HostKeyPolicyInsecure HostKeyPolicy = "insecure"
)

// CredentialsSpec says how to reach a node over SSH.
type CredentialsSpec struct {
	// Hostname is host[:port] (port 22 when omitted), an IPv6 address in
	// brackets ([fe80::1]:22), or a Host alias from ~/.ssh/config. It may
	// be empty when spec.vm is set: swdt then asks the hypervisor for the
	// VM's address and waits until SSH answers there.
	Hostname string `json:"hostname"`

	// Username is the account to log in as; it must be a member of
	// Administrators for setup, kubernetes and wins. When empty, the User
	// from ~/.ssh/config is used.
	// +optional
	Username string `json:"username,omitempty"`

	// PrivateKey is the path of a private key file. `~` and relative paths
	// resolve against the config file's directory. A passphrase is read from
	// SWDT_KEY_PASSPHRASE or prompted for on a terminal. ssh-agent
	// (SSH_AUTH_SOCK) is tried as well.
	// +optional
	PrivateKey string `json:"privateKey,omitempty"`

	// Password is accepted for compatibility with the original schema. Prefer
	// PasswordEnv: a password in a file ends up in backups and shell history.
	// +optional
	Password string `json:"password,omitempty"`

	// PasswordEnv names an environment variable that holds the password
	// (extension). When it is unset or empty, the private keys and
	// ssh-agent are used alone (with a warning); that is an error only when
	// there are none.
	// +optional
	PasswordEnv string `json:"passwordEnv,omitempty"`

	// KnownHostsFile is where host keys are checked and recorded
	// (extension). When empty: the UserKnownHostsFile of ~/.ssh/config for
	// the host, else ~/.ssh/known_hosts. It applies to jump hosts too.
	// +optional
	KnownHostsFile string `json:"knownHostsFile,omitempty"`

	// HostKeyPolicy is one of strict, accept-new or insecure (extension).
	// When empty: the StrictHostKeyChecking of ~/.ssh/config for the host,
	// else accept-new. It applies to jump hosts too.
	// +optional
	HostKeyPolicy HostKeyPolicy `json:"hostKeyPolicy,omitempty"`
}

// SetupSpec is what `swdt setup` ensures on a node.
type SetupSpec struct {
	// EnableRDP turns Remote Desktop and its firewall rules on (true, the
	// default) or off (false).
	// +optional
	EnableRDP *bool `json:"enableRDP,omitempty"`

	// ChocoPackages are Chocolatey package ids to install when missing.
	// Chocolatey itself is installed first when absent.
	// +optional
	ChocoPackages []string `json:"chocoPackages,omitempty"`

	// AuthorizedKeys are public key files (OpenSSH format) appended to
	// C:\ProgramData\ssh\administrators_authorized_keys when missing
	// (extension).
	// +optional
	AuthorizedKeys []string `json:"authorizedKeys,omitempty"`
}

// KubernetesSpec lists the binaries to hot-swap.
type KubernetesSpec struct {
	// Provisioners are binaries, each feeding one Windows service.
	// +optional
	Provisioners []ProvisionerSpec `json:"provisioners,omitempty"`
	// Join makes the node a worker of a cluster (swdt join): its
	// kubelet provisioner's binary is installed and registered as a
	// service that joins the cluster this section names. Extension.
	// +optional
	Join *JoinSpec `json:"join,omitempty"`
	// Rollout makes the file a template for many Nodes of a cluster
	// (swdt rollout): its provisioners are swapped on every Node the
	// selector picks, a few at a time, each gated by the cluster.
	// Extension.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`
}

// Transport says how swdt reaches each Node of a rollout.
type Transport string

const (
	// TransportKubernetes reaches each Node through the Kubernetes API: a
	// HostProcess pod on the Node and pods/exec. It needs only the
	// kubeconfig, no SSH.
	TransportKubernetes Transport = "Kubernetes"
	// TransportSSH reaches each Node over SSH, with spec.credentials, at
	// the address the cluster reports for it.
	TransportSSH Transport = "SSH"
)

// RolloutSpec says which Nodes of a cluster a rollout swaps, how many at
// once, how it reaches them, and what it does around each swap
// (docs/rollout.md).
type RolloutSpec struct {
	// Kubeconfig is the cluster's kubeconfig on this machine. Default:
	// $KUBECONFIG, else ~/.kube/config.
	// +optional
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context. Default: its current context.
	// +optional
	Context string `json:"context,omitempty"`
	// Selector picks the Nodes to roll, by their labels; Nodes whose
	// kubernetes.io/os is not windows are never picked. Default: every
	// Windows Node (kubernetes.io/os=windows).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Provisioners names the provisioners of spec.kubernetes.provisioners
	// the rollout swaps. Default: all of them.
	// +optional
	Provisioners []string `json:"provisioners,omitempty"`
	// MaxUnavailable is how many Nodes are swapped at once: a number, or
	// a percentage of the selected Nodes (rounded down, at least 1).
	// Default: 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Drain, when set, cordons each Node and evicts its pods (respecting
	// PodDisruptionBudgets) before its swap, and uncordons it after.
	// +optional
	Drain *DrainSpec `json:"drain,omitempty"`
	// Timeout bounds the cluster's check of each Node after its swap:
	// the new kubeletVersion, a Lease renewal, Ready as before.
	// Default: 1m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Transport is how each Node is reached: Kubernetes (through the API
	// server: a HostProcess pod and pods/exec; spec.credentials must be
	// empty) or SSH (spec.credentials, at the address the cluster
	// reports for the Node). Default: Kubernetes.
	// +optional
	Transport Transport `json:"transport,omitempty"`
	// Image is the HostProcess pod's image, with the Kubernetes
	// transport only: a copy of the upstream HostProcess base image for
	// clusters that pull from their own registry. Default:
	// mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0.
	// +optional
	Image string `json:"image,omitempty"`
}

// DrainSpec says how a Node is drained before its swap.
type DrainSpec struct {
	// Timeout bounds the drain of one Node: evictions a
	// PodDisruptionBudget refuses are retried until then, and the
	// rollout stops when a pod is still there. Default: 5m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// GracePeriodSeconds overrides each evicted pod's termination grace
	// period. Default: the pod's own.
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
}

// JoinSpec names the cluster a node joins and how it appears there.
type JoinSpec struct {
	// Kubeconfig is the control plane's kubeconfig on this machine, whose
	// user may create bootstrap tokens. Default: $KUBECONFIG, else
	// ~/.kube/config.
	// +optional
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context. Default: its current context.
	// +optional
	Context string `json:"context,omitempty"`
	// APIServerEndpoint is the API server's address as the node reaches
	// it, host:port or https://host:port: what the bootstrap kubeconfig
	// and kube-proxy's name (kubeadm join's discovery apiServerEndpoint).
	// Default: the server of kube-public/cluster-info when the cluster
	// has one (as kubeadm join reads it), else the kubeconfig's server.
	// Its certificate must be valid for that host.
	// +optional
	APIServerEndpoint string `json:"apiServerEndpoint,omitempty"`
	// NodeName is the Node's name. Default: the node's host name in
	// lower case.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Labels are added to the Node when it registers (the kubelet's
	// --node-labels); kubernetes.io/os=windows is the kubelet's own.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are set when the Node registers, as key[=value]:Effect
	// (the kubelet's registerWithTaints).
	// +optional
	Taints []string `json:"taints,omitempty"`
	// CRISocket is the kubelet's container runtime endpoint (kubeadm's
	// nodeRegistration.criSocket): an npipe:// pipe on the node, or a
	// tcp:// address the node reaches. Default: containerd's pipe,
	// npipe:////./pipe/containerd-containerd.
	// +optional
	CRISocket string `json:"criSocket,omitempty"`
	// ContainerdConfig is a local config.toml for containerd, used instead
	// of the one swdt generates for Windows (CRI plugin, CNI directories,
	// sandbox image). It applies when a provisioner feeds the containerd
	// service.
	// +optional
	ContainerdConfig string `json:"containerdConfig,omitempty"`
	// Timeout bounds the wait for the Node to register. Default: 3m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// ClusterDNS are the IP addresses of the cluster's DNS service, which
	// the kubelet gives pods as their name servers (KubeletConfiguration
	// clusterDNS). Default: what kubeadm join takes, the clusterDNS of
	// the kube-system/kubelet-config ConfigMap, else the clusterIP of the
	// kube-system/kube-dns Service.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ClusterDomain is the cluster's DNS domain, which the kubelet adds to
	// pods' search paths (KubeletConfiguration clusterDomain). Default:
	// the clusterDomain of the kube-system/kubelet-config ConfigMap, else
	// cluster.local.
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// ProvisionerSpec is one binary that feeds one Windows service.
type ProvisionerSpec struct {
	// Name is the provisioner's name in output, and the Windows service
	// it feeds unless service says otherwise (for example containerd,
	// kubelet, kube-proxy).
	Name string `json:"name"`

	// Service is the Windows service the binary feeds (default: name).
	// Several provisioners may name one service, such as containerd.exe
	// and its shim containerd-shim-runhcs-v1.exe for containerd: they
	// are swapped in one stop and start. None (as Kubernetes' clusterIP:
	// None) means the binary feeds no service, as a CNI plugin: it is
	// staged, verified and renamed into place, and nothing is stopped or
	// started.
	// +optional
	Service string `json:"service,omitempty"`

	// Version is shown in plans and summaries. With a release:KIND
	// sourceURL it says which release the binary comes from (extension);
	// for release:kubernetes swdt join defaults it to the control
	// plane's version.
	// +optional
	Version string `json:"version,omitempty"`

	// SourceURL is where the binary comes from: a local path (`~` and
	// relative paths resolve against the config file's directory), a
	// file:// URL, or an http(s):// URL downloaded into swdt's cache.
	// Extensions: a .tar.gz or .tgz archive (local or downloaded) gives
	// its member named as the destination's file, in bin/ or at its
	// top; release:kubernetes, release:containerd and release:cni take
	// the binary of that official release (version), verified against
	// the release's checksum file (docs/join.md).
	SourceURL string `json:"sourceURL"`

	// Destination is the absolute Windows path the service runs the binary
	// from, for example C:\k\kubelet.exe.
	Destination string `json:"destination"`

	// Overwrite replaces the destination even when it already holds the same
	// bytes (as --force does for every provisioner).
	// +optional
	Overwrite bool `json:"overwrite,omitempty"`

	// SHA256 is the expected hex SHA-256 digest of the source (of the
	// archive, for an archive; for a release it must agree with the
	// release's checksum file); a mismatch stops the run before the node
	// is touched (extension).
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// HealthChecks (healthCheck in YAML: one check, or a list of them) must
	// all pass after the service starts, or the swap is rolled back
	// (extension).
	// +optional
	HealthChecks []HealthCheck `json:"healthCheck,omitempty"`

	// Register, when set, registers the service when the node does not
	// have it yet: the binary is put in place, the service is created to
	// run it (destination) with these arguments and started, and it must
	// stay Running for the settle time and pass its health checks, as for
	// csi-proxy or a CNI daemon that no installer set up. A service that
	// exists is swapped as usual (extension).
	// +optional
	Register *ServiceRegistration `json:"register,omitempty"`
}

// ServiceRegistration is how a provisioner's service is created when it is
// missing (extension).
type ServiceRegistration struct {
	// Args are the arguments the service passes to the binary, one element
	// each, never through a shell.
	// +optional
	Args []string `json:"args,omitempty"`

	// DisplayName is shown in the Services console (default: the service
	// name).
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Description is the service's description.
	// +optional
	Description string `json:"description,omitempty"`

	// StartType is Automatic (the default) or Manual.
	// +optional
	StartType string `json:"startType,omitempty"`

	// DependsOn lists services that must run before this one.
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`

	// Replace lets a run take flags and dependencies away from a service
	// that exists: args and dependsOn are the whole lists, and without it
	// a run that would drop a flag the service runs with (by its name:
	// --v=2 to --v=4 drops none) or a dependency is refused, with the
	// difference (as is --force).
	// +optional
	Replace bool `json:"replace,omitempty"`
}

// HealthCheck is one check run on the node after a service starts. Exactly
// one of its fields is set.
type HealthCheck struct {
	// NamedPipe must exist, for example containerd-containerd
	// (\\.\pipe\containerd-containerd).
	// +optional
	NamedPipe string `json:"namedPipe,omitempty"`

	// TCPPort must be listening on the node.
	// +optional
	TCPPort int32 `json:"tcpPort,omitempty"`

	// Command is an executable and its arguments that must exit 0, for
	// example ["C:\\k\\kubelet.exe", "--version"]. It is run directly, never
	// through a shell.
	// +optional
	Command []string `json:"command,omitempty"`
}

// WinsSpec is what `swdt wins` deploys (extension).
type WinsSpec struct {
	// SourceURL is where wins.exe comes from (as a provisioner's
	// sourceURL), or release:wins for rancher/wins' official release of
	// Version.
	SourceURL string `json:"sourceURL"`

	// Version is the rancher/wins release a release:wins sourceURL takes
	// (default DefaultWinsRelease, the last with the named-pipe bridge).
	// +optional
	Version string `json:"version,omitempty"`

	// Destination is where wins.exe is placed
	// (default C:\etc\rancher\wins\wins.exe). The config file is written
	// beside it as `config`.
	// +optional
	Destination string `json:"destination,omitempty"`

	// SHA256 is the expected hex SHA-256 digest of the source.
	// +optional
	SHA256 string `json:"sha256,omitempty"`

	// WhiteList limits what wins lets containers run on the host.
	// +optional
	WhiteList WinsWhiteList `json:"whiteList,omitempty"`
}

// WinsWhiteList is wins' white_list configuration.
type WinsWhiteList struct {
	// ProcessPaths are absolute Windows paths of host executables that
	// `wins cli prc run` may start.
	// +optional
	ProcessPaths []string `json:"processPaths,omitempty"`

	// ProxyPorts are host TCP ports that wins' proxy may forward to.
	// +optional
	ProxyPorts []int32 `json:"proxyPorts,omitempty"`
}

// VMProvider names the hypervisor that runs a node's VM.
type VMProvider string

const (
	// VMProviderLibvirt is libvirt (KVM/QEMU on Linux), reached through
	// libvirtd's RPC protocol.
	VMProviderLibvirt VMProvider = "libvirt"
	// VMProviderHyperV is Microsoft Hyper-V, driven through its
	// PowerShell module on the Hyper-V host.
	VMProviderHyperV VMProvider = "hyperv"
)

// VMSpec is the virtual machine behind a node (extension).
type VMSpec struct {
	// Provider is the hypervisor: libvirt or hyperv.
	Provider VMProvider `json:"provider"`

	// Name is the VM's name as the hypervisor knows it: the libvirt
	// domain name or the Hyper-V VM name (default: metadata.name).
	// +optional
	Name string `json:"name,omitempty"`

	// Libvirt says how to reach libvirtd; only with provider libvirt.
	// +optional
	Libvirt *LibvirtSpec `json:"libvirt,omitempty"`

	// HyperV says where Hyper-V runs; only with provider hyperv.
	// +optional
	HyperV *HyperVSpec `json:"hyperv,omitempty"`

	// AddressTimeout bounds how long swdt waits for a running VM to
	// report an address on which SSH answers, when credentials.hostname
	// is empty (default 3m).
	// +optional
	AddressTimeout *metav1.Duration `json:"addressTimeout,omitempty"`
}

// LibvirtSpec says how to reach libvirtd.
type LibvirtSpec struct {
	// URI is the libvirt connection URI (default qemu:///system), for
	// example qemu:///session or qemu+ssh://user@host/system. The unix
	// transport (the default, with an optional ?socket=PATH) and ssh are
	// supported; ssh uses swdt's SSH client, ~/.ssh/config and the node's
	// knownHostsFile and hostKeyPolicy.
	// +optional
	URI string `json:"uri,omitempty"`
}

// HyperVSpec says where Hyper-V runs.
type HyperVSpec struct {
	// Host is the Windows Hyper-V host, reached over SSH:
	// [user@]host[:port] or a Host alias from ~/.ssh/config. Empty means
	// this machine, which works only when swdt runs on Windows. The user
	// must be allowed to manage Hyper-V (Hyper-V Administrators or
	// Administrators).
	// +optional
	Host string `json:"host,omitempty"`
}

// ServiceName is the Windows service the provisioner's binary feeds; "" when
// its service is None (a plain file push).
func (p ProvisionerSpec) ServiceName() string {
	if strings.EqualFold(p.Service, NoService) {
		return ""
	}
	if p.Service != "" {
		return p.Service
	}
	return p.Name
}

// Helper reports whether the binary is one its service uses but does not
// run as its program (service names another service than name, as for
// containerd's shim): what the service runs is then not compared with
// the destination.
func (p ProvisionerSpec) Helper() bool {
	return p.Service != "" && !strings.EqualFold(p.Service, p.Name)
}
