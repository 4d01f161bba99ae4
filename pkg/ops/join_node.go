package ops

import "time"

// The ops that set a joined node up as upstream's scripts do
// (sig-windows-tools' Install-Containerd.ps1 and PrepareNode.ps1,
// containerd --register-service): the Containers feature, the inbound
// firewall rules of the kubelet and kube-proxy, and the services'
// restart actions and error control. Their names and settings are
// fixed: a request only says which apply.
var (
	// JoinFeature reads the Windows Containers feature and, with Install,
	// installs it; it does not reboot.
	JoinFeature = register[JoinFeatureRequest, JoinFeatureResponse]("join-feature")
	// JoinSetup creates the join's firewall rules and gives the join's
	// services their restart actions and ErrorControl Normal.
	JoinSetup = register[JoinSetupRequest, JoinSetupResponse]("join-setup")
)

// JoinContainersFeature is the Windows feature containers need: without
// it the Host Compute Service (vmcompute) and the Host Network Service
// (hns) are missing, and no pod sandbox can start.
const JoinContainersFeature = "Containers"

// The feature states of JoinFeatureResponse.
const (
	JoinFeatureInstalled = "Installed"
	// JoinFeatureInstallPending is installed, waiting for a reboot.
	JoinFeatureInstallPending = "InstallPending"
)

// JoinFirewallRule is one inbound rule a join creates, addressed by its
// fixed name.
type JoinFirewallRule struct {
	Name        string
	DisplayName string
	Port        int
}

// The join's inbound TCP rules: the kubelet's API (logs, exec,
// port-forward, metrics), as PrepareNode.ps1 opens it, and kube-proxy's
// health check, when a kube-proxy service is registered.
var (
	JoinRuleKubelet   = JoinFirewallRule{Name: "swdt-kubelet-In-TCP", DisplayName: "swdt: kubelet API (TCP 10250)", Port: 10250}
	JoinRuleKubeProxy = JoinFirewallRule{Name: "swdt-kube-proxy-health-In-TCP", DisplayName: "swdt: kube-proxy health check (TCP 10256)", Port: 10256}
)

// JoinRestartDelays are the delays of the restart actions a join gives
// its services (the first, the second, then every further failure), and
// JoinRestartReset is how long without failures resets their count, as
// containerd's --register-service sets them up for itself.
var (
	JoinRestartDelays = []time.Duration{10 * time.Second, 15 * time.Second, 15 * time.Second}
	JoinRestartReset  = 24 * time.Hour
)

// JoinFeatureRequest asks for the Containers feature's state.
type JoinFeatureRequest struct {
	// Install installs the feature when it is not installed.
	Install bool `json:"install,omitempty"`
}

// JoinFeatureResponse is the Containers feature's state.
type JoinFeatureResponse struct {
	// State is Installed, InstallPending (installed, waiting for a
	// reboot) or Available; "" when NotSupported.
	State string `json:"state,omitempty"`
	// Installed is true when this request installed it.
	Installed bool `json:"installed,omitempty"`
	// NotSupported says why the feature cannot be read on this system
	// (no Windows PowerShell, or one that answers nothing, as Wine's).
	NotSupported string `json:"notSupported,omitempty"`
}

// JoinSetupRequest names what a join registered.
type JoinSetupRequest struct {
	// Services are the join's services (containerd, the kubelet,
	// kube-proxy); each that exists gets the restart actions and
	// ErrorControl Normal.
	Services []string `json:"services"`
	// KubeProxy asks for JoinRuleKubeProxy as well as JoinRuleKubelet.
	KubeProxy bool `json:"kubeProxy,omitempty"`
}

// JoinSetupResponse says what changed.
type JoinSetupResponse struct {
	// Rules lists the firewall rules created or enabled.
	Rules []string `json:"rules,omitempty"`
	// Services lists the services whose restart actions or error control
	// changed.
	Services []string `json:"services,omitempty"`
	// NotSupported says what this system cannot do (firewall rules
	// without Windows PowerShell, failure actions where
	// QueryServiceConfig2 is missing), each with why.
	NotSupported []string `json:"notSupported,omitempty"`
}
