package ops

// Ops of `swdt setup` (DESIGN.md §6).
var (
	// SetupFacts gathers, in one round trip, everything setup plans from.
	SetupFacts = register[SetupFactsRequest, SetupFactsResponse]("setup-facts")
	// RDPSet turns Remote Desktop and its firewall rules on or off and
	// reads the result back.
	RDPSet = register[RDPSetRequest, RDPState]("rdp-set")
	// ChocoInstall installs Chocolatey with the community install script.
	ChocoInstall = register[ChocoInstallRequest, ChocoState]("choco-install")
	// ChocoPackages installs Chocolatey packages, one result per package.
	ChocoPackages = register[ChocoPackagesRequest, ChocoPackagesResponse]("choco-packages")
	// AuthorizedKeysAdd appends missing keys to administrators_authorized_keys,
	// gives the file to Administrators and restricts its ACL to
	// Administrators and SYSTEM.
	AuthorizedKeysAdd = register[AuthorizedKeysAddRequest, AuthorizedKeysState]("authorized-keys-add")
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
	// LanguageMode is PowerShell's language mode on the node (FullLanguage,
	// or ConstrainedLanguage under WDAC or AppLocker, where Chocolatey's
	// install script cannot run).
	LanguageMode   string              `json:"languageMode"`
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
	// Enabled is true when Remote Desktop accepts connections: the Group
	// Policy value of fDenyTSConnections is 0, or there is none and the
	// local one is 0.
	Enabled bool `json:"enabled"`
	// NLA is true when Network Level Authentication is required (Group
	// Policy's UserAuthentication, else the RDP-Tcp listener's).
	NLA bool `json:"nla"`
	// BlockedByPolicy is true when Group Policy denies Remote Desktop
	// connections (RDPPolicyKey's fDenyTSConnections is 1), whatever the
	// local setting says: turning RDP on here cannot take effect.
	BlockedByPolicy bool `json:"blockedByPolicy,omitempty"`
	// Message explains a Group Policy override (either way) and what to
	// do about it; empty when no policy decides.
	Message string `json:"message,omitempty"`
	// FirewallRules are the Remote Desktop rules.
	FirewallRules []FirewallRule `json:"firewallRules"`
}

// RDPPolicyKey is where Group Policy's Remote Desktop Services settings
// live (below HKLM). Its values override the local ones.
const RDPPolicyKey = `SOFTWARE\Policies\Microsoft\Windows NT\Terminal Services`

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
	// ExitCode is choco's exit code; -1 when choco was stopped at its
	// time limit.
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
	// Encoding is how the file is encoded (one of the Encoding*
	// constants; empty when it does not exist). sshd reads UTF-8 only and
	// silently ignores a UTF-16 file; authorized-keys-add rewrites any
	// other encoding as UTF-8 without a byte order mark.
	Encoding string `json:"encoding,omitempty"`
	// Keys are the file's non-empty, non-comment lines, decoded.
	Keys []string `json:"keys"`
	// ACLOK is true when inheritance is off and only Administrators and
	// SYSTEM have access.
	ACLOK bool `json:"aclOk"`
	// OwnerOK is true when Administrators or SYSTEM own the file. sshd
	// refuses a file another account owns (its owner may rewrite the
	// ACL), except for that account itself.
	OwnerOK bool `json:"ownerOk"`
	// Owner is the file's owner, as a string SID (empty when the file
	// does not exist).
	Owner string `json:"owner,omitempty"`
	// SetAside, when set, is where authorized-keys-add moved a file that
	// an account other than Administrators and SYSTEM owned or could
	// write, unread: its keys are not taken over (sshd was not trusting
	// them), and the new file holds only the node file's keys.
	SetAside string `json:"setAside,omitempty"`
	// Added counts keys appended by this op.
	Added int `json:"added"`
}

// Encodings of administrators_authorized_keys.
const (
	// EncodingUTF8 is UTF-8 without a byte order mark: what sshd reads.
	EncodingUTF8 = "utf-8"
	// EncodingUTF8BOM is UTF-8 behind a byte order mark (Windows
	// PowerShell's Set-Content -Encoding UTF8 writes one).
	EncodingUTF8BOM = "utf-8-bom"
	// EncodingUTF16LE is UTF-16 little-endian, what Windows PowerShell's
	// `>` and Out-File write: sshd ignores the whole file.
	EncodingUTF16LE = "utf-16le"
	// EncodingUTF16BE is UTF-16 big-endian: sshd ignores it too.
	EncodingUTF16BE = "utf-16be"
)

// Error kinds (EnvelopeError.Kind) of the setup ops that swdt setup tells
// apart from a generic failure.
const (
	// KindDownloadFailed: the node could not download Chocolatey's
	// install script (no internet access or proxy).
	KindDownloadFailed Kind = "download-failed"
	// KindInstallFailed: Chocolatey's install script ran but choco.exe
	// does not exist or does not run.
	KindInstallFailed Kind = "install-failed"
	// KindRebootRequired: Chocolatey's installer installed .NET Framework
	// 4.8 (Chocolatey 2 needs it; Server 2019 ships 4.7.2) and stopped
	// because the node must reboot first. Reboot the node and run setup
	// again: the second run completes.
	KindRebootRequired Kind = "reboot-required"
	// KindConstrainedLanguage: PowerShell on the node runs in Constrained
	// Language mode (enforced by WDAC or AppLocker), in which a step that
	// needs FullLanguage (Chocolatey's install script) cannot run.
	KindConstrainedLanguage Kind = "constrained-language"
	// KindBlockedByPolicy: a Group Policy setting overrides the change
	// asked for (Remote Desktop), so it cannot take effect.
	KindBlockedByPolicy Kind = "blocked-by-policy"
)
