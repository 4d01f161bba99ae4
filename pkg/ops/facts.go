package ops

// NodeFacts reports who and what the node is.
var NodeFacts = register[NodeFactsRequest, NodeFactsResponse]("node-facts")

// NodeFactsRequest takes no parameters.
type NodeFactsRequest struct{}

// NodeFactsResponse describes the node's OS and the account swdt runs as.
type NodeFactsResponse struct {
	// Hostname is the computer name.
	Hostname string `json:"hostname"`
	// ProductName is e.g. "Windows Server 2022 Datacenter".
	ProductName string `json:"productName"`
	// DisplayVersion is e.g. "21H2" (empty on older builds).
	DisplayVersion string `json:"displayVersion"`
	// CurrentBuild is the build number, e.g. "20348".
	CurrentBuild string `json:"currentBuild"`
	// UBR is the update build revision.
	UBR int `json:"ubr"`
	// Username is DOMAIN\user of the SSH session.
	Username string `json:"username"`
	// IsAdmin is true when the session holds Administrator rights.
	IsAdmin bool `json:"isAdmin"`
	// Arch is the machine's processor architecture as a GOARCH name
	// ("amd64", "arm64"): the programs it runs must be built for it.
	Arch string `json:"arch"`
	// PSVersion is Windows PowerShell's installed version, e.g.
	// "5.1.20348.1" (the registry's PowerShellEngine key), which runs
	// Chocolatey's install script; empty when it is not installed. The
	// op itself runs in swdt-agent, not in PowerShell.
	PSVersion string `json:"psVersion"`
}
