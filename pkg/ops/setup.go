package ops

// Ops of `swdt setup` (DESIGN.md §6).
var (
	// SetupFacts gathers, in one round trip, everything setup plans from.
	SetupFacts = Op[SetupFactsRequest, SetupFactsResponse]{Name: "setup-facts"}
	// RDPSet turns Remote Desktop and its firewall rules on or off and
	// reads the result back.
	RDPSet = Op[RDPSetRequest, RDPState]{Name: "rdp-set"}
	// ChocoInstall installs Chocolatey with the community install script.
	ChocoInstall = Op[ChocoInstallRequest, ChocoState]{Name: "choco-install"}
	// ChocoPackages installs Chocolatey packages, one result per package.
	ChocoPackages = Op[ChocoPackagesRequest, ChocoPackagesResponse]{Name: "choco-packages"}
	// AuthorizedKeysAdd appends missing keys to administrators_authorized_keys
	// and restricts the file's ACL to Administrators and SYSTEM.
	AuthorizedKeysAdd = Op[AuthorizedKeysAddRequest, AuthorizedKeysState]{Name: "authorized-keys-add"}
)

// RDPFirewallRules are the Remote Desktop rules, by name: display group
// names are localized, rule names are not.
var RDPFirewallRules = []string{"RemoteDesktop-UserMode-In-TCP", "RemoteDesktop-UserMode-In-UDP"}

// AdministratorsAuthorizedKeys is where sshd reads keys for members of
// Administrators.
const AdministratorsAuthorizedKeys = `C:\ProgramData\ssh\administrators_authorized_keys`

// SetupFactsRequest names the firewall rules to read.
type SetupFactsRequest struct {
	FirewallRules []string `json:"firewallRules"`
}

// SetupFactsResponse is the node as setup sees it.
type SetupFactsResponse struct {
	Node           NodeFactsResponse   `json:"node"`
	RDP            RDPState            `json:"rdp"`
	Choco          ChocoState          `json:"choco"`
	AuthorizedKeys AuthorizedKeysState `json:"authorizedKeys"`
}

// FirewallRule is one rule's state.
type FirewallRule struct {
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	Enabled bool   `json:"enabled"`
}

// RDPState is Remote Desktop's state.
type RDPState struct {
	// Enabled is true when fDenyTSConnections is 0.
	Enabled bool `json:"enabled"`
	// NLA is true when Network Level Authentication is required.
	NLA bool `json:"nla"`
	// FirewallRules are the Remote Desktop rules.
	FirewallRules []FirewallRule `json:"firewallRules"`
}

// RDPSetRequest says whether RDP should be on.
type RDPSetRequest struct {
	Enable        bool     `json:"enable"`
	FirewallRules []string `json:"firewallRules"`
}

// ChocoPackage is one installed package.
type ChocoPackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ChocoState is Chocolatey's state.
type ChocoState struct {
	// Installed is true when choco.exe exists.
	Installed bool `json:"installed"`
	// Version is choco's version, e.g. 2.2.2.
	Version string `json:"version"`
	// Packages are the installed packages.
	Packages []ChocoPackage `json:"packages"`
}

// ChocoInstallRequest takes no parameters: the install script's address
// is fixed in the op.
type ChocoInstallRequest struct{}

// ChocoPackagesRequest lists package ids to install.
type ChocoPackagesRequest struct {
	Packages []string `json:"packages"`
}

// Package install results.
const (
	PackageInstalled = "installed"
	PackageNotFound  = "not-found"
	PackageFailed    = "failed"
)

// ChocoPackageResult is one package's outcome.
type ChocoPackageResult struct {
	Name string `json:"name"`
	// Result is installed, not-found or failed.
	Result string `json:"result"`
	// ExitCode is choco's exit code.
	ExitCode int `json:"exitCode"`
	// RebootRequired is true for exit codes 1641 and 3010.
	RebootRequired bool `json:"rebootRequired"`
	// Version installed, when known.
	Version string `json:"version,omitempty"`
	// Output is the tail of choco's output when the install failed.
	Output string `json:"output,omitempty"`
}

// ChocoPackagesResponse has one result per requested package, in order.
type ChocoPackagesResponse struct {
	Results []ChocoPackageResult `json:"results"`
}

// AuthorizedKeysAddRequest lists public keys, one authorized_keys line each.
type AuthorizedKeysAddRequest struct {
	Keys []string `json:"keys"`
}

// AuthorizedKeysState describes administrators_authorized_keys.
type AuthorizedKeysState struct {
	// Exists is true when the file exists.
	Exists bool `json:"exists"`
	// Keys are the file's non-empty, non-comment lines.
	Keys []string `json:"keys"`
	// ACLOK is true when inheritance is off and only Administrators and
	// SYSTEM have access.
	ACLOK bool `json:"aclOk"`
	// Added counts keys appended by this op.
	Added int `json:"added"`
}
