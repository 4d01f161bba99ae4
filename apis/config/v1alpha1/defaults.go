package v1alpha1

import (
	"net"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default values applied by SetDefaults_Node.
const (
	// DefaultSSHPort is the port used when hostname names none.
	DefaultSSHPort = 22
	// DefaultKnownHostsFile is where host keys are checked when neither
	// knownHostsFile nor the ssh config's UserKnownHostsFile names a file.
	// It is applied when connecting (pkg/remote), not by SetDefaults_Node.
	DefaultKnownHostsFile = "~/.ssh/known_hosts"
	// DefaultHostKeyPolicy is the host key policy when neither
	// hostKeyPolicy nor the ssh config's StrictHostKeyChecking gives one.
	// It is applied when connecting (pkg/remote), not by SetDefaults_Node.
	DefaultHostKeyPolicy = HostKeyPolicyAcceptNew
	// DefaultWinsDestination is where wins.exe goes when wins.destination
	// is empty.
	DefaultWinsDestination = `C:\etc\rancher\wins\wins.exe`

	// DefaultWinsRelease is the rancher/wins release a sourceURL of
	// release:wins takes when wins.version is not set: the last release
	// with the named-pipe bridge (WinsBridgeRemoved removed it).
	DefaultWinsRelease = "v0.15.0"
	// DefaultLibvirtURI is the libvirt connection URI when vm.libvirt.uri
	// is empty: the system instance of the local libvirtd.
	DefaultLibvirtURI = "qemu:///system"
	// DefaultVMAddressTimeout is how long swdt waits for a VM's address
	// when vm.addressTimeout is not set: long enough for Windows to boot.
	DefaultVMAddressTimeout = 3 * time.Minute
)

// SetDefaults_NodeList defaults every node of the list.
func SetDefaults_NodeList(l *NodeList) {
	for i := range l.Items {
		SetDefaults_Node(&l.Items[i])
	}
}

// SetDefaults_Node fills in every default of a node. The hostname is kept
// exactly as written (a Host alias from ~/.ssh/config must stay an alias);
// CredentialsSpec.HostPort supplies port 22 when it has none. An empty
// metadata.name defaults to the host part of the hostname, or to the VM's
// name when there is no hostname; the VM's name defaults to metadata.name.
// knownHostsFile and hostKeyPolicy stay empty when unset: ~/.ssh/config
// may fill them when connecting, and only a value written in the node file
// wins over it.
func SetDefaults_Node(n *Node) {
	c := &n.Spec.Credentials
	if n.Name == "" && c.Hostname != "" {
		n.Name, _ = c.HostPort()
	}
	if v := n.Spec.VM; v != nil {
		setDefaultsVM(v, &n.ObjectMeta)
	}
	if r := n.Spec.Kubernetes.Rollout; r != nil && r.Transport == "" {
		r.Transport = TransportKubernetes
	}
	if n.Spec.Setup.EnableRDP == nil {
		enable := true
		n.Spec.Setup.EnableRDP = &enable
	}
	if w := n.Spec.Wins; w != nil && w.Version == "" {
		if kind, ok := releaseKind(w.SourceURL); ok && kind == ReleaseWins {
			w.Version = DefaultWinsRelease
		}
	}
	if w := n.Spec.Wins; w != nil && w.Destination == "" {
		w.Destination = DefaultWinsDestination
	}
}

func setDefaultsVM(v *VMSpec, meta *metav1.ObjectMeta) {
	switch {
	case v.Name == "":
		v.Name = meta.Name
	case meta.Name == "":
		meta.Name = v.Name
	}
	switch v.Provider {
	case VMProviderLibvirt:
		if v.Libvirt == nil {
			v.Libvirt = &LibvirtSpec{}
		}
		if v.Libvirt.URI == "" {
			v.Libvirt.URI = DefaultLibvirtURI
		}
	case VMProviderHyperV:
		if v.HyperV == nil {
			v.HyperV = &HyperVSpec{}
		}
	}
	if v.AddressTimeout == nil {
		v.AddressTimeout = &metav1.Duration{Duration: DefaultVMAddressTimeout}
	}
}

// HostPort splits Hostname into host and port. The port is DefaultSSHPort
// when Hostname names none, and 0 when the port is not a number (validation
// reports that). It understands host:port, [IPv6]:port, a bare [IPv6], a
// bare IPv6 address and an ssh_config Host alias (returned unchanged).
func (c CredentialsSpec) HostPort() (host string, port int) {
	h := c.Hostname
	if host, p, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil {
			return host, 0
		}
		return host, n
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return h[1 : len(h)-1], DefaultSSHPort
	}
	return h, DefaultSSHPort
}
